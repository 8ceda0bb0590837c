// The discrete-event model of the GPU: SMs with their resident-block limits, in-order streams
// (one per client), and the block scheduler as the hardware behaves: a launch's waiting blocks
// go to free slots, blocks of higher-priority streams first, then in launch order; a running
// block always finishes. A PTB launch's workers take tasks from a shared counter back to back
// and stop at a task boundary once its preemption flag is raised.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "benchmarks/sim/event_queue.h"
#include "benchmarks/sim/trace.h"

namespace tally::sim {

struct LaunchSpec {
  uint64_t stream = 0;  // launches of one stream run one after the other, in launch order
  bool high_priority = false;
  BlockResources resources;
  // Blocks of this launch (an original kernel or a slice), or, for a PTB launch, its tasks.
  uint64_t units = 0;
  bool persistent = false;  // PTB: `workers` workers run the `units` tasks
  uint64_t workers = 0;
  Duration unit_time{0};  // one block, or one task on a worker, alone on the device
  // A block (or a PTB round) takes unit_time x (1 + interference x the share of the device's
  // warp slots other launches hold when it starts).
  double interference = 0;
};

// The end of a launch on the device.
struct LaunchEnd {
  uint64_t launch = 0;
  Time time{0};
  uint64_t units_done = 0;  // blocks, or tasks completed by this launch
  bool stopped = false;     // a PTB launch that left tasks undone after its flag was raised
};

class Gpu {
 public:
  using EndCallback = std::function<void(const LaunchEnd&)>;
  Gpu(const DeviceSpec& device, EventQueue& events, EndCallback on_end);

  // Queues a launch on its stream now; its blocks can start launch_latency later, once the
  // stream's earlier launches have ended. Returns the launch's id.
  uint64_t Launch(const LaunchSpec& spec);
  // Raises a PTB launch's preemption flag, visible to its workers preempt_latency from now.
  // False (and nothing happens) when the launch is not a running or waiting PTB launch, or was
  // preempted already.
  bool Preempt(uint64_t launch);

  const DeviceSpec& device() const { return device_; }

 private:
  struct Sm {
    uint32_t blocks = 0, warps = 0, registers = 0, shared = 0;
  };
  struct LaunchState {
    LaunchSpec spec;
    Footprint footprint;
    uint64_t seq = 0;
    Time ready{0};
    bool dispatchable = false;    // at its stream's front and past its launch latency
    uint64_t unplaced = 0;        // blocks or workers not yet on an SM
    uint64_t on_device = 0;       // blocks or workers on SMs
    uint64_t claimed = 0;         // PTB: tasks taken from the counter
    uint64_t done = 0;            // blocks or tasks completed
    bool flag_requested = false;  // PTB: Preempt was called
    bool flag = false;            // PTB: preemption flag visible to workers
  };
  // Blocks of one launch placed in one dispatch: they start together and, being alike, end
  // together; a PTB group's workers run their tasks in lockstep.
  struct Group {
    uint64_t launch = 0;
    std::vector<std::pair<uint32_t, uint32_t>> placement;  // (SM, count)
    uint64_t count = 0;
    uint64_t tasks = 0;  // PTB: tasks of the current round
  };

  void MakeDispatchable(uint64_t id);
  // Dispatches once all events of this instant have freed what they free.
  void RequestDispatch();
  void Dispatch();
  void Place(uint64_t id, LaunchState& launch);
  uint32_t Fits(const Sm& sm, const Footprint& f) const;
  void StartRound(uint64_t group_id);
  // unit_time slowed by what other launches hold of the device now.
  Duration UnitTime(const LaunchState& launch) const;
  void EndGroup(uint64_t group_id);
  // Frees `count` of the group's blocks or workers, from its last SMs.
  void Release(Group& group, LaunchState& launch, uint64_t count);
  void MaybeEnd(uint64_t id);

  const DeviceSpec device_;
  EventQueue& events_;
  EndCallback on_end_;
  std::vector<Sm> sms_;
  std::unordered_map<uint64_t, LaunchState> launches_;
  std::map<uint64_t, std::deque<uint64_t>> streams_;
  // Dispatchable launches by (low priority first = false, seq): iterated high priority first.
  std::map<std::pair<bool, uint64_t>, uint64_t> ready_;
  std::unordered_map<uint64_t, Group> groups_;
  uint64_t next_launch_ = 1;
  uint64_t next_group_ = 1;
  bool dispatch_pending_ = false;
  uint64_t warps_in_use_ = 0;  // over all SMs
};

}  // namespace tally::sim
