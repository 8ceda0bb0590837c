// The simulated GPU's description (an NVIDIA A100 by default) and how many blocks of a kernel
// fit on one SM, as CUDA's occupancy calculator computes it from threads, registers and shared
// memory (CUDA C++ Programming Guide, "Compute Capabilities", table of technical
// specifications per compute capability; the calculator's allocation granularities).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "scheduler/types.h"

namespace tally::sim {

using scheduler::Duration;
using scheduler::Time;

struct DeviceSpec {
  std::string name = "A100-SXM4 (simulated)";
  uint32_t sm_count = 108;
  uint32_t max_threads_per_sm = 2048;
  uint32_t max_blocks_per_sm = 32;
  uint32_t registers_per_sm = 65536;
  uint32_t max_registers_per_thread = 255;
  uint32_t register_unit = 256;           // a warp's registers are allocated in multiples of this
  uint32_t warp_granularity = 4;          // warps are allocated registers in groups of this many
  uint32_t shared_bytes_per_sm = 167936;  // 164 KiB, the largest carve-out of compute 8.0
  uint32_t shared_unit = 128;
  uint32_t reserved_shared_per_block = 1024;  // compute 8.0 reserves 1 KiB per block
  uint32_t warp_size = 32;
  // From a launch call to its first block on an SM.
  Duration launch_latency = std::chrono::microseconds(4);
  // From a kernel's end on the device to its driver learning of it (event query or callback).
  Duration completion_latency = std::chrono::microseconds(5);
  // From a preempt decision to the flag being visible to the kernel's workers.
  Duration preempt_latency = std::chrono::microseconds(2);
};

// What one block of a kernel needs.
struct BlockResources {
  uint32_t threads = 128;
  uint32_t registers_per_thread = 32;
  uint32_t shared_bytes = 0;  // static and dynamic
};

// One block's share of an SM, in the units the SM's limits are counted in.
struct Footprint {
  uint32_t warps = 0;
  uint32_t registers = 0;  // after the per-warp allocation unit
  uint32_t shared = 0;     // after the allocation unit, with the reserved part
  // Registers of the SM a kernel of this shape can use in all: the warps the register file
  // holds for it, rounded down to the warp granularity (why the calculator's register limit
  // is not a plain division).
  uint32_t register_capacity = 0;
};

Footprint FootprintOf(const DeviceSpec& device, const BlockResources& block);

// Blocks of this shape one empty SM holds; 0 when a block cannot run at all.
uint32_t ResidentBlocksPerSm(const DeviceSpec& device, const BlockResources& block);

}  // namespace tally::sim
