// The application's live streams as the shim created them: flags, clamped priority, context and
// id, answered locally (cuStreamGetFlags/Priority/Ctx/Id and their runtime forms), and the check
// that a stream handle names a live stream for calls that must fail at once on a bad one
// (cudaLaunchHostFunc, cudaStreamAddCallback), which would otherwise only hear the server's
// verdict at the next synchronising call. Launches and copies do not consult it: the server
// checks their streams, and their hot path takes no lock.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace tally::client {

struct StreamInfo {
  unsigned int flags = 0;       // CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING (= cudaStream* flags)
  int priority = 0;             // clamped to the device's range, as CUDA stores it
  CUcontext context = nullptr;  // current on the creating thread
  unsigned long long id = 0;    // unique for the life of the process (cuStreamGetId)
};

class Streams {
 public:
  static Streams& Get();

  // Records a stream the server created; assigns its id.
  void Add(cudaStream_t stream, StreamInfo info);
  // Forgets a stream (before the server destroys it, so that its handle cannot be reused
  // meanwhile by another thread's new stream and then be forgotten instead).
  void Remove(cudaStream_t stream);
  // cudaDeviceReset destroyed every stream.
  void Clear();

  // A live stream's record; the special handles (NULL, cudaStreamLegacy, cudaStreamPerThread,
  // all the client's default stream) have flags 0, priority 0, the calling thread's current
  // context and the default stream's id. CUDA_ERROR_INVALID_HANDLE (=
  // cudaErrorInvalidResourceHandle) for any other handle.
  absl::StatusOr<StreamInfo> Find(cudaStream_t stream);

 private:
  static constexpr unsigned long long kDefaultStreamId = 1;

  Streams() = default;

  std::mutex mutex_;
  unsigned long long next_id_ = kDefaultStreamId + 1;
  absl::flat_hash_map<cudaStream_t, StreamInfo> live_;
};

}  // namespace tally::client
