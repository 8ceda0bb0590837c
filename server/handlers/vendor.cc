// Library calls run in a vendor library inside the server (server/libraries/): which libraries
// do so for the client, and a cuBLAS GEMM, checked (its arguments, and every byte it touches
// being the client's) and queued as one unit of the client's work, which the scheduler holds
// like a kernel that cannot be transformed.
#include <cuda.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <span>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "ipc/content_hash.h"
#include "ipc/library_calls.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"
#include "server/libraries/gemm_check.h"

namespace tally::server {
namespace {

// The policy's name for the call's shape: the call and its sizes (never measured by the
// profiler, which times kernels).
KernelId GemmIdentity(const ipc::VendorGemm& call) {
  ipc::VendorGemm shape = call;
  shape.a = shape.b = shape.c = shape.workspace = shape.stream = 0;
  shape.workspace_bytes = 0;
  std::fill(std::begin(shape.alpha), std::end(shape.alpha), std::byte{0});
  std::fill(std::begin(shape.beta), std::end(shape.beta), std::byte{0});
  return KernelId(ipc::ContentHash(std::as_bytes(std::span(&shape, 1))));
}

}  // namespace

absl::StatusOr<Reply<ipc::LibraryModesResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::LibraryModesRequest>&) {
  Reply<ipc::LibraryModesResponse> reply;
  reply.fields.vendor = session.vendor_libraries();
  return reply;
}

absl::Status Handle(Session& session, const ipc::Decoded<ipc::VendorGemmRequest>& request) {
  const ipc::VendorGemm& call = request.fields.call;
  VendorBlas* blas = session.vendor_blas();
  if (blas == nullptr) {
    return ClientError(CUDA_ERROR_NOT_SUPPORTED,
                       "cuBLAS calls of this client run in Tally's kernels, not the vendor's");
  }
  TALLY_ASSIGN_OR_RETURN(const std::vector<DeviceRange> ranges, GemmRanges(call));
  for (const DeviceRange& range : ranges) {
    const absl::Status owned = session.CheckDeviceRange(range.address, range.bytes);
    if (!owned.ok()) {
      return ClientError(
          CUDA_ERROR_INVALID_VALUE,
          absl::StrFormat("%s: %s (%d bytes at 0x%x) is not the client's memory",
                          DescribeGemm(call), range.what, range.bytes, range.address));
    }
  }
  TALLY_ASSIGN_OR_RETURN(StreamEntry * stream, session.EntryForWork(call.stream));
  session.CountVendorCall(ipc::Library::kCublas);
  if (EmptyGemm(call)) return absl::OkStatus();
  auto vendor = std::make_shared<VendorCall>();
  vendor->name = DescribeGemm(call);
  vendor->identity = GemmIdentity(call);
  vendor->issue = [blas, call](CUstream on) { return blas->Gemm(on, call); };
  KernelLaunch launch;
  launch.vendor = std::move(vendor);
  launch.stream = stream->stream;
  launch.gate_word = stream->gate.word;
  launch.gate_generation = stream->gate.generation;
  launch.grid = launch.block = {1, 1, 1};
  session.EnqueueKernel(std::move(launch));
  return absl::OkStatus();
}

}  // namespace tally::server
