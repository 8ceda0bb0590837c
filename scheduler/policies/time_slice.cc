// Time slicing: one client's work on the device at a time, round robin over the clients with
// work, each for a slice (as the GPU's default sharing of contexts between processes). The
// client holding the device issues its heads in original form, at most max_in_flight kernels
// at once; when its slice is over and another client waits, it issues nothing more and the
// switch happens when its issued kernels have ended (notify), since a baseline cannot stop a
// running kernel. A client that runs out of work gives the device up before its slice ends.
#include <map>
#include <optional>

#include "scheduler/policy.h"

namespace tally::scheduler {
namespace {

class TimeSlicePolicy final : public Policy {
 public:
  explicit TimeSlicePolicy(const TimeSliceOptions& options) : options_(options) {}

  void ClientJoined(Time now, ClientId client, ClientPriority, Decisions& out) override {
    clients_[client];
    Decide(now, out);
  }
  void ClientLeft(Time now, ClientId client, Decisions& out) override {
    clients_.erase(client);
    Decide(now, out);
  }
  void PriorityChanged(Time, ClientId, ClientPriority, Decisions&) override {}
  void HeadArrived(Time now, ClientId client, const Head& head, Decisions& out) override {
    auto it = clients_.find(client);
    if (it != clients_.end()) it->second.head = head;
    Decide(now, out);
  }
  void RunEnded(Time now, ClientId client, const RunEnd&, Decisions& out) override {
    auto it = clients_.find(client);
    if (it != clients_.end() && it->second.running > 0) --it->second.running;
    Decide(now, out);
  }
  void Woken(Time now, Decisions& out) override { Decide(now, out); }
  bool UsesTransformedForms() const override { return false; }

 private:
  struct Client {
    std::optional<Head> head;  // announced, not yet issued
    uint32_t running = 0;      // kernels issued with notify, not ended
  };

  bool OthersWait(ClientId owner) const {
    for (const auto& [id, client] : clients_) {
      if (id != owner && client.head) return true;
    }
    return false;
  }

  // The first client with a head after `last` in id order, wrapping around.
  std::optional<ClientId> NextOwner() const {
    std::optional<ClientId> first;
    for (const auto& [id, client] : clients_) {
      if (!client.head) continue;
      if (last_owner_ && *last_owner_ < id) return id;
      if (!first) first = id;
    }
    return first;
  }

  void Decide(Time now, Decisions& out) {
    if (owner_) {
      auto it = clients_.find(*owner_);
      const bool gone = it == clients_.end();
      const bool idle = !gone && !it->second.head && it->second.running == 0;
      const bool switch_due =
          !gone && now >= slice_end_ && OthersWait(*owner_) && it->second.running == 0;
      if (gone || idle || switch_due) owner_.reset();
    }
    if (!owner_) {
      owner_ = NextOwner();
      if (!owner_) return;
      last_owner_ = owner_;
      slice_end_ = now + options_.slice;
    }
    Client& client = clients_.at(*owner_);
    if (now >= slice_end_ && OthersWait(*owner_)) return;  // waits for its kernels to end
    if (client.head &&
        (client.head->kind == Head::Kind::kOther || client.running < options_.max_in_flight)) {
      const bool kernel = client.head->kind == Head::Kind::kKernel;
      out.Issue(*owner_, LaunchForm::Original(), /*notify=*/kernel);
      if (kernel) ++client.running;
      client.head.reset();  // the driver announces the next head after this decision
    }
    if (OthersWait(*owner_)) out.WakeAt(slice_end_);
  }

  const TimeSliceOptions options_;
  std::map<ClientId, Client> clients_;  // ordered: the round robin is by client id
  std::optional<ClientId> owner_;       // holds the device
  std::optional<ClientId> last_owner_;
  Time slice_end_{0};
};

}  // namespace

std::unique_ptr<Policy> MakeTimeSlicePolicy(const TimeSliceOptions& options) {
  return std::make_unique<TimeSlicePolicy>(options);
}

}  // namespace tally::scheduler
