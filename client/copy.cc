// Chunked copies through the bulk area, and memsets.
#include "client/copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "client/channel.h"
#include "client/handles.h"
#include "common/status.h"

namespace tally::client {
namespace {

namespace ipc = tally::ipc;

// Large enough to amortise a round trip, small enough that several threads copy at once.
constexpr size_t kMaxChunk = size_t{4} << 20;

// A bulk block of up to `wanted` bytes; smaller when other threads hold much of the area.
absl::StatusOr<ipc::BulkRef> AllocateChunk(Channel& channel, size_t wanted) {
  for (size_t size = std::min(wanted, kMaxChunk); size > 0; size /= 2) {
    if (absl::StatusOr<ipc::BulkRef> block = channel.bulk().Allocate(size); block.ok()) {
      return block;
    }
  }
  return CudaError(cudaErrorMemoryAllocation, "the bulk area is exhausted");
}

// One-way calls are checked here too, so that a bad pointer fails the call itself rather than
// the next synchronising one (the server checks again: it trusts no client).
absl::Status CheckDeviceRange(const void* pointer, size_t count) {
  if (DeviceRanges::Get().Contains(pointer, count)) return absl::OkStatus();
  return CudaError(cudaErrorInvalidValue, "not a range of device memory allocated here");
}

absl::Status CopyToDevice(Channel& channel, uint64_t dst, const std::byte* src, size_t count,
                          uint64_t stream) {
  for (size_t done = 0; done < count;) {
    TALLY_ASSIGN_OR_RETURN(ipc::BulkRef block, AllocateChunk(channel, count - done));
    std::memcpy(channel.bulk().Bytes(block).data(), src + done, block.size);
    auto answer =
        channel.Call(ipc::MemcpyHtoDRequest{.dst = dst + done, .stream = stream, .src = block});
    channel.bulk().Free(block);
    TALLY_RETURN_IF_ERROR(answer.status());
    done += block.size;
  }
  return absl::OkStatus();
}

absl::Status CopyToHost(Channel& channel, std::byte* dst, uint64_t src, size_t count,
                        uint64_t stream) {
  for (size_t done = 0; done < count;) {
    TALLY_ASSIGN_OR_RETURN(ipc::BulkRef block, AllocateChunk(channel, count - done));
    auto answer =
        channel.Call(ipc::MemcpyDtoHRequest{.src = src + done, .stream = stream, .dst = block});
    if (answer.ok()) std::memcpy(dst + done, channel.bulk().Bytes(block).data(), block.size);
    channel.bulk().Free(block);
    TALLY_RETURN_IF_ERROR(answer.status());
    done += block.size;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                  cudaStream_t stream) {
  if (count == 0) return absl::OkStatus();
  if (dst == nullptr || src == nullptr) {
    return CudaError(cudaErrorInvalidValue, "null copy source or destination");
  }
  if (kind == cudaMemcpyDefault) {
    const bool device_dst = DeviceRanges::Get().IsDevice(dst);
    const bool device_src = DeviceRanges::Get().IsDevice(src);
    kind = device_src ? (device_dst ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                      : (device_dst ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  }
  if (kind == cudaMemcpyHostToHost) {
    std::memmove(dst, src, count);
    return absl::OkStatus();
  }
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return CopyToDevice(*channel, DevicePointer(dst), static_cast<const std::byte*>(src), count,
                          StreamHandle(stream));
    case cudaMemcpyDeviceToHost:
      return CopyToHost(*channel, static_cast<std::byte*>(dst), DevicePointer(src), count,
                        StreamHandle(stream));
    case cudaMemcpyDeviceToDevice:
      TALLY_RETURN_IF_ERROR(CheckDeviceRange(dst, count));
      TALLY_RETURN_IF_ERROR(CheckDeviceRange(src, count));
      return channel->Post(ipc::MemcpyDtoDRequest{.dst = DevicePointer(dst),
                                                  .src = DevicePointer(src),
                                                  .size = count,
                                                  .stream = StreamHandle(stream)});
    default:
      return CudaError(cudaErrorInvalidMemcpyDirection, "unknown cudaMemcpyKind");
  }
}

absl::Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                    size_t height, cudaMemcpyKind kind, cudaStream_t stream) {
  if (width > dst_pitch || width > src_pitch) {
    return CudaError(cudaErrorInvalidPitchValue, "a pitch is smaller than the row width");
  }
  if (dst_pitch == width && src_pitch == width) {
    return Copy(dst, src, width * height, kind, stream);
  }
  for (size_t row = 0; row < height; ++row) {
    TALLY_RETURN_IF_ERROR(Copy(static_cast<std::byte*>(dst) + row * dst_pitch,
                               static_cast<const std::byte*>(src) + row * src_pitch, width, kind,
                               stream));
  }
  return absl::OkStatus();
}

absl::Status Memset(void* dst, int value, size_t count, cudaStream_t stream) {
  if (count == 0) return absl::OkStatus();
  TALLY_RETURN_IF_ERROR(CheckDeviceRange(dst, count));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Post(ipc::MemsetRequest{.value = static_cast<uint32_t>(value),
                                          .dst = DevicePointer(dst),
                                          .size = count,
                                          .stream = StreamHandle(stream)});
}

}  // namespace tally::client
