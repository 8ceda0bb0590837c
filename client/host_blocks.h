// This process's page-locked host memory. Blocks allocated by the shim (cudaMallocHost,
// cudaHostAlloc, cuMemHostAlloc, cudaMallocManaged) live in the host region, which the server
// maps at the same address and registers with the device: kernels, copies and the application
// use one pointer value. Memory the application registers (cudaHostRegister) stays where it is:
// its pages are moved into a block of the host region that is mapped at the application's
// address too, so that the application's pointer and the device's (the block's region address,
// which cudaHostGetDevicePointer returns) name the same memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "ipc/bulk.h"

namespace tally::client {

enum class HostBlockKind : uint8_t {
  kPinned,      // cudaMallocHost, cudaHostAlloc, cuMemHostAlloc: mapped, as with unified addressing
  kManaged,     // cudaMallocManaged: the same memory, reported as managed
  kRegistered,  // cudaHostRegister: the application's own memory, mapped for the device
};

// Why registered memory has no device pointer (it is tracked, and copies with it work).
enum class Unmapped : uint8_t {
  kNo,           // mapped: `device` is its device pointer
  kShared,       // a MAP_SHARED mapping (a file, shared memory): moving it would unshare it
  kSharedPage,   // a page of it belongs to another registration's mapping
  kStack,        // on the calling thread's stack, which runs on those pages while they'd move
  kNoHostRegion  // this process has no host region (its address was taken)
};

struct HostBlock {
  uintptr_t base = 0;
  size_t size = 0;  // as requested
  HostBlockKind kind = HostBlockKind::kPinned;
  unsigned flags = 0;      // as given to cudaHostAlloc / cudaHostRegister / cudaMallocManaged
  uint64_t buffer_id = 0;  // CU_POINTER_ATTRIBUTE_BUFFER_ID
  uintptr_t device = 0;    // where kernels see `base`: base itself, or a registration's alias
  Unmapped unmapped = Unmapped::kNo;  // kRegistered: why `device` is 0
};

// Why registered memory is not mapped, for the errors that say so.
const char* UnmappedReason(Unmapped unmapped);

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
  // cudaHostRegister: the range's pages move into a host-region block registered with the
  // device (CUDA Runtime API, cudaHostRegister: under unified addressing registered memory is
  // mapped); memory that cannot move (Unmapped) is only tracked.
  absl::Status Register(void* pointer, size_t size, unsigned flags);
  // cudaHostUnregister: once the device is done with them, the pages become the application's
  // private memory again, with their contents.
  absl::Status Unregister(void* pointer);
  // The block containing `pointer`; for a registration also its device alias.
  std::optional<HostBlock> Find(const void* pointer) const;
  // cudaDeviceReset, once the server has unregistered every block: forgets all blocks and
  // registrations, gives the blocks' pages back and registered memory to the application.
  void Reset();

 private:
  // A registration's pages: [begin, end) of the application, each part with its protection,
  // and the host-region block that holds them (region == 0 when not mapped).
  struct Part {
    uintptr_t begin = 0, end = 0;
    int prot = 0;
  };
  struct Registration {
    uintptr_t begin = 0, end = 0;  // the range registered
    uintptr_t page_begin = 0, page_end = 0;
    std::vector<Part> parts;
    uintptr_t region = 0;
  };

  absl::StatusOr<ipc::BulkRef> Carve(size_t size);
  // Gives a carved block's pages back to the system and the block to the allocator.
  void ReturnPagesLocked(uintptr_t base, size_t size);
  absl::Status CheckNoOverlapLocked(uintptr_t base, size_t size) const;
  // Moves the registration's pages into a new host-region block registered with the device;
  // sets registration.region.
  absl::Status MapRegistration(Registration& registration);
  // Makes the registration's pages private memory of the application again (their contents
  // kept) and gives the region block back.
  void UnmapRegistrationLocked(const Registration& registration);
  Unmapped WhyUnmappableLocked(const Registration& registration) const;

  mutable std::mutex mutex_;
  std::mutex register_mutex_;                      // one cudaHostRegister/Unregister at a time
  std::map<uintptr_t, HostBlock> blocks_;          // by base
  std::map<uintptr_t, Registration> registrations_;  // by base, also unmapped ones
  std::map<uintptr_t, uintptr_t> aliases_;           // registration's device address -> base
  std::unique_ptr<ipc::BulkAllocator> allocator_;  // over the host region, on first use
  uintptr_t region_base_ = 0;
};

}  // namespace tally::client
