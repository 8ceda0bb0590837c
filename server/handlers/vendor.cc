// Library calls run in a vendor library inside the server (server/libraries/): which libraries
// do so for the client, and its cuBLAS GEMMs and cuBLASLt matmuls, each checked (its arguments,
// and every byte it touches being the client's) and queued as one unit of the client's work,
// which the scheduler holds like a kernel that cannot be transformed.
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

// The policy's name for the call's shape: the call and its sizes, without its addresses and
// scalars (never measured by the profiler, which times kernels).
template <typename Call>
KernelId ShapeIdentity(Call shape) {
  shape.a = shape.b = shape.c = shape.workspace = shape.stream = 0;
  if constexpr (requires { shape.d; }) shape.d = shape.bias = 0;
  std::fill(std::begin(shape.alpha), std::end(shape.alpha), std::byte{0});
  std::fill(std::begin(shape.beta), std::end(shape.beta), std::byte{0});
  return KernelId(ipc::ContentHash(std::as_bytes(std::span(&shape, 1))));
}

// Checks `call` (`ranges`: what it touches) and queues it on its stream; `run` issues it there.
template <typename Call, typename Run>
absl::Status QueueVendorCall(Session& session, ipc::Library library, const Call& call,
                             const absl::StatusOr<std::vector<DeviceRange>>& ranges, Run run) {
  VendorBlas* blas = session.vendor_blas(library);
  if (blas == nullptr) {
    return ClientError(CUDA_ERROR_NOT_SUPPORTED,
                       absl::StrFormat("%s calls of this client run in Tally's kernels, not the "
                                       "vendor library",
                                       ipc::LibraryName(library)));
  }
  TALLY_RETURN_IF_ERROR(ranges.status());
  for (const DeviceRange& range : *ranges) {
    if (!session.CheckDeviceRange(range.address, range.bytes).ok()) {
      return ClientError(
          CUDA_ERROR_INVALID_VALUE,
          absl::StrFormat("%s: %s (%d bytes at 0x%x) is not the client's memory",
                          DescribeGemm(call), range.what, range.bytes, range.address));
    }
  }
  TALLY_ASSIGN_OR_RETURN(StreamEntry * stream, session.EntryForWork(call.stream));
  session.CountVendorCall(library);
  if (EmptyGemm(call)) return absl::OkStatus();
  auto vendor = std::make_shared<VendorCall>();
  vendor->name = DescribeGemm(call);
  vendor->identity = ShapeIdentity(call);
  vendor->issue = [blas, call, run](CUstream on) { return run(*blas, on, call); };
  KernelLaunch launch;
  launch.vendor = std::move(vendor);
  launch.stream = stream->stream;
  launch.gate_word = stream->gate.word;
  launch.gate_generation = stream->gate.generation;
  launch.grid = launch.block = {1, 1, 1};
  session.EnqueueKernel(std::move(launch));
  return absl::OkStatus();
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
  return QueueVendorCall(session, ipc::Library::kCublas, call, GemmRanges(call),
                         [](VendorBlas& blas, CUstream stream, const ipc::VendorGemm& gemm) {
                           return blas.Gemm(stream, gemm);
                         });
}

absl::Status Handle(Session& session, const ipc::Decoded<ipc::VendorLtMatmulRequest>& request) {
  const ipc::VendorLtMatmul& call = request.fields.call;
  return QueueVendorCall(session, ipc::Library::kCublasLt, call, LtMatmulRanges(call),
                         [](VendorBlas& blas, CUstream stream, const ipc::VendorLtMatmul& matmul) {
                           return blas.LtMatmul(stream, matmul);
                         });
}

}  // namespace tally::server
