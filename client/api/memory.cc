// Device memory: allocation, copies and memsets. Host data travels through the bulk area in
// chunks, so copies of any size work with a bounded area; copies touching host memory return
// when the data has arrived, as cudaMemcpy from pageable memory does (CUDA Runtime API, "API
// synchronization behavior"), also in their Async forms.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "client/channel.h"
#include "client/entry.h"
#include "client/handles.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::DevicePointer;
using tally::client::Run;
using tally::client::StreamHandle;
namespace ipc = tally::ipc;

namespace {

// Large enough to amortise a round trip, small enough that several threads copy at once.
constexpr size_t kMaxChunk = size_t{4} << 20;

// This process's allocations, to tell device from host pointers for cudaMemcpyDefault (with
// unified addressing the kind follows from the pointer, CUDA Runtime API, cudaMemcpy).
class Allocations {
 public:
  static Allocations& Get() {
    static Allocations* const allocations = new Allocations;
    return *allocations;
  }
  void Add(uintptr_t base, size_t size) {
    std::lock_guard lock(mutex_);
    bases_[base] = size;
  }
  void Remove(uintptr_t base) {
    std::lock_guard lock(mutex_);
    bases_.erase(base);
  }
  // Whether [pointer, pointer + size) lies inside one allocation of this process.
  bool Contains(const void* pointer, size_t size) {
    const auto address = reinterpret_cast<uintptr_t>(pointer);
    std::lock_guard lock(mutex_);
    auto it = bases_.upper_bound(address);
    if (it == bases_.begin()) return false;
    --it;
    const uintptr_t offset = address - it->first;
    return offset < it->second && size <= it->second - offset;
  }
  bool IsDevice(const void* pointer) { return Contains(pointer, 1); }

 private:
  std::mutex mutex_;
  std::map<uintptr_t, size_t> bases_;
};

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
  if (Allocations::Get().Contains(pointer, count)) return absl::OkStatus();
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

absl::Status Copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                  cudaStream_t stream) {
  if (count == 0) return absl::OkStatus();
  if (dst == nullptr || src == nullptr) {
    return CudaError(cudaErrorInvalidValue, "null copy source or destination");
  }
  if (kind == cudaMemcpyDefault) {
    const bool device_dst = Allocations::Get().IsDevice(dst);
    const bool device_src = Allocations::Get().IsDevice(src);
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

absl::Status Memset(void* dst, int value, size_t count, cudaStream_t stream) {
  if (count == 0) return absl::OkStatus();
  TALLY_RETURN_IF_ERROR(CheckDeviceRange(dst, count));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Post(ipc::MemsetRequest{.value = static_cast<uint32_t>(value),
                                          .dst = DevicePointer(dst),
                                          .size = count,
                                          .stream = StreamHandle(stream)});
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** pointer, size_t size) {
  return Run(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pointer));
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    TALLY_ASSIGN_OR_RETURN(auto answer, channel->Call(ipc::MemAllocRequest{.size = size}));
    *pointer = reinterpret_cast<void*>(answer.fields.device_ptr);
    if (size > 0) Allocations::Get().Add(answer.fields.device_ptr, size);
    return absl::OkStatus();
  });
}

cudaError_t cudaFree(void* pointer) {
  return Run(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    TALLY_RETURN_IF_ERROR(
        channel->Call(ipc::MemFreeRequest{.device_ptr = DevicePointer(pointer)}).status());
    Allocations::Get().Remove(DevicePointer(pointer));
    return absl::OkStatus();
  });
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
