// The occupancy calculation: each of the SM's limits (blocks, warps, registers, shared memory)
// bounds the resident blocks; the smallest bound wins.
#include "benchmarks/sim/device.h"

#include <algorithm>

namespace tally::sim {
namespace {

uint32_t RoundUp(uint32_t value, uint32_t unit) { return (value + unit - 1) / unit * unit; }

}  // namespace

Footprint FootprintOf(const DeviceSpec& device, const BlockResources& block) {
  Footprint f;
  f.warps = (block.threads + device.warp_size - 1) / device.warp_size;
  const uint32_t registers_per_warp =
      RoundUp(std::max(block.registers_per_thread, 1u) * device.warp_size, device.register_unit);
  f.registers = registers_per_warp * f.warps;
  const uint32_t warps_by_registers = device.registers_per_sm / registers_per_warp /
                                      device.warp_granularity * device.warp_granularity;
  f.register_capacity = warps_by_registers * registers_per_warp;
  f.shared = RoundUp(block.shared_bytes, device.shared_unit) + device.reserved_shared_per_block;
  return f;
}

uint32_t ResidentBlocksPerSm(const DeviceSpec& device, const BlockResources& block) {
  if (block.threads == 0 || block.threads > 1024 ||
      block.registers_per_thread > device.max_registers_per_thread) {
    return 0;
  }
  const Footprint f = FootprintOf(device, block);
  const uint32_t max_warps = device.max_threads_per_sm / device.warp_size;
  return std::min({device.max_blocks_per_sm, max_warps / f.warps, f.register_capacity / f.registers,
                   device.shared_bytes_per_sm / f.shared});
}

}  // namespace tally::sim
