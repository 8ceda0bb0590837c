// Copies and memsets between host and device memory for the runtime entry points (memory and
// symbols), and the process's record of which address ranges are device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "absl/status/status.h"

namespace tally::client {

// This process's device memory (allocations, and __device__ variables once resolved): tells
// device from host pointers for cudaMemcpyDefault (with unified addressing the kind follows from
// the pointer, CUDA Runtime API, cudaMemcpy) and checks one-way calls' ranges locally.
class DeviceRanges {
 public:
  static DeviceRanges& Get() {
    static DeviceRanges* const ranges = new DeviceRanges;
    return *ranges;
  }
  void Add(uintptr_t base, size_t size) {
    std::lock_guard lock(mutex_);
    bases_[base] = size;
  }
  void Remove(uintptr_t base) {
    std::lock_guard lock(mutex_);
    bases_.erase(base);
  }
  // Whether [pointer, pointer + size) lies inside one allocation of this process.
  bool Contains(const void* pointer, size_t size) {
    const auto address = reinterpret_cast<uintptr_t>(pointer);
    std::lock_guard lock(mutex_);
    auto it = bases_.upper_bound(address);
    if (it == bases_.begin()) return false;
    --it;
    const uintptr_t offset = address - it->first;
    return offset < it->second && size <= it->second - offset;
  }
  bool IsDevice(const void* pointer) { return Contains(pointer, 1); }

 private:
  std::mutex mutex_;
  std::map<uintptr_t, size_t> bases_;
};

// cudaMemcpy semantics (CUDA Runtime API, cudaMemcpy): host data travels through the bulk
// area in chunks, and copies touching host memory return when the data has arrived, as from
// pageable memory, also on a stream.
absl::Status Copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                  cudaStream_t stream);
// cudaMemcpy2D semantics: `height` rows of `width` bytes between pitched layouts. Dense layouts
// are one copy, others a copy per row. cudaErrorInvalidPitchValue when a pitch is below width.
absl::Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                    size_t height, cudaMemcpyKind kind, cudaStream_t stream);
// cudaMemset semantics: sets bytes to the low byte of `value`; one-way.
absl::Status Memset(void* dst, int value, size_t count, cudaStream_t stream);

}  // namespace tally::client
