// Device memory: allocation in the client's table, and copies and memsets whose every device
// range is checked against that table before anything is issued.
#include <cuda.h>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"
#include "server/handlers/memset.h"
#include "server/handlers/release.h"
#include "server/handlers/waiting.h"

namespace tally::server {
absl::StatusOr<Reply<ipc::MemAllocResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemAllocRequest>& request) {
  // cudaMalloc of 0 bytes succeeds with a null pointer (CUDA Runtime API, cudaMalloc).
  if (request.fields.size == 0) return Reply<ipc::MemAllocResponse>{};
  TALLY_ASSIGN_OR_RETURN(const CUdeviceptr pointer, session.Allocate(request.fields.size));
  return Reply<ipc::MemAllocResponse>{{.device_ptr = pointer}, {}};
}

// cudaFree waits for the work that may still use the memory (and cuMemFree may wait for the
// device), so it finishes on a waiter thread; the range leaves the client's table at once.
absl::StatusOr<Deferred<ipc::MemFreeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemFreeRequest>& request) {
  const uint64_t pointer = request.fields.device_ptr;
  if (pointer == 0) return ReleaseAfterIssued<ipc::MemFreeResponse>(session, {});  // cudaFree(NULL)
  TALLY_ASSIGN_OR_RETURN(std::vector<uint64_t> released, FreeAllocation(session, pointer, 0));
  return ReleaseAfterIssued<ipc::MemFreeResponse>(session, std::move(released));
}

namespace {

// A copy between the device range [device, device + bulk.size) and the bulk block, issued in the
// client's order on the stream and waited for: the bulk block is only valid until the response
// (cudaMemcpy semantics for pageable memory). `copy(api, host, stream)` issues it.
template <typename Response, typename Copy>
absl::StatusOr<Deferred<Response>> CopyWithHost(Session& session, uint64_t device,
                                                const ipc::BulkRef& bulk, uint64_t stream_handle,
                                                Copy copy) {
  TALLY_RETURN_IF_ERROR(session.CheckDeviceRange(device, bulk.size));
  TALLY_ASSIGN_OR_RETURN(std::span<std::byte> host, session.ResolveBulk(bulk));
  TALLY_ASSIGN_OR_RETURN(StreamRef held, session.HoldStream(stream_handle));
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(stream_handle));
  const DriverApi* api = &session.api();
  session.Enqueue(stream, [=] { return copy(*api, host, stream); });
  return AfterStreams<Response>(session, {std::move(held)});
}

}  // namespace

absl::StatusOr<Deferred<ipc::MemcpyHtoDResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemcpyHtoDRequest>& request) {
  const uint64_t dst = request.fields.dst;
  return CopyWithHost<ipc::MemcpyHtoDResponse>(
      session, dst, request.fields.src, request.fields.stream,
      [dst](const DriverApi& api, std::span<std::byte> src, CUstream stream) {
        return api.cuMemcpyHtoDAsync(dst, src.data(), src.size(), stream);
      });
}

absl::StatusOr<Deferred<ipc::MemcpyDtoHResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemcpyDtoHRequest>& request) {
  const uint64_t src = request.fields.src;
  return CopyWithHost<ipc::MemcpyDtoHResponse>(
      session, src, request.fields.dst, request.fields.stream,
      [src](const DriverApi& api, std::span<std::byte> dst, CUstream stream) {
        return api.cuMemcpyDtoHAsync(dst.data(), src, dst.size(), stream);
      });
}

absl::Status Handle(Session& session, const ipc::Decoded<ipc::MemcpyDtoDRequest>& request) {
  const ipc::MemcpyDtoDRequest& r = request.fields;
  TALLY_RETURN_IF_ERROR(session.CheckDeviceRange(r.dst, r.size));
  TALLY_RETURN_IF_ERROR(session.CheckDeviceRange(r.src, r.size));
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(r.stream));
  const DriverApi* api = &session.api();
  session.Enqueue(stream, [=] { return api->cuMemcpyDtoDAsync(r.dst, r.src, r.size, stream); });
  return absl::OkStatus();
}

absl::Status Handle(Session& session, const ipc::Decoded<ipc::MemsetRequest>& request) {
  const ipc::MemsetRequest& r = request.fields;
  TALLY_RETURN_IF_ERROR(session.CheckDeviceRange(r.dst, r.size));
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(r.stream));
  if ((r.element_size != 1 && r.element_size != 2 && r.element_size != 4) ||
      r.size % r.element_size != 0 || r.dst % r.element_size != 0) {
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("memset of %d-byte elements over %d bytes at 0x%x",
                                       r.element_size, r.size, r.dst));
  }
  const DriverApi* api = &session.api();
  session.Enqueue(
      stream, [=] { return SetElements(*api, r.dst, r.value, r.element_size, r.size, stream); });
  return absl::OkStatus();
}

}  // namespace tally::server
