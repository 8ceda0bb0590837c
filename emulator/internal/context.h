// A CUDA context: its streams (with the legacy NULL stream's implicit synchronisation), its
// sticky error, and the flags it was created with. Memory, events and modules are tracked by the
// Driver by owner context id so that destroying a context releases them.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "emulator/internal/device_heap.h"
#include "emulator/internal/stream.h"

namespace tally::emu {

// Stream priorities: lower numbers are higher priorities (cuCtxGetStreamPriorityRange).
inline constexpr int kLeastStreamPriority = 0;
inline constexpr int kGreatestStreamPriority = -5;

class Context : public std::enable_shared_from_this<Context> {
 public:
  Context(uint64_t id, unsigned flags);
  ~Context();

  // Creates the NULL stream (a context is usable only while active; the primary context is
  // inactive until retained, CUDA driver API "Primary Context Management").
  void Activate();
  // Waits for all work, then stops every stream. The caller releases memory, events, modules.
  void Deactivate();
  bool active() const { return active_.load(std::memory_order_acquire); }

  std::shared_ptr<Stream> CreateStream(unsigned flags, int priority);
  // The stream accepts no more work; it is joined once its queued work has run.
  void RetireStream(const std::shared_ptr<Stream>& stream);
  const std::shared_ptr<Stream>& null_stream() const { return null_stream_; }

  // Enqueues `work` on `stream` after `extra` and after what CUDA's legacy default stream
  // orders it behind: work on the NULL stream waits for all earlier work of blocking streams,
  // and work on a blocking stream waits for earlier NULL-stream work (CUDA driver API, "Stream
  // synchronization behavior"; CU_STREAM_NON_BLOCKING streams opt out). Blocks while the
  // stream is full (Stream::WaitForRoom), holding no lock meanwhile.
  uint64_t Enqueue(const std::shared_ptr<Stream>& stream, std::vector<StreamPoint> extra,
                   std::function<void()> work);
  // Blocks until all work enqueued so far on every stream of this context is done.
  void Synchronize();

  // An error from asynchronous work that makes the context unusable (e.g. ILLEGAL_ADDRESS).
  void SetStickyError(CUresult error);
  CUresult sticky_error() const { return sticky_error_.load(std::memory_order_acquire); }

  // cuCtxSetLimit values by CUlimit (defaults restored when the context is activated).
  size_t limit(CUlimit which) const { return limits_[which].load(std::memory_order_relaxed); }
  void set_limit(CUlimit which, size_t value) { limits_[which].store(value); }
  // Set once a kernel that calls malloc/free was launched: the heap size is fixed from then on.
  bool heap_fixed() const { return heap_fixed_.load(std::memory_order_acquire); }
  void fix_heap() { heap_fixed_.store(true, std::memory_order_release); }
  // The device-side malloc heap (created on first use; a fresh one after re-activation).
  std::shared_ptr<DeviceHeap> heap(DeviceMemory& memory);

  uint64_t id() const { return id_; }
  // The handle the driver's context table gave it (set once, right after insertion).
  CUcontext handle() const { return handle_; }
  void set_handle(CUcontext handle) { handle_ = handle; }
  unsigned flags() const { return flags_.load(); }
  void set_flags(unsigned flags) { flags_.store(flags); }

 private:
  void ReapRetiredLocked();

  const uint64_t id_;
  CUcontext handle_ = nullptr;
  std::atomic<unsigned> flags_;
  std::atomic<bool> active_{false};
  std::atomic<CUresult> sticky_error_{CUDA_SUCCESS};
  std::array<std::atomic<size_t>, CU_LIMIT_MAX> limits_{};
  std::atomic<bool> heap_fixed_{false};
  std::shared_ptr<DeviceHeap> heap_;  // guarded by mu_
  std::mutex mu_;  // streams_, retired_, and the order of enqueues across streams
  std::shared_ptr<Stream> null_stream_;
  std::vector<std::shared_ptr<Stream>> streams_;  // created streams incl. retired ones
  std::vector<std::shared_ptr<Stream>> retired_;
};

}  // namespace tally::emu
