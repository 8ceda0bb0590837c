// Drives a policy with scripted events on a fake clock and returns each event's actions, so
// that tests assert exact action sequences.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <vector>

#include "scheduler/policy.h"

namespace tally::scheduler::testing {

inline Time Us(int64_t micros) { return std::chrono::microseconds(micros); }
inline constexpr ClientPriority kHigh = ClientPriority::High();
inline constexpr ClientPriority kBestEffort = ClientPriority::BestEffort();
inline ClientId Client(uint64_t id) { return ClientId(id); }

// A kernel of `blocks` blocks with both transformed forms unless told otherwise.
inline KernelInfo Kernel(uint64_t id, uint32_t blocks = 64, bool transformable = true) {
  KernelInfo info;
  info.shape.kernel = KernelId(id);
  info.shape.grid = {blocks, 1, 1};
  info.shape.block = {128, 1, 1};
  info.sliceable = transformable;
  info.preemptible = transformable;
  info.resident_per_sm = 4;
  info.sm_count = 8;
  return info;
}

// Answers a fixed choice per kernel id, else `fallback` (PTB at full occupancy).
class FakeAdvisor final : public FormAdvisor {
 public:
  FormChoice Choose(const KernelInfo& kernel) override {
    ++asked;
    auto it = choices.find(kernel.shape.kernel);
    return it != choices.end() ? it->second : fallback;
  }
  std::map<KernelId, FormChoice> choices;
  FormChoice fallback{LaunchForm::Preemptible(), true};
  int asked = 0;
};

class PolicyHarness {
 public:
  explicit PolicyHarness(std::unique_ptr<Policy> policy) : policy_(std::move(policy)) {}

  std::vector<Action> Join(int64_t us, uint64_t client, ClientPriority priority) {
    return Deliver([&] { policy_->ClientJoined(Us(us), Client(client), priority, out_); });
  }
  std::vector<Action> Leave(int64_t us, uint64_t client) {
    return Deliver([&] { policy_->ClientLeft(Us(us), Client(client), out_); });
  }
  std::vector<Action> Change(int64_t us, uint64_t client, ClientPriority priority) {
    return Deliver([&] { policy_->PriorityChanged(Us(us), Client(client), priority, out_); });
  }
  std::vector<Action> Budget(int64_t us, uint64_t client, const SlowdownBudget& budget) {
    return Deliver([&] { policy_->BudgetChanged(Us(us), Client(client), budget, out_); });
  }
  std::vector<Action> Arrive(int64_t us, uint64_t client, const Head& head) {
    return Deliver([&] { policy_->HeadArrived(Us(us), Client(client), head, out_); });
  }
  std::vector<Action> Update(int64_t us, uint64_t client, const Head& head) {
    return Deliver([&] { policy_->HeadUpdated(Us(us), Client(client), head, out_); });
  }
  std::vector<Action> End(int64_t us, uint64_t client, const RunEnd& end) {
    return Deliver([&] { policy_->RunEnded(Us(us), Client(client), end, out_); });
  }
  std::vector<Action> Wake(int64_t us) {
    return Deliver([&] { policy_->Woken(Us(us), out_); });
  }
  // The wake-up the last event asked for.
  std::optional<Time> wake() const { return wake_; }
  Policy& policy() { return *policy_; }

 private:
  template <typename F>
  std::vector<Action> Deliver(F&& event) {
    out_.Clear();
    event();
    wake_ = out_.wake();
    return {out_.actions().begin(), out_.actions().end()};
  }

  std::unique_ptr<Policy> policy_;
  Decisions out_;
  std::optional<Time> wake_;
};

// Expected actions, spelled briefly.
inline Action IssueOf(uint64_t client, LaunchForm form = {}, bool notify = false,
                      bool foreground = false, bool risky = false) {
  return {Action::Kind::kIssue, Client(client), form, notify, foreground, risky};
}
inline Action Foreground(uint64_t client, bool notify = false) {
  return IssueOf(client, LaunchForm::Original(), notify, /*foreground=*/true);
}
inline Action PreemptOf(uint64_t client) {
  return {Action::Kind::kPreempt, Client(client), {}};
}
inline RunEnd Finished(FormKind form) { return {form, true, 64, 64}; }
inline RunEnd Stopped(uint64_t done) { return {FormKind::kPreemptible, false, done, 64}; }

}  // namespace tally::scheduler::testing

namespace tally::scheduler {
// For Catch2's messages.
inline std::ostream& operator<<(std::ostream& os, const Action& a) {
  return os << (a.kind == Action::Kind::kIssue ? "Issue(" : "Preempt(") << a.client.value()
            << ", form " << static_cast<int>(a.form.kind) << "/" << a.form.slices << "/"
            << a.form.workers << (a.notify ? ", notify" : "") << (a.foreground ? ", fg" : "")
            << (a.risky ? ", risky" : "") << ")";
}
}  // namespace tally::scheduler
