// What the library stand-ins (libraries/) call to run a call in the vendor library inside the
// server instead of in Tally's kernels (ipc/vendor_calls.h): the shim exports these C functions
// under the symbol version TALLY_PRIVATE (exports.map), as it does the library-call counters.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ipc/vendor_calls.h"

extern "C" {
// The libraries whose calls run in the vendor library for this process (an ipc::LibrarySet),
// as the server decided when the process connected; asked once. 0 when the server cannot be
// reached (the calls then fail in Tally's kernels as every other call does).
uint32_t tally_vendor_libraries() noexcept;

// Queues `call` on `stream` (its `stream` field is filled here). cudaErrorNotSupported while a
// stream capture is under way in the process (the graph gets Tally's kernels instead, which it
// can hold as kernel nodes); otherwise what posting it returned. Failures of the call itself
// come at the next synchronising call, as a kernel's do.
cudaError_t tally_vendor_gemm(const tally::ipc::VendorGemm* call, cudaStream_t stream) noexcept;
// The same for a cuBLASLt matmul.
cudaError_t tally_vendor_lt_matmul(const tally::ipc::VendorLtMatmul* call,
                                   cudaStream_t stream) noexcept;
}
