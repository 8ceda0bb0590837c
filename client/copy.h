// Copies and memsets between host and device memory for the runtime entry points (memory and
// symbols), and the process's record of which address ranges are device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ipc/bulk.h"

namespace tally::client {

// What a device range is: the kinds differ in what cudaDeviceReset destroys.
enum class RangeKind : uint8_t {
  kAllocation,  // cudaMalloc, cuMemAlloc, ...
  kHostBlock,   // page-locked or managed memory of the host region (host_blocks.h)
  kVariable,    // a module variable, resolved by name
};

// One entry of DeviceRanges.
struct DeviceRange {
  uintptr_t base = 0;
  size_t size = 0;
  RangeKind kind = RangeKind::kAllocation;
  uint64_t buffer_id = 0;  // unique over the process's lifetime (CU_POINTER_ATTRIBUTE_BUFFER_ID)
};

// A fresh CU_POINTER_ATTRIBUTE_BUFFER_ID: IDs are never reused within the process.
uint64_t NewBufferId();

// This process's device memory (allocations, host blocks, and __device__ variables once
// resolved): tells device from host pointers for cudaMemcpyDefault (with unified addressing the
// kind follows from the pointer, CUDA Runtime API, cudaMemcpy), checks one-way calls' ranges
// locally and answers pointer queries (cuMemGetAddressRange, cuPointerGetAttribute).
class DeviceRanges {
 public:
  static DeviceRanges& Get() {
    static DeviceRanges* const ranges = new DeviceRanges;
    return *ranges;
  }
  void Add(uintptr_t base, size_t size, RangeKind kind) {
    const uint64_t id = NewBufferId();
    std::lock_guard lock(mutex_);
    bases_[base] = {base, size, kind, id};
  }
  void Remove(uintptr_t base) {
    std::lock_guard lock(mutex_);
    bases_.erase(base);
  }
  // Forgets every allocation (cudaDeviceReset destroyed them); host blocks are forgotten with
  // HostBlocks, variables stay (their modules stay loaded).
  void RemoveAllocations() {
    std::lock_guard lock(mutex_);
    std::erase_if(bases_,
                  [](const auto& entry) { return entry.second.kind == RangeKind::kAllocation; });
  }
  // The range containing `pointer`.
  std::optional<DeviceRange> Find(const void* pointer) {
    const auto address = reinterpret_cast<uintptr_t>(pointer);
    std::lock_guard lock(mutex_);
    auto it = bases_.upper_bound(address);
    if (it == bases_.begin()) return std::nullopt;
    --it;
    if (address - it->first >= it->second.size) return std::nullopt;
    return it->second;
  }
  // Whether [pointer, pointer + size) lies inside one range of this process.
  bool Contains(const void* pointer, size_t size) {
    const std::optional<DeviceRange> range = Find(pointer);
    return range && size <= range->size - (reinterpret_cast<uintptr_t>(pointer) - range->base);
  }
  bool IsDevice(const void* pointer) { return Find(pointer).has_value(); }

 private:
  std::mutex mutex_;
  std::map<uintptr_t, DeviceRange> bases_;
};

class Channel;

// Bulk blocks for staged data: large enough to amortise a round trip, small enough that several
// threads stage data at once.
inline constexpr size_t kMaxChunk = size_t{4} << 20;
// A bulk block of up to min(`wanted`, kMaxChunk) bytes (`wanted` > 0); smaller when other
// threads hold much of the area.
absl::StatusOr<ipc::BulkRef> AllocateChunk(Channel& channel, size_t wanted);

// Whether a copy may return once it is queued (cudaMemcpyAsync) or only once it is done
// (cudaMemcpy). Copies with pageable host memory always return once the data has arrived, as
// CUDA's do; only device and page-locked memory is really asynchronous.
enum class CopyMode { kSync, kAsync };

// One side of a pitched box (a cudaPitchedPtr with the position folded into `base`).
struct BoxSide {
  const void* base;     // the box's first byte
  size_t pitch;         // bytes between rows
  size_t slice_height;  // rows between slices (cudaPitchedPtr::ysize)
};
struct BoxExtent {
  size_t width;  // bytes
  size_t height;
  size_t depth;
};

// cudaMemcpy semantics (CUDA Runtime API, cudaMemcpy). Pageable host data travels through the
// bulk area in chunks; page-locked memory (the host region) is copied by the server directly.
absl::Status Copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                  cudaStream_t stream, CopyMode mode);
// The shim's own copies between host memory and a device address (managed variables' set-up):
// on the legacy default stream, done when they return, never captured into a graph.
absl::Status ReadDevice(void* dst, uint64_t src, size_t count);
absl::Status WriteDevice(uint64_t dst, const void* src, size_t count);
// cudaMemcpy2D/3D semantics for linear memory: `extent` (width in bytes) between pitched
// layouts. cudaErrorInvalidPitchValue when a pitch is below the width.
absl::Status CopyBox(const BoxSide& dst, const BoxSide& src, const BoxExtent& extent,
                     cudaMemcpyKind kind, cudaStream_t stream, CopyMode mode);
// cudaMemset semantics: sets bytes to the low byte of `value`; one-way.
absl::Status Memset(void* dst, int value, size_t count, cudaStream_t stream);
// cudaMemset2D/3D and cuMemsetD2D8/16/32 semantics: sets the box (its width in bytes) to
// elements of `element_size` (1, 2 or 4) bytes holding the low bytes of `value`; the first byte,
// the pitch and the width must be multiples of the element size. One-way.
absl::Status MemsetBox(const BoxSide& dst, uint32_t value, uint32_t element_size,
                       const BoxExtent& extent, cudaStream_t stream);
// cuMemsetD8/D16/D32 semantics: sets `count` elements of `element_size` (1, 2 or 4) bytes to the
// low bytes of `value`; the destination must be aligned to the element size. One-way.
absl::Status MemsetElements(void* dst, uint32_t value, uint32_t element_size, size_t count,
                            cudaStream_t stream);

// cudaMemcpy3D semantics for linear memory (CUDA arrays: cudaErrorNotSupported).
absl::Status CopyParms(const cudaMemcpy3DParms& parms, cudaStream_t stream, CopyMode mode);
// A graph memset node's work (cudaMemsetParams: rows of `width` elements).
absl::Status MemsetParams(const cudaMemsetParams& params, cudaStream_t stream);

// Device memory (api/memory.cc): cudaMalloc's allocation; its release; cudaFree, which also
// frees managed memory and leaves a graph's memory to the graph.
absl::Status AllocateDevice(void** pointer, size_t size);
absl::Status ReleaseDevice(void* pointer);
absl::Status FreeDevice(void* pointer);

}  // namespace tally::client
