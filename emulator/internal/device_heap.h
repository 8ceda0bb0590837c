// The heap behind device-side malloc/free (CUDA C++ Programming Guide, "Dynamic Global Memory
// Allocation and Operations"): at most CU_LIMIT_MALLOC_HEAP_SIZE bytes per context, malloc
// returns NULL beyond that. Every block is an allocation of its own in the device memory table,
// so kernel accesses to it are bounds-checked like any other, and it lives until device-side
// free or the context's destruction.
#pragma once

#include <atomic>
#include <cstdint>

#include "emulator/internal/device_memory.h"

namespace tally::emu {

class DeviceHeap {
 public:
  DeviceHeap(DeviceMemory& memory, uint64_t owner) : memory_(memory), owner_(owner) {}

  // Fixes the capacity (cuCtxSetLimit refuses changes once a kernel that uses the heap ran).
  void set_capacity(uint64_t bytes) { capacity_.store(bytes, std::memory_order_relaxed); }
  // The address of `size` fresh bytes of `tenant`'s (the launch's, exec::LaunchSetup), or 0 when
  // the heap (or device memory) is exhausted.
  uint64_t Malloc(uint64_t size, uint64_t tenant);
  // Frees a block Malloc returned for `tenant`; false for anything else (0 is fine and does
  // nothing).
  bool Free(uint64_t address, uint64_t tenant);

 private:
  DeviceMemory& memory_;
  const uint64_t owner_;
  std::atomic<uint64_t> capacity_{0};
  std::atomic<uint64_t> used_{0};  // bytes charged, each block rounded to the arena alignment
};

}  // namespace tally::emu
