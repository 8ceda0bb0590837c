// Host-side helpers for launching the transformed forms of a kernel (used by the server and
// the profiler): slice plans, parameter buffers of the variants, PTB worker counts.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "ptx_transform/kernel_signature.h"

namespace tally::ptx {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

// Blocks in `grid`. The variants number blocks with 32-bit integers, so a grid of more than
// 2^32 - 1 blocks (or with a zero dimension) is an error: such a launch runs in its original
// form.
absl::StatusOr<uint32_t> LinearBlockCount(Dim3 grid);

// A sliced launch: grid (blocks, 1, 1), the block shape of the original launch.
struct Slice {
  uint32_t first_block = 0;  // linear index in the original grid (x fastest)
  uint32_t blocks = 0;
  friend bool operator==(const Slice&, const Slice&) = default;
};

// Consecutive slices of at most `blocks_per_slice` blocks that cover `grid` in order.
absl::StatusOr<std::vector<Slice>> PlanSlices(Dim3 grid, uint32_t blocks_per_slice);

// Packs `values` (one pointer per parameter, as cuLaunchKernel's kernelParams) into a
// parameter buffer laid out by `signature` (for CU_LAUNCH_PARAM_BUFFER_POINTER).
absl::StatusOr<std::vector<uint8_t>> PackParams(const KernelSignature& signature,
                                                std::span<const void* const> values);

// The parameter buffer of a sliced variant (`sliced` is its signature) from the original
// kernel's arguments.
absl::StatusOr<std::vector<uint8_t>> SlicedParams(const KernelSignature& sliced,
                                                  std::span<const void* const> args,
                                                  const Slice& slice, Dim3 grid);

// The parameter buffer of a PTB variant: `state_address` is the device address of its
// PtbState (transform.h), zeroed before the first launch and kept for resumption.
absl::StatusOr<std::vector<uint8_t>> PreemptibleParams(const KernelSignature& ptb,
                                                       std::span<const void* const> args,
                                                       uint64_t state_address, Dim3 grid);

// Worker blocks for a PTB launch: `requested` (0: as many as can be resident), never more
// than resident (occupancy per SM times SMs) nor than the grid has blocks, at least 1.
uint32_t PtbWorkerCount(uint32_t blocks_per_sm, uint32_t sm_count, uint32_t total_blocks,
                        uint32_t requested);

}  // namespace tally::ptx
