// Host functions of one client (cudaLaunchHostFunc, cudaStreamAddCallback), run in the client in
// stream order without registering anything with the driver. Where the function stands on its
// stream, the dispatcher records an event and puts a cuStreamWaitValue32 on a gate word of the
// stream (page-locked memory mapped for the device); once the event has completed it asks the
// client to run the function (RunHostCallback on the callback ring), and the client's
// HostCallbackDone for that gate makes the server write the word from the host, which lets the
// stream go on. Later work of the stream waits for the function, as in CUDA; other streams and
// other clients do not; and nothing the driver runs waits for the server or a client (CUDA
// forbids CUDA calls in host functions and may run all of them on one thread). The word is
// written by the host, not by a stream operation, which could queue behind the very wait it
// should end.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ipc/cuda_calls.h"
#include "ipc/spsc_ring.h"
#include "server/backend/backend.h"

namespace tally::server {

class HostCallbacks;

// A stream's gate word: host functions on one stream complete in order, so each waits for the
// word to reach its own generation (CU_STREAM_WAIT_VALUE_GEQ).
struct StreamGate {
  int slot = -1;  // in HostCallbacks' words; -1 until the stream's first host function
  uint32_t* word = nullptr;  // the slot's word
  uint32_t generation = 0;   // of the stream's last host function
  // Whether a host function queued before now (generation `generation`) has not run yet.
  static bool Closed(const uint32_t* word, uint32_t generation);
};

// Where a host function's wait is released: the word (host and device addresses) and the value.
struct Gate {
  uint32_t* word = nullptr;
  CUdeviceptr device = 0;
  uint32_t generation = 0;
  // Lets the stream go on (any thread; idempotent).
  void Open() const;
};

// A queued host function: the stream it follows, its gate and what the client is asked to run.
struct HostFunction {
  CUstream stream = nullptr;
  Gate gate;
  ipc::RunHostCallback message{};
  std::shared_ptr<HostCallbacks> callbacks;
};

class HostCallbacks : public std::enable_shared_from_this<HostCallbacks> {
 public:
  explicit HostCallbacks(const DriverApi& api) : api_(api) {}
  HostCallbacks(const HostCallbacks&) = delete;
  HostCallbacks& operator=(const HostCallbacks&) = delete;
  // The gate words are freed: every stream that waited on them must have finished.
  ~HostCallbacks();

  // Where the requests to run functions go; before this, host functions are refused.
  void Attach(ipc::RingProducer* ring, ipc::WaitOptions wait);
  // The host function of `request`, to be queued on `stream` (whose gate is `gate`).
  absl::StatusOr<HostFunction> Prepare(CUstream stream, StreamGate& gate,
                                       const ipc::LaunchHostFuncRequest& request);
  // Asks the client to run `function`, without waiting for room in the ring (the dispatch
  // thread calls it). OK: sent; ResourceExhausted: the ring is full, try again later;
  // Unavailable: the client is gone (its gate is opened).
  absl::Status TrySend(const HostFunction& function, CUresult status);
  // The client ran the function of `gate`: its stream goes on. INVALID_VALUE for a gate that no
  // function waits for.
  absl::Status Complete(uint64_t gate);
  // The client is gone: nothing more is sent, and every gate sent is opened.
  void Close();
  // Whether a host function waits for the client's answer right now.
  bool Waiting();

 private:
  // Page-locked, device-mapped words, one per stream that ever had a host function.
  struct Page {
    uint32_t* host = nullptr;
    CUdeviceptr device = 0;
  };
  static constexpr size_t kWordsPerPage = 1024;
  absl::StatusOr<int> NewSlot();

  const DriverApi& api_;
  std::mutex mutex_;
  ipc::RingProducer* ring_ = nullptr;  // the callback ring has one producer: under mutex_
  ipc::WaitOptions wait_;
  std::vector<Page> pages_;
  int slots_ = 0;
  absl::flat_hash_map<uint64_t, Gate> sent_;  // by gate id: asked, not yet answered
  uint64_t next_gate_ = 1;
  bool closed_ = false;
};

}  // namespace tally::server
