// Host functions of one client, run in the client in stream order: the backend stream reaches a
// host function of ours (cuLaunchHostFunc / cuStreamAddCallback), which asks the client to run
// the application's function (RunHostCallback on the callback ring) and blocks the stream until
// the client answers HostCallbackDone for its gate, so that later work on the stream waits for
// the function as in CUDA. When the client goes, waiting host functions return at once and later
// ones do nothing.
//
// With NVIDIA's driver, host functions of all streams may run on one driver thread ("host
// functions ... may be serialized", CUDA Runtime API, cudaLaunchHostFunc): a client's slow host
// function can then delay other clients' host functions, never their kernels.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "ipc/cuda_calls.h"
#include "ipc/spsc_ring.h"
#include "server/backend/backend.h"
#include "server/dispatcher.h"

namespace tally::server {

class HostCallbacks : public std::enable_shared_from_this<HostCallbacks> {
 public:
  // Where the requests to run functions go; before this, host functions are refused.
  void Attach(ipc::RingProducer* ring, ipc::WaitOptions wait);
  // The command that puts the host function of `request` on `stream`.
  absl::StatusOr<Command> MakeCommand(const DriverApi& api, CUstream stream,
                                      const ipc::LaunchHostFuncRequest& request);
  // The client ran the function of `gate`: its stream goes on. INVALID_VALUE for a gate that no
  // host function waits for.
  absl::Status Complete(uint64_t gate);
  // The client is gone: nothing more is sent, waiting host functions return.
  void Close();
  // Whether a host function waits for the client's answer right now.
  bool Waiting();

 private:
  struct Call;
  static void CUDA_CB RunHostFunc(void* call);
  static void CUDA_CB RunStreamCallback(CUstream stream, CUresult status, void* call);
  // On the backend's callback thread: asks the client and waits for its answer.
  void Run(ipc::RunHostCallback message);

  std::mutex mutex_;
  std::condition_variable completed_;
  absl::flat_hash_set<uint64_t> waiting_;  // gates sent and not yet answered
  uint64_t next_gate_ = 1;
  bool closed_ = false;

  std::mutex ring_mutex_;  // the callback ring has one producer; callbacks may run on several
  ipc::RingProducer* ring_ = nullptr;
  ipc::WaitOptions wait_;
};

}  // namespace tally::server
