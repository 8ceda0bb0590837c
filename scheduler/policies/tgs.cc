// TGS after Wu et al., "Transparent GPU Sharing in Container Clouds for Deep Learning
// Workloads" (NSDI'23), and its public code (hijack/src/*_priority_hijack_call.c): adaptive rate
// control. The production (most important) clients launch at once on high-priority streams;
// their launch rate (blocks per sample period) is measured. The opportunistic clients may
// launch while their blocks in the current budget period are within a budget, which follows
// TGS's control at each sample: slow start (x1.5) while the production's rate stays within 3%
// of its unimpeded rate, then congestion avoidance (additive increase, 8% decrease), back to
// slow start at a 9% drop; no limit once the production has been idle in most recent samples.
//
// Simplified: TGS's separate production/opportunistic processes and socket become one policy;
// its profiling phase (which waits for the production's rate to settle before the budget is
// set) becomes the max-rate tracking below, applied at every sample; its unified-memory
// oversubscription is out of scope (the simulator has no memory); only kernels are counted and
// limited; the sample period is configurable (TgsOptions), shorter by default than TGS's
// seconds-long reports so that runs of tens of seconds adapt.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>

#include "scheduler/policy.h"

namespace tally::scheduler {
namespace {

// TGS's constants (low_priority_hijack_call.c), in blocks per budget period.
constexpr double kInitialLimit = 20000;           // LIMIT_INITIALIZER
constexpr double kRateMin = 1000;                 // RATE_MIN
constexpr double kThreshold = 0.03;               // a drop of the production's rate that counts
constexpr double kUnlimited = 65536.0 * 65536.0;  // what TGS sets when the production idles
constexpr size_t kWindow = 5;                     // samples of the production's rate kept
constexpr int kWarmupSamples = 15;                // samples before the idle rule applies

class TgsPolicy final : public Policy {
 public:
  explicit TgsPolicy(const TgsOptions& options) : options_(options) {}

  void ClientJoined(Time now, ClientId client, ClientPriority priority, Decisions& out) override {
    clients_[client].level = priority.level();
    Decide(now, out);
  }
  void ClientLeft(Time now, ClientId client, Decisions& out) override {
    clients_.erase(client);
    Decide(now, out);
  }
  void PriorityChanged(Time now, ClientId client, ClientPriority priority,
                       Decisions& out) override {
    auto it = clients_.find(client);
    if (it != clients_.end()) it->second.level = priority.level();
    Decide(now, out);
  }
  void HeadArrived(Time now, ClientId client, const Head& head, Decisions& out) override {
    auto it = clients_.find(client);
    if (it != clients_.end()) it->second.head = head;
    Decide(now, out);
  }
  void RunEnded(Time now, ClientId, const RunEnd&, Decisions& out) override { Decide(now, out); }
  void Woken(Time now, Decisions& out) override { Decide(now, out); }
  bool UsesTransformedForms() const override { return false; }

 private:
  struct Client {
    int32_t level = 0;
    std::optional<Head> head;
  };
  enum class State { kSlowStart, kCongestionAvoidance };

  static uint64_t Blocks(const Head& head) {
    return head.kind == Head::Kind::kKernel ? head.kernel.shape.grid.Count() : 0;
  }

  // Closes the sample periods that ended by `now` (one without events had no launch), and
  // starts a new budget period when the last one is over.
  void Tick(Time now) {
    if (!sample_start_) sample_start_ = budget_start_ = now;
    while (now >= *sample_start_ + options_.sample_period) {
      EndSample();
      *sample_start_ += options_.sample_period;
    }
    if (now >= budget_start_ + options_.budget_period) {
      background_blocks_ = 0;
      budget_start_ += (now - budget_start_) / options_.budget_period * options_.budget_period;
    }
  }

