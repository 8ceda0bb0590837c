// The memory of graph allocation nodes (cudaGraphAddMemAllocNode, or a cudaMallocAsync captured
// into a graph). CUDA gives such a node a fixed address for the graph's life and backs it while
// the graph runs; Tally reserves the memory when the node is made (counted in the client's
// quota like any allocation) and releases it when the last graph, clone or instantiation holding
// the node is destroyed. The graph's free nodes, and the application's cudaFree / cudaFreeAsync
// of that address, leave it reserved, which CUDA's rules make invisible: the memory may only be
// used between the allocation and the free, and a graph is relaunched only after them.
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"

namespace tally::client {

class GraphAllocation {
 public:
  // cudaErrorMemoryAllocation where the device (or the client's quota) has no room.
  static absl::StatusOr<std::shared_ptr<GraphAllocation>> Reserve(size_t bytes);
  ~GraphAllocation();
  GraphAllocation(const GraphAllocation&) = delete;
  GraphAllocation& operator=(const GraphAllocation&) = delete;

  void* pointer() const { return pointer_; }
  // Whether `pointer` is the start of a live graph allocation.
  static bool Owns(const void* pointer);
  // The bytes reserved by every live graph allocation (cudaGraphMemAttrUsedMemCurrent).
  static size_t Reserved();

 private:
  GraphAllocation(void* pointer, size_t bytes) : pointer_(pointer), bytes_(bytes) {}
  void* pointer_;
  size_t bytes_;
};

}  // namespace tally::client
