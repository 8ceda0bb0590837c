// Slice plans, parameter packing and worker counts for the transformed kernel forms.
#include "ptx_transform/launch_forms.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace tally::ptx {
namespace {

// The original arguments followed by the variant's extra inputs, checked against the
// variant's parameter count.
absl::StatusOr<std::vector<uint8_t>> PackWithExtras(const KernelSignature& variant,
                                                    std::span<const void* const> args,
                                                    std::initializer_list<const void*> extras) {
  if (args.size() + extras.size() != variant.params.size()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: {} arguments given for {} original parameters", variant.name, args.size(),
        variant.params.size() < extras.size() ? 0 : variant.params.size() - extras.size()));
  }
  std::vector<const void*> values(args.begin(), args.end());
  values.insert(values.end(), extras.begin(), extras.end());
  return PackParams(variant, values);
}

}  // namespace

absl::StatusOr<uint32_t> LinearBlockCount(Dim3 grid) {
  uint64_t total = uint64_t{grid.x} * grid.y * grid.z;
  if (total == 0 || total > UINT32_MAX) {
    return absl::OutOfRangeError(
        fmt::format("grid {}x{}x{} cannot be sliced or made preemptible (needs 1 to 2^32-1 blocks)",
                    grid.x, grid.y, grid.z));
  }
  return static_cast<uint32_t>(total);
}

absl::StatusOr<std::vector<Slice>> PlanSlices(Dim3 grid, uint32_t blocks_per_slice) {
  auto total = LinearBlockCount(grid);
  if (!total.ok()) return total.status();
  if (blocks_per_slice == 0) return absl::InvalidArgumentError("slices need at least 1 block");
  std::vector<Slice> slices;
  for (uint32_t first = 0; first < *total;) {
    uint32_t blocks = std::min(blocks_per_slice, *total - first);
    slices.push_back({first, blocks});
    first += blocks;
  }
  return slices;
}

absl::StatusOr<std::vector<uint8_t>> PackParams(const KernelSignature& signature,
                                                std::span<const void* const> values) {
  if (values.size() != signature.params.size()) {
    return absl::InvalidArgumentError(fmt::format("{}: {} values for {} parameters", signature.name,
                                                  values.size(), signature.params.size()));
  }
  std::vector<uint8_t> buffer(signature.param_buffer_size);
  for (size_t i = 0; i < values.size(); ++i) {
    const ParamLayout& p = signature.params[i];
    if (values[i] == nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("{}: no value for parameter {}", signature.name, i));
    }
    std::memcpy(buffer.data() + p.offset, values[i], p.size);
  }
  return buffer;
}

absl::StatusOr<std::vector<uint8_t>> SlicedParams(const KernelSignature& sliced,
                                                  std::span<const void* const> args,
                                                  const Slice& slice, Dim3 grid) {
  return PackWithExtras(sliced, args, {&slice.first_block, &grid.x, &grid.y, &grid.z});
}

absl::StatusOr<std::vector<uint8_t>> PreemptibleParams(const KernelSignature& ptb,
                                                       std::span<const void* const> args,
                                                       uint64_t state_address, Dim3 grid) {
  return PackWithExtras(ptb, args, {&state_address, &grid.x, &grid.y, &grid.z});
}

uint32_t PtbWorkerCount(uint32_t blocks_per_sm, uint32_t sm_count, uint32_t total_blocks,
                        uint32_t requested) {
  uint64_t resident = std::max<uint64_t>(1, uint64_t{blocks_per_sm} * sm_count);
  uint64_t workers = requested == 0 ? resident : std::min<uint64_t>(requested, resident);
  workers = std::min<uint64_t>(workers, std::max<uint32_t>(total_blocks, 1));
  return static_cast<uint32_t>(std::max<uint64_t>(workers, 1));
}

}  // namespace tally::ptx