  void EndSample() {
    const double sample = static_cast<double>(foreground_blocks_);
    foreground_blocks_ = 0;
    // TGS's shift_window: the highest mean of two consecutive samples in the window.
    std::copy_backward(window_.begin(), window_.end() - 1, window_.end());
    window_[0] = sample;
    double window_rate = 0;
    for (size_t i = 1; i < kWindow; ++i) {
      window_rate = std::max(window_rate, (window_[i] + window_[i - 1]) / 2);
    }
    ++samples_;
    if (max_rate_ <= 0) {  // the first sample of the production's rate
      max_rate_ = window_rate;
      limit_ = kInitialLimit;
      state_ = State::kSlowStart;
      return;
    }
    // The production's unimpeded rate: kept within 10%, re-learnt past a 20% change.
    const double change = (window_rate - max_rate_) / max_rate_;
    if (std::abs(change) <= 0.1) {
      max_rate_ = std::max(max_rate_, window_rate);
    } else if (std::abs(change) > 0.2) {
      max_rate_ = change > 0 ? std::max(max_rate_, window_rate * 0.975)
                             : std::min(max_rate_, window_rate * 1.025);
      return;
    }
    const auto idle = std::count(window_.begin(), window_.end(), 0.0);
    if (idle > static_cast<long>(kWindow / 5 * 2) && samples_ >= kWarmupSamples) {
      // The production is mostly idle: no limit (a large one, which TGS then has to bring
      // down period by period when the production is back).
      limit_ = kUnlimited;
      state_ = State::kSlowStart;
    } else if (idle == 2 && samples_ > kWarmupSamples) {
      limit_ = kInitialLimit;
      state_ = State::kSlowStart;
    } else {
      UpdateLimit(sample);
    }
  }

  // TGS's update_rate_limit.
  void UpdateLimit(double rate) {
    const double delta = std::abs(rate - max_rate_) / max_rate_;
    switch (state_) {
      case State::kSlowStart:
        if (delta <= kThreshold) {
          limit_ = limit_ * 1.5 + 1;
        } else {
          limit_ /= 1.5;
          increasing_ = false;
          state_ = State::kCongestionAvoidance;
        }
        break;
      case State::kCongestionAvoidance:
        if ((!increasing_ && delta <= kThreshold) || (increasing_ && delta < kThreshold)) {
          limit_ += std::max(max_rate_ * 0.00025, kRateMin);
          increasing_ = true;
        } else {
          limit_ -= std::max(limit_ * 0.08, kRateMin);
          increasing_ = false;
        }
        if (delta >= 3 * kThreshold) {
          state_ = State::kSlowStart;
          limit_ /= 10;
        }
        break;
    }
    // A production rate far below its maximum for long: the maximum was too high.
    if (delta >= 0.12) {
      if (++far_below_ >= 20) {
        max_rate_ *= 0.8;
        far_below_ = 0;
        state_ = State::kSlowStart;
        limit_ /= 2;
      }
    } else {
      far_below_ = 0;
    }
    limit_ = std::max(limit_, 0.0);
  }

  void Decide(Time now, Decisions& out) {
    if (clients_.empty()) return;
    Tick(now);
    int32_t top = clients_.begin()->second.level;
    for (const auto& [id, client] : clients_) top = std::max(top, client.level);
    bool held = false;
    for (auto& [id, client] : clients_) {
      const bool production = client.level == top;
      if (!client.head) continue;
      const uint64_t blocks = Blocks(*client.head);
      if (production) {
        foreground_blocks_ += blocks;
      } else {
        // TGS's launch test: a launch waits while this period's launches exceed the budget.
        if (blocks > 0 && static_cast<double>(background_blocks_) > limit_) {
          held = true;
          continue;
        }
        background_blocks_ += blocks;
      }
      out.Issue(id, LaunchForm::Original(), /*notify=*/false, /*foreground=*/production);
      client.head.reset();
    }
    // Samples are closed at the next event, whenever it comes; a held launch needs the next
    // budget period.
    if (held) out.WakeAt(budget_start_ + options_.budget_period);
  }

  const TgsOptions options_;
  std::map<ClientId, Client> clients_;
  std::optional<Time> sample_start_;
  Time budget_start_{0};
  uint64_t foreground_blocks_ = 0;
  uint64_t background_blocks_ = 0;
  std::array<double, kWindow> window_{};  // the latest samples, newest first
  int samples_ = 0;
  double max_rate_ = 0;
  double limit_ = 0;  // no opportunistic launch before the production's rate is known
  State state_ = State::kSlowStart;
  bool increasing_ = false;  // TGS's `sign`: the last change of the limit was an increase
  int far_below_ = 0;
};

}  // namespace

std::unique_ptr<Policy> MakeTgsPolicy(const TgsOptions& options) {
  return std::make_unique<TgsPolicy>(options);
}

}  // namespace tally::scheduler
