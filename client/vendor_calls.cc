// Library calls run in the vendor library inside the server: the modes, asked once, and the
// calls, posted one-way like kernel launches (no round trip).
#include "client/vendor_calls.h"

#include <atomic>

#include "client/capture.h"
#include "client/channel.h"
#include "client/handles.h"
#include "client/status.h"

namespace tally::client {
namespace {

// The answer to LibraryModes, or kUnknown before the first call has had it.
constexpr uint64_t kUnknown = ~uint64_t{0};
std::atomic<uint64_t> vendor_libraries{kUnknown};

uint32_t AskVendorLibraries() {
  absl::StatusOr<Channel*> channel = Channel::Get();
  if (!channel.ok()) return 0;
  auto answer = (*channel)->Call(ipc::LibraryModesRequest{});
  return answer.ok() ? answer->fields.vendor : 0;
}

// Posts `call` (a copy with the server's handle of `stream`) as a Request.
template <typename Request, typename Call>
cudaError_t PostVendorCall(const Call* call, cudaStream_t stream) noexcept {
  if (call == nullptr) return cudaErrorInvalidValue;
  if (capture_internal::active.load(std::memory_order_relaxed) != 0) return cudaErrorNotSupported;
  try {
    absl::StatusOr<Channel*> channel = Channel::Get();
    if (!channel.ok()) return ToCudaError(channel.status());
    Request request{.call = *call};
    request.call.stream = StreamHandle(stream);
    return ToCudaError((*channel)->Post(request));
  } catch (...) {
    return cudaErrorMemoryAllocation;  // std::bad_alloc: never across the C ABI
  }
}

}  // namespace
}  // namespace tally::client

extern "C" {

uint32_t tally_vendor_libraries() noexcept {
  using namespace tally::client;
  const uint64_t known = vendor_libraries.load(std::memory_order_acquire);
  if (known != kUnknown) return static_cast<uint32_t>(known);
  try {
    // Threads asking at once ask the server the same question: each stores the same answer.
    const uint32_t asked = AskVendorLibraries();
    vendor_libraries.store(asked, std::memory_order_release);
    return asked;
  } catch (...) {
    return 0;
  }
}

cudaError_t tally_vendor_gemm(const tally::ipc::VendorGemm* call, cudaStream_t stream) noexcept {
  return tally::client::PostVendorCall<tally::ipc::VendorGemmRequest>(call, stream);
}

cudaError_t tally_vendor_lt_matmul(const tally::ipc::VendorLtMatmul* call,
                                   cudaStream_t stream) noexcept {
  return tally::client::PostVendorCall<tally::ipc::VendorLtMatmulRequest>(call, stream);
}

}  // extern "C"
