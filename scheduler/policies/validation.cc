// Validation (tally-server --validate): FIFO order, and one fixed form for every kernel that has
// it, so that operators can check their programs under Tally's transformations. With preempt,
// each PTB run is preempted after a random delay (half of them at once, so that some runs stop
// before any task ran) and resumed, up to kMaxValidationPreemptions times per launch; after
// that the kernel runs to its end, so every launch finishes whatever the timing.
#include <random>

#include <map>
#include <optional>
#include "scheduler/policy.h"

namespace tally::scheduler {
namespace {

class ValidationPolicy final : public Policy {
 public:
  ValidationPolicy(LaunchForm form, bool preempt) : form_(form), preempt_(preempt) {}

  void ClientJoined(Time, ClientId, ClientPriority, Decisions&) override {}
  void ClientLeft(Time, ClientId client, Decisions&) override { runs_.erase(client); }
  void PriorityChanged(Time, ClientId, ClientPriority, Decisions&) override {}

  void HeadArrived(Time now, ClientId client, const Head& head, Decisions& out) override {
    const bool available =
        head.kind == Head::Kind::kKernel &&
        ((form_.kind == FormKind::kSliced && head.kernel.sliceable) ||
         (form_.kind == FormKind::kPreemptible && head.kernel.preemptible));
    if (!available) {
      out.Issue(client);
      return;
    }
    runs_[client] = {};
    IssueRun(now, client, out);
  }

  void RunEnded(Time now, ClientId client, const RunEnd& end, Decisions& out) override {
    if (end.form == FormKind::kOriginal) return;
    if (end.finished) {
      runs_.erase(client);
      return;
    }
    IssueRun(now, client, out);
  }

  void Woken(Time now, Decisions& out) override {
    for (auto& [client, run] : runs_) {
      if (run.preempt_at && *run.preempt_at <= now) {
        run.preempt_at.reset();
        ++run.preemptions;
        out.Preempt(client);
      } else if (run.preempt_at) {
        out.WakeAt(*run.preempt_at);
      }
    }
  }

  bool UsesTransformedForms() const override { return form_.kind != FormKind::kOriginal; }
  // Every kernel that can be transformed is to run in the form under validation.
  bool WaitsForForms(ClientId) const override { return UsesTransformedForms(); }

 private:
  struct TransformedRun {
    int preemptions = 0;
    std::optional<Time> preempt_at;  // of the run in flight
  };

  void IssueRun(Time now, ClientId client, Decisions& out) {
    out.Issue(client, form_);
    TransformedRun& run = runs_[client];
    if (!preempt_ || form_.kind != FormKind::kPreemptible ||
        run.preemptions >= kMaxValidationPreemptions) {
      return;
    }
    const bool at_once = std::bernoulli_distribution(0.5)(rng_);
    const Duration delay =
        at_once ? Duration{0} : Duration{std::uniform_int_distribution<int64_t>(0, 1'000'000)(rng_)};
    if (delay.count() == 0) {
      ++run.preemptions;
      out.Preempt(client);
      return;
    }
    run.preempt_at = now + delay;
    out.WakeAt(*run.preempt_at);
  }

  const LaunchForm form_;
  const bool preempt_;
  std::mt19937_64 rng_{20260522};
  std::map<ClientId, TransformedRun> runs_;    // clients with a transformed kernel under way
};

}  // namespace

std::unique_ptr<Policy> MakeValidationPolicy(LaunchForm form, bool preempt) {
  return std::make_unique<ValidationPolicy>(form, preempt);
}

}  // namespace tally::scheduler
