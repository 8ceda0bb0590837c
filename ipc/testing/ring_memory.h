// Test helper: suitably aligned private memory holding one ring, as a segment would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "ipc/spsc_ring.h"

namespace tally::ipc::testing {

class RingMemory {
 public:
  explicit RingMemory(uint64_t capacity)
      : capacity_(capacity),
        region_(static_cast<std::byte*>(
            ::operator new (RingRegionSize(capacity), std::align_val_t{alignof(RingControl)}))) {
    InitRing(region_.get());
  }

  uint64_t capacity() const { return capacity_; }
  void* region() const { return region_.get(); }
  RingControl& control() const { return *static_cast<RingControl*>(region()); }
  std::byte* data() const { return region_.get() + sizeof(RingControl); }
  RingProducer Producer() const { return RingProducer(region(), capacity_); }
  RingConsumer Consumer() const { return RingConsumer(region(), capacity_); }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const {
      ::operator delete (p, std::align_val_t{alignof(RingControl)});
    }
  };
  uint64_t capacity_;
  std::unique_ptr<std::byte, AlignedDelete> region_;
};

}  // namespace tally::ipc::testing
