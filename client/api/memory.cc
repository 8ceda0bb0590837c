// Device memory entry points: allocation, copies and memsets (the copying is in copy.cc).
#include <cuda_runtime_api.h>

#include <algorithm>

#include "client/channel.h"
#include "client/copy.h"
#include "client/entry.h"
#include "client/handles.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::Copy;
using tally::client::Copy2D;
using tally::client::DevicePointer;
using tally::client::DeviceRanges;
using tally::client::Memset;
using tally::client::Run;
namespace ipc = tally::ipc;

namespace {

absl::Status Allocate(void** pointer, size_t size) {
  TALLY_RETURN_IF_ERROR(CheckOut(pointer));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(auto answer, channel->Call(ipc::MemAllocRequest{.size = size}));
  *pointer = reinterpret_cast<void*>(answer.fields.device_ptr);
  if (size > 0) DeviceRanges::Get().Add(answer.fields.device_ptr, size);
  return absl::OkStatus();
}

// The server issues the client's queued work before freeing, so freeing also keeps the order
// cudaFreeAsync promises.
absl::Status Free(void* pointer) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_RETURN_IF_ERROR(
      channel->Call(ipc::MemFreeRequest{.device_ptr = DevicePointer(pointer)}).status());
  DeviceRanges::Get().Remove(DevicePointer(pointer));
  return absl::OkStatus();
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** pointer, size_t size) {
  return Run(__func__, [&] { return Allocate(pointer, size); });
}

cudaError_t cudaFree(void* pointer) {
  return Run(__func__, [&] { return Free(pointer); });
}

// Stream-ordered allocation (CUDA Runtime API, "Stream Ordered Memory Allocator"): the server
// allocates at once, which satisfies "usable by work enqueued after it on the stream"; pools
// are not modelled.
cudaError_t cudaMallocAsync(void** pointer, size_t size, cudaStream_t) {
  return Run(__func__, [&] { return Allocate(pointer, size); });
}

cudaError_t cudaFreeAsync(void* pointer, cudaStream_t) {
  return Run(__func__, [&] { return Free(pointer); });
}

// Rows start at multiples of the device's texture alignment, as cudaMallocPitch promises
// (CUDA Runtime API, cudaMallocPitch: "the pitch ... is guaranteed to satisfy alignment").
cudaError_t cudaMallocPitch(void** pointer, size_t* pitch, size_t width, size_t height) {
  return Run(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pitch));
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    const auto alignment = static_cast<size_t>(std::max(
        1, channel->device()
               .attributes[static_cast<size_t>(ipc::SnapshotAttribute::k_TEXTURE_ALIGNMENT)]));
    *pitch = (width + alignment - 1) / alignment * alignment;
    return Allocate(pointer, *pitch * height);
  });
}

cudaError_t cudaMemcpy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                         size_t width, size_t height, cudaMemcpyKind kind) {
  return Run(__func__,
             [&] { return Copy2D(dst, dst_pitch, src, src_pitch, width, height, kind, nullptr); });
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream) {
  return Run(__func__,
             [&] { return Copy2D(dst, dst_pitch, src, src_pitch, width, height, kind, stream); });
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return Run(__func__, [&] { return Copy(dst, src, count, kind, nullptr); });
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return Run(__func__, [&] { return Copy(dst, src, count, kind, stream); });
}

cudaError_t cudaMemset(void* dst, int value, size_t count) {
  return Run(__func__, [&] { return Memset(dst, value, count, nullptr); });
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t stream) {
  return Run(__func__, [&] { return Memset(dst, value, count, stream); });
}

}  // extern "C"
