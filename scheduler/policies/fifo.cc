// FIFO: every head is issued the moment it arrives, in its original form, whatever its client's
// priority; the device alone orders the work. The baseline the priority policy is measured
// against.
#include "scheduler/policy.h"

namespace tally::scheduler {
namespace {

class FifoPolicy final : public Policy {
 public:
  void ClientJoined(Time, ClientId, ClientPriority, Decisions&) override {}
  void ClientLeft(Time, ClientId, Decisions&) override {}
  void PriorityChanged(Time, ClientId, ClientPriority, Decisions&) override {}
  void HeadArrived(Time, ClientId client, const Head&, Decisions& out) override {
    out.Issue(client);
  }
  void RunEnded(Time, ClientId, const RunEnd&, Decisions&) override {}
  void Woken(Time, Decisions&) override {}
  bool UsesTransformedForms() const override { return false; }
};

}  // namespace

std::unique_ptr<Policy> MakeFifoPolicy() { return std::make_unique<FifoPolicy>(); }

}  // namespace tally::scheduler
