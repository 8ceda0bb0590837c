// The application's live streams as the shim created them: flags, clamped priority, context and
// id, answered locally (cuStreamGetFlags/Priority/Ctx/Id and their runtime forms), and the check
// that a stream handle names a live stream for calls that must fail at once on a bad one
// (cudaLaunchHostFunc, cudaStreamAddCallback), which would otherwise only hear the server's
// verdict at the next synchronising call. Launches and copies do not consult it: the server
// checks their streams, and their hot path takes no lock.
//
// Also each host thread's per-thread default stream (CUDA Runtime API, "Default stream" and
// "Per-thread default stream"): a blocking stream of its own, created on the server at the
// thread's first use of cudaStreamPerThread (or of the NULL stream in a _ptsz/_ptds call, what a
// program built with --default-stream per-thread makes) and destroyed when the thread exits.
// Being blocking, the server orders it with the legacy default stream and with nothing else
// (Session::StreamForWork), which is CUDA's rule for it.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "client/stream_attributes.h"

namespace tally::client {

struct StreamInfo {
  unsigned int flags = 0;       // CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING (= cudaStream* flags)
  StreamPriority priority;      // clamped to the device's range, as CUDA stores it
  CUcontext context = nullptr;  // current on the creating thread
  unsigned long long id = 0;    // unique for the life of the process (cuStreamGetId)
  StreamAttributes attributes;  // cudaStreamSetAttribute's, kept here (stream_attributes.h)
};

class Streams {
 public:
  static Streams& Get();

  // Creates a stream on the server (priority clamped to the device's range, as CUDA clamps it)
  // and records it, with the calling thread's current context.
  absl::StatusOr<cudaStream_t> Create(unsigned int flags, StreamPriority priority);
  // Forgets a stream, then destroys it on the server (forgotten first, so that its handle cannot
  // be reused meanwhile by another thread's new stream and then be forgotten instead). The
  // special handles (NULL, cudaStreamLegacy, cudaStreamPerThread) are CUDA_ERROR_INVALID_HANDLE.
  absl::Status Destroy(cudaStream_t stream);
  // Destroy, unless a reset since `generation` destroyed every stream already.
  absl::Status DestroyIfCurrent(cudaStream_t stream, uint64_t generation);
  // cudaDeviceReset destroyed every stream, per-thread ones included.
  void Clear();
  // The calling thread's per-thread default stream, created at first use (again after a reset).
  absl::StatusOr<cudaStream_t> PerThread();

  // A live stream's record (for cudaStreamPerThread, the thread's per-thread stream's). The
  // legacy default stream (NULL, cudaStreamLegacy) has flags 0, priority 0, the calling thread's
  // current context and the default stream's id. CUDA_ERROR_INVALID_HANDLE (=
  // cudaErrorInvalidResourceHandle) for any other handle.
  absl::StatusOr<StreamInfo> Find(cudaStream_t stream);
  // Runs `change` on a stream's record (the legacy default stream's too), under the lock.
  absl::Status Update(cudaStream_t stream, absl::FunctionRef<absl::Status(StreamInfo&)> change);

 private:
  static constexpr unsigned long long kDefaultStreamId = 1;

  Streams() = default;
  static StreamInfo LegacyStreamInfo() {
    StreamInfo info;
    info.id = kDefaultStreamId;
    return info;
  }
  void Add(cudaStream_t stream, StreamInfo info);
  void Remove(cudaStream_t stream);
  // The record of `stream` (the legacy default stream's for NULL and cudaStreamLegacy); the
  // caller holds mutex_.
  absl::StatusOr<StreamInfo*> Locate(cudaStream_t stream);

  std::mutex mutex_;
  unsigned long long next_id_ = kDefaultStreamId + 1;
  absl::flat_hash_map<cudaStream_t, StreamInfo> live_;
  StreamInfo legacy_ = LegacyStreamInfo();  // its context is the caller's
  // Bumped by Clear: a thread's per-thread stream of an older generation is gone.
  std::atomic<uint64_t> generation_ = 0;
};

// While one lives on a thread, the NULL stream means that thread's per-thread default stream:
// the _ptsz/_ptds entry points (api/per_thread.cc) run their runtime counterparts inside one.
class PerThreadDefaultScope {
 public:
  PerThreadDefaultScope();
  ~PerThreadDefaultScope();
  PerThreadDefaultScope(const PerThreadDefaultScope&) = delete;
  PerThreadDefaultScope& operator=(const PerThreadDefaultScope&) = delete;
  // Whether the calling thread is inside one.
  static bool Active();
};

}  // namespace tally::client
