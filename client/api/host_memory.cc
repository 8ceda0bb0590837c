// Page-locked host memory, for now as ordinary page-aligned memory: copies from and to it work
// (they go through the bulk area like any host memory) but are not zero-copy, and mapped memory
// (cudaHostAllocMapped, device access to host memory) is not supported yet. Issue 4 plans pinned
// memory in shared memory that the server maps.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <mutex>

#include "absl/container/flat_hash_set.h"
#include "client/entry.h"
#include "client/handles.h"
#include "common/status.h"

using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::Run;

namespace {

constexpr size_t kPageSize = 4096;

// Blocks handed out here, so that cudaFreeHost refuses other pointers instead of freeing them.
class HostBlocks {
 public:
  static HostBlocks& Get() {
    static HostBlocks* const blocks = new HostBlocks;
    return *blocks;
  }
  absl::Status Allocate(void** pointer, size_t size) {
    TALLY_RETURN_IF_ERROR(CheckOut(pointer));
    void* block = nullptr;
    if (posix_memalign(&block, kPageSize, size == 0 ? 1 : size) != 0) {
      return CudaError(cudaErrorMemoryAllocation, "out of host memory");
    }
    std::lock_guard lock(mutex_);
    blocks_.insert(block);
    *pointer = block;
    return absl::OkStatus();
  }
  absl::Status Free(void* pointer) {
    if (pointer == nullptr) return absl::OkStatus();
    {
      std::lock_guard lock(mutex_);
      if (blocks_.erase(pointer) == 0) {
        return CudaError(cudaErrorInvalidValue, "not memory from cudaMallocHost/cudaHostAlloc");
      }
    }
    std::free(pointer);
    return absl::OkStatus();
  }

 private:
  std::mutex mutex_;
  absl::flat_hash_set<void*> blocks_;
};

}  // namespace

extern "C" {

cudaError_t cudaMallocHost(void** pointer, size_t size) {
  return Run(__func__, [&] { return HostBlocks::Get().Allocate(pointer, size); });
}

cudaError_t cudaHostAlloc(void** pointer, size_t size, unsigned int flags) {
  return Run(__func__, [&]() -> absl::Status {
    if ((flags & cudaHostAllocMapped) != 0) {
      return CudaError(cudaErrorNotSupported, "mapped host memory is not supported yet");
    }
    return HostBlocks::Get().Allocate(pointer, size);
  });
}

cudaError_t cudaFreeHost(void* pointer) {
  return Run(__func__, [&] { return HostBlocks::Get().Free(pointer); });
}

}  // extern "C"
