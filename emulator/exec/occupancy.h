// What one virtual SM holds and what a resident block takes from it: the one source of the
// limits behind cuOccupancyMaxActiveBlocksPerMultiprocessor, the per-SM device attributes and
// block dispatch (the sm_80 column of the CUDA C++ Programming Guide, "Technical Specifications
// per Compute Capability").
#pragma once

#include <algorithm>
#include <cstdint>

namespace tally::emu::exec {

inline constexpr uint32_t kSmMaxThreads = 2048;
inline constexpr uint32_t kSmMaxWarps = kSmMaxThreads / 32;
inline constexpr uint32_t kSmMaxBlocks = 32;
inline constexpr uint32_t kSmSharedBytes = 164 * 1024;
// Shared memory the driver reserves on the SM for every resident block
// (CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK).
inline constexpr uint32_t kReservedSharedPerBlock = 1024;
// Shared memory a block may use without opting in, and at most after opting in
// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
inline constexpr uint32_t kDefaultSharedPerBlock = 48 * 1024;
inline constexpr uint32_t kOptInSharedPerBlock = kSmSharedBytes - kReservedSharedPerBlock;
// Registers are not counted: every kernel reports 32 per thread (CU_FUNC_ATTRIBUTE_NUM_REGS), and
// 32 x kSmMaxThreads is exactly this, so registers never limit below the thread limit.
inline constexpr uint32_t kSmRegisters = 65536;

// What a resident block occupies on its SM (besides one of its kSmMaxBlocks slots).
struct BlockFootprint {
  uint32_t warps = 1;
  uint64_t shared_bytes = kReservedSharedPerBlock;  // the block's shared memory + the reservation
};

constexpr BlockFootprint FootprintOf(uint64_t threads, uint64_t shared_bytes) {
  return {static_cast<uint32_t>(std::max<uint64_t>(1, (threads + 31) / 32)),
          shared_bytes + kReservedSharedPerBlock};
}

// Blocks of `footprint` that an empty SM holds at once (0: not even one).
constexpr uint32_t BlocksPerSm(const BlockFootprint& footprint) {
  return static_cast<uint32_t>(std::min<uint64_t>(
      {kSmMaxBlocks, kSmMaxWarps / footprint.warps, kSmSharedBytes / footprint.shared_bytes}));
}

}  // namespace tally::emu::exec
