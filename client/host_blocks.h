// This process's page-locked host memory. Blocks allocated by the shim (cudaMallocHost,
// cudaHostAlloc, cuMemHostAlloc, cudaMallocManaged) live in the host region, which the server
// maps at the same address and registers with the device: kernels, copies and the application
// use one pointer value. Memory the application registers (cudaHostRegister) cannot be shared
// with the server, so it is only tracked: copies from and to it are staged like pageable ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/status/statusor.h"
#include "ipc/bulk.h"

namespace tally::client {

enum class HostBlockKind : uint8_t {
  kPinned,      // cudaMallocHost, cudaHostAlloc, cuMemHostAlloc: mapped, as with unified addressing
  kManaged,     // cudaMallocManaged: the same memory, reported as managed
  kRegistered,  // cudaHostRegister: the application's own memory, invisible to the server
};

struct HostBlock {
  uintptr_t base = 0;
  size_t size = 0;  // as requested
  HostBlockKind kind = HostBlockKind::kPinned;
  unsigned flags = 0;      // as given to cudaHostAlloc / cudaHostRegister / cudaMallocManaged
  uint64_t buffer_id = 0;  // CU_POINTER_ATTRIBUTE_BUFFER_ID
};

class HostBlocks {
 public:
  static HostBlocks& Get() {
    static HostBlocks* const blocks = new HostBlocks;  // never destroyed, like the channel
    return *blocks;
  }
  // A page-aligned block of the host region, registered by the server; kPinned or kManaged;
  // `size` > 0.
  absl::StatusOr<void*> Allocate(size_t size, HostBlockKind kind, unsigned flags);
  // Frees a block Allocate returned, of that kind, after the client's queued work has finished.
  absl::Status Free(void* pointer, HostBlockKind kind);
  absl::Status Register(void* pointer, size_t size, unsigned flags);
  absl::Status Unregister(void* pointer);
  // The block containing `pointer`.
  std::optional<HostBlock> Find(const void* pointer) const;
  // cudaDeviceReset, once the server has unregistered every block: forgets all blocks and
  // registrations, and gives the blocks' pages back.
  void Reset();

 private:
  absl::StatusOr<ipc::BulkRef> Carve(size_t size);
  // Gives a carved block's pages back to the system and the block to the allocator.
  void ReturnPagesLocked(uintptr_t base, size_t size);
  absl::Status CheckNoOverlapLocked(uintptr_t base, size_t size) const;

  mutable std::mutex mutex_;
  std::map<uintptr_t, HostBlock> blocks_;          // by base
  std::unique_ptr<ipc::BulkAllocator> allocator_;  // over the host region, on first use
  uintptr_t region_base_ = 0;
};

}  // namespace tally::client
