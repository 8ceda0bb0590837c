#include "client/graph_memory.h"

#include <atomic>
#include <mutex>

#include "absl/container/flat_hash_set.h"
#include "client/copy.h"
#include "client/status.h"
#include "common/log.h"
#include "common/status.h"

namespace tally::client {
namespace {

struct Allocations {
  std::mutex mutex;
  absl::flat_hash_set<const void*> live;
  size_t bytes = 0;
};

Allocations& Live() {
  static Allocations* const allocations = new Allocations;
  return *allocations;
}

}  // namespace

absl::StatusOr<std::shared_ptr<GraphAllocation>> GraphAllocation::Reserve(size_t bytes) {
  if (bytes == 0) return CudaError(cudaErrorInvalidValue, "a graph allocation of 0 bytes");
  void* pointer = nullptr;
  TALLY_RETURN_IF_ERROR(AllocateDevice(&pointer, bytes));
  std::shared_ptr<GraphAllocation> allocation(new GraphAllocation(pointer, bytes));
  std::lock_guard lock(Live().mutex);
  Live().live.insert(pointer);
  Live().bytes += bytes;
  return allocation;
}

GraphAllocation::~GraphAllocation() {
  {
    std::lock_guard lock(Live().mutex);
    Live().live.erase(pointer_);
    Live().bytes -= bytes_;
  }
  if (const absl::Status status = ReleaseDevice(pointer_); !status.ok()) {
    TALLY_LOG_WARN("tally: releasing a graph's memory failed: {}", status.ToString());
  }
}

bool GraphAllocation::Owns(const void* pointer) {
  std::lock_guard lock(Live().mutex);
  return Live().live.contains(pointer);
}

size_t GraphAllocation::Reserved() {
  std::lock_guard lock(Live().mutex);
  return Live().bytes;
}

}  // namespace tally::client
