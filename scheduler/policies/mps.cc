// MPS-like sharing: every head is issued the moment it arrives, so kernels of all clients run
// side by side and the device's block scheduler alone arbitrates. With priority streams, the
// most important connected clients' kernels go on high-priority streams, as a user of NVIDIA MPS
// would do with cudaStreamCreateWithPriority; nothing is held and nothing is preempted.
#include <algorithm>
#include <map>

#include "scheduler/policy.h"

namespace tally::scheduler {
namespace {

class MpsPolicy final : public Policy {
 public:
  explicit MpsPolicy(bool priority_streams) : priority_streams_(priority_streams) {}

  void ClientJoined(Time, ClientId client, ClientPriority priority, Decisions&) override {
    levels_[client] = priority.level();
  }
  void ClientLeft(Time, ClientId client, Decisions&) override { levels_.erase(client); }
  void PriorityChanged(Time, ClientId client, ClientPriority priority, Decisions&) override {
    levels_[client] = priority.level();
  }
  void HeadArrived(Time, ClientId client, const Head&, Decisions& out) override {
    out.Issue(client, LaunchForm::Original(), /*notify=*/false,
              /*foreground=*/priority_streams_ && IsTop(client));
  }
  void RunEnded(Time, ClientId, const RunEnd&, Decisions&) override {}
  void Woken(Time, Decisions&) override {}
  bool UsesTransformedForms() const override { return false; }

 private:
  bool IsTop(ClientId client) const {
    auto it = levels_.find(client);
    if (it == levels_.end()) return false;
    return std::none_of(levels_.begin(), levels_.end(),
                        [&](const auto& entry) { return entry.second > it->second; });
  }

  const bool priority_streams_;
  std::map<ClientId, int32_t> levels_;
};

}  // namespace

std::unique_ptr<Policy> MakeMpsPolicy(bool priority_streams) {
  return std::make_unique<MpsPolicy>(priority_streams);
}

}  // namespace tally::scheduler
