// The block scheduler. Blocks placed together on free slots form a group that ends together,
// so a wave of a large kernel is one event, not one per block. Placement is breadth first
// (one block per SM in turn) as the hardware spreads a launch over the SMs.
#include "benchmarks/sim/gpu.h"

#include <algorithm>

namespace tally::sim {

Gpu::Gpu(const DeviceSpec& device, EventQueue& events, EndCallback on_end)
    : device_(device), events_(events), on_end_(std::move(on_end)), sms_(device.sm_count) {}

uint64_t Gpu::Launch(const LaunchSpec& spec) {
  const uint64_t id = next_launch_++;
  LaunchState& launch = launches_[id];
  launch.spec = spec;
  launch.footprint = FootprintOf(device_, spec.resources);
  launch.seq = id;
  launch.ready = events_.now() + device_.launch_latency;
  launch.unplaced = spec.persistent ? std::min(spec.workers, spec.units) : spec.units;
  std::deque<uint64_t>& stream = streams_[spec.stream];
  stream.push_back(id);
  if (stream.size() == 1) events_.At(launch.ready, [this, id] { MakeDispatchable(id); });
  return id;
}

bool Gpu::Preempt(uint64_t id) {
  auto it = launches_.find(id);
  if (it == launches_.end() || !it->second.spec.persistent || it->second.flag_requested) {
    return false;
  }
  it->second.flag_requested = true;
  events_.At(events_.now() + device_.preempt_latency, [this, id] {
    auto it = launches_.find(id);
    if (it == launches_.end()) return;  // it ended before the flag was seen
    it->second.flag = true;
    it->second.unplaced = 0;  // workers not started yet would exit at their first check
    MaybeEnd(id);
  });
  return true;
}

void Gpu::MakeDispatchable(uint64_t id) {
  LaunchState& launch = launches_.at(id);
  launch.dispatchable = true;
  ready_[{!launch.spec.high_priority, launch.seq}] = id;
  MaybeEnd(id);  // a PTB launch stopped before any worker started
  RequestDispatch();
}

void Gpu::RequestDispatch() {
  if (dispatch_pending_) return;
  dispatch_pending_ = true;
  events_.At(events_.now(), [this] {
    dispatch_pending_ = false;
    Dispatch();
  });
}

uint32_t Gpu::Fits(const Sm& sm, const Footprint& f) const {
  const uint32_t max_warps = device_.max_threads_per_sm / device_.warp_size;
  const uint32_t registers =
      sm.registers >= f.register_capacity ? 0 : (f.register_capacity - sm.registers) / f.registers;
  return std::min({device_.max_blocks_per_sm - sm.blocks, (max_warps - sm.warps) / f.warps,
                   registers, (device_.shared_bytes_per_sm - sm.shared) / f.shared});
}

void Gpu::Dispatch() {
  std::vector<uint64_t> order;
  order.reserve(ready_.size());
  for (const auto& [key, id] : ready_) order.push_back(id);
  for (uint64_t id : order) {
    auto it = launches_.find(id);
    if (it != launches_.end() && it->second.unplaced > 0) Place(id, it->second);
  }
}

void Gpu::Place(uint64_t id, LaunchState& launch) {
  if (launch.spec.persistent) {
    // Workers that would find no task (or the flag raised) exit at once: never placed.
    launch.unplaced =
        launch.flag ? 0 : std::min(launch.unplaced, launch.spec.units - launch.claimed);
    if (launch.unplaced == 0) {
      MaybeEnd(id);
      return;
    }
  }
  std::vector<uint32_t> fits(sms_.size());
  uint64_t total = 0;
  for (size_t s = 0; s < sms_.size(); ++s) {
    fits[s] = Fits(sms_[s], launch.footprint);
    total += fits[s];
  }
  if (total == 0) return;
  std::vector<uint32_t> take(sms_.size(), 0);
  if (total <= launch.unplaced) {
    take = fits;
  } else {
    uint64_t remaining = launch.unplaced;
    for (uint32_t round = 1; remaining > 0; ++round) {
      for (size_t s = 0; s < sms_.size() && remaining > 0; ++s) {
        if (fits[s] >= round) {
          ++take[s];
          --remaining;
        }
      }
    }
  }
  Group group;
  group.launch = id;
  const Footprint& f = launch.footprint;
  for (size_t s = 0; s < sms_.size(); ++s) {
    if (take[s] == 0) continue;
    Sm& sm = sms_[s];
    sm.blocks += take[s];
    sm.warps += take[s] * f.warps;
    warps_in_use_ += uint64_t{take[s]} * f.warps;
    sm.registers += take[s] * f.registers;
    sm.shared += take[s] * f.shared;
    group.placement.emplace_back(static_cast<uint32_t>(s), take[s]);
    group.count += take[s];
  }
  launch.unplaced -= group.count;
  launch.on_device += group.count;
  const uint64_t group_id = next_group_++;
  groups_[group_id] = std::move(group);
  if (launch.spec.persistent) {
    StartRound(group_id);
  } else {
    events_.At(events_.now() + UnitTime(launch), [this, group_id] { EndGroup(group_id); });
  }
}

Duration Gpu::UnitTime(const LaunchState& launch) const {
  if (launch.spec.interference <= 0) return launch.spec.unit_time;
  const uint64_t own = launch.on_device * launch.footprint.warps;
  const double device_warps =
      static_cast<double>(device_.max_threads_per_sm / device_.warp_size) * device_.sm_count;
  const double others = static_cast<double>(warps_in_use_ - own) / device_warps;
  return std::chrono::duration_cast<Duration>(launch.spec.unit_time *
                                              (1 + launch.spec.interference * others));
}

void Gpu::StartRound(uint64_t group_id) {
  Group& group = groups_.at(group_id);
  const uint64_t id = group.launch;
  LaunchState& launch = launches_.at(id);
  // Each worker checks the flag, then takes the next task from the counter; a worker without a
  // task exits.
  const uint64_t tasks =
      launch.flag ? 0 : std::min(group.count, launch.spec.units - launch.claimed);
  launch.claimed += tasks;
  group.tasks = tasks;
  if (tasks < group.count) {
    Release(group, launch, group.count - tasks);
    RequestDispatch();
  }
  if (group.count == 0) {
    groups_.erase(group_id);
    MaybeEnd(id);
    return;
  }
  events_.At(events_.now() + UnitTime(launch), [this, group_id] { EndGroup(group_id); });
}

void Gpu::EndGroup(uint64_t group_id) {
  Group& group = groups_.at(group_id);
  const uint64_t id = group.launch;
  LaunchState& launch = launches_.at(id);
  if (launch.spec.persistent) {
    launch.done += group.tasks;
    StartRound(group_id);
    return;
  }
  launch.done += group.count;
  Release(group, launch, group.count);
  groups_.erase(group_id);
  MaybeEnd(id);
  RequestDispatch();
}

void Gpu::Release(Group& group, LaunchState& launch, uint64_t count) {
  const Footprint& f = launch.footprint;
  while (count > 0) {
    auto& [s, placed] = group.placement.back();
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(placed, count));
    Sm& sm = sms_[s];
    sm.blocks -= n;
    sm.warps -= n * f.warps;
    warps_in_use_ -= uint64_t{n} * f.warps;
    sm.registers -= n * f.registers;
    sm.shared -= n * f.shared;
    placed -= n;
    count -= n;
    group.count -= n;
    launch.on_device -= n;
    if (placed == 0) group.placement.pop_back();
  }
}

void Gpu::MaybeEnd(uint64_t id) {
  LaunchState& launch = launches_.at(id);
  if (!launch.dispatchable || launch.unplaced > 0 || launch.on_device > 0) return;
  const LaunchEnd end{id, events_.now(), launch.done,
                      launch.spec.persistent && launch.done < launch.spec.units};
  ready_.erase({!launch.spec.high_priority, launch.seq});
  std::deque<uint64_t>& stream = streams_.at(launch.spec.stream);
  stream.pop_front();
  if (!stream.empty()) {
    const uint64_t next = stream.front();
    events_.At(std::max(events_.now(), launches_.at(next).ready),
               [this, next] { MakeDispatchable(next); });
  }
  launches_.erase(id);
  on_end_(end);
}

}  // namespace tally::sim
