// Stream capture queries (CUDA Runtime API, "Stream Management"): CUDA graphs are not provided
// yet, so no stream is ever capturing; the queries say so truthfully instead of failing, which
// libraries (cuBLAS, PyTorch) rely on before they enqueue work. The thread's capture mode is
// kept, as it decides what a capture would allow.
#include <cuda_runtime_api.h>

#include "client/entry.h"
#include "client/handles.h"
#include "client/status.h"
#include "client/streams.h"
#include "common/status.h"

using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::Run;
using tally::client::Streams;

namespace {

thread_local cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

// The stream must be one of the client's (or a default stream); it never captures.
absl::Status NotCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  TALLY_RETURN_IF_ERROR(CheckOut(status));
  TALLY_RETURN_IF_ERROR(Streams::Get().Find(stream).status());
  *status = cudaStreamCaptureStatusNone;
  return absl::OkStatus();
}

}  // namespace

extern "C" {

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  return Run(__func__, [&] { return NotCapturing(stream, status); });
}

// The other outputs are only meaningful while the stream captures (CUDA Runtime API,
// cudaStreamGetCaptureInfo), which it never does: they are left as they are.
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                     unsigned long long*, cudaGraph_t*, const cudaGraphNode_t**,
                                     const cudaGraphEdgeData**, size_t*) {
  return Run(__func__, [&] { return NotCapturing(stream, status); });
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  return Run(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(mode));
    if (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
        *mode != cudaStreamCaptureModeRelaxed) {
      return CudaError(cudaErrorInvalidValue, "unknown stream capture mode");
    }
    const cudaStreamCaptureMode previous = capture_mode;
    capture_mode = *mode;
    *mode = previous;
    return absl::OkStatus();
  });
}

}  // extern "C"
