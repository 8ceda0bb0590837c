// Device memory: allocation in the client's table, and copies and memsets whose every device
// range is checked against that table before anything is issued.
#include <cuda.h>

#include "common/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"

namespace tally::server {
namespace {

// Issues `copy` in the client's order on `stream` and waits for it: host memory in the bulk
// area is only valid until the response (cudaMemcpy semantics for pageable memory).
absl::Status CopyAndWait(Session& session, CUstream stream, Command copy) {
  session.Enqueue(std::move(copy));
  session.Flush();
  const CUresult synced = session.api().cuStreamSynchronize(stream);
  TALLY_RETURN_IF_ERROR(session.TakeDeferredError());
  return CheckCu(synced, "cuStreamSynchronize");
}

}  // namespace

absl::StatusOr<Reply<ipc::MemAllocResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemAllocRequest>& request) {
  // cudaMalloc of 0 bytes succeeds with a null pointer (CUDA Runtime API, cudaMalloc).
  if (request.fields.size == 0) return Reply<ipc::MemAllocResponse>{};
  CUdeviceptr pointer = 0;
  TALLY_RETURN_IF_ERROR(
      CheckCu(session.api().cuMemAlloc(&pointer, request.fields.size), "cuMemAlloc"));
  session.allocations().Insert(pointer, request.fields.size);
  return Reply<ipc::MemAllocResponse>{{.device_ptr = pointer}, {}};
}

absl::StatusOr<Reply<ipc::MemFreeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemFreeRequest>& request) {
  if (request.fields.device_ptr == 0) return Reply<ipc::MemFreeResponse>{};  // cudaFree(NULL)
  session.Flush();  // queued work may still use the memory
  TALLY_RETURN_IF_ERROR(session.allocations().Remove(request.fields.device_ptr).status());
  TALLY_RETURN_IF_ERROR(CheckCu(session.api().cuMemFree(request.fields.device_ptr), "cuMemFree"));
  return Reply<ipc::MemFreeResponse>{};
}

absl::StatusOr<Reply<ipc::MemcpyHtoDResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemcpyHtoDRequest>& request) {
  const ipc::MemcpyHtoDRequest& r = request.fields;
  TALLY_RETURN_IF_ERROR(session.CheckDeviceRange(r.dst, r.src.size));
  TALLY_ASSIGN_OR_RETURN(std::span<std::byte> src, session.ResolveBulk(r.src));
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(r.stream));
  const DriverApi* api = &session.api();
  TALLY_RETURN_IF_ERROR(CopyAndWait(session, stream, [=] {
    return api->cuMemcpyHtoDAsync(r.dst, src.data(), src.size(), stream);
  }));
  return Reply<ipc::MemcpyHtoDResponse>{};
}

absl::StatusOr<Reply<ipc::MemcpyDtoHResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemcpyDtoHRequest>& request) {
  const ipc::MemcpyDtoHRequest& r = request.fields;
  TALLY_RETURN_IF_ERROR(session.CheckDeviceRange(r.src, r.dst.size));
  TALLY_ASSIGN_OR_RETURN(std::span<std::byte> dst, session.ResolveBulk(r.dst));
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(r.stream));
  const DriverApi* api = &session.api();
  TALLY_RETURN_IF_ERROR(CopyAndWait(session, stream, [=] {
    return api->cuMemcpyDtoHAsync(dst.data(), r.src, dst.size(), stream);
  }));
  return Reply<ipc::MemcpyDtoHResponse>{};
}

absl::Status Handle(Session& session, const ipc::Decoded<ipc::MemcpyDtoDRequest>& request) {
  const ipc::MemcpyDtoDRequest& r = request.fields;
  TALLY_RETURN_IF_ERROR(session.CheckDeviceRange(r.dst, r.size));
  TALLY_RETURN_IF_ERROR(session.CheckDeviceRange(r.src, r.size));
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(r.stream));
  const DriverApi* api = &session.api();
  session.Enqueue([=] { return api->cuMemcpyDtoDAsync(r.dst, r.src, r.size, stream); });
  return absl::OkStatus();
}

absl::Status Handle(Session& session, const ipc::Decoded<ipc::MemsetRequest>& request) {
  const ipc::MemsetRequest& r = request.fields;
  TALLY_RETURN_IF_ERROR(session.CheckDeviceRange(r.dst, r.size));
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(r.stream));
  const DriverApi* api = &session.api();
  const auto byte = static_cast<unsigned char>(r.value & 0xff);
  session.Enqueue([=] { return api->cuMemsetD8Async(r.dst, byte, r.size, stream); });
  return absl::OkStatus();
}

}  // namespace tally::server
