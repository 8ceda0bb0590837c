// Library calls that run in a vendor library inside the server (server/libraries/): which
// libraries the server runs so for a client (LibraryModesResponse), and the calls' arguments as
// the wire carries them. A call is counted where the server queues it, in a LibraryCalls of its
// own beside the calls served by Tally's kernels (library_calls.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ipc/library_calls.h"

namespace tally::ipc {

// A set of libraries, one bit per LibrarySlot.
using LibrarySet = uint32_t;

constexpr LibrarySet LibraryBit(Library library) { return LibrarySet{1} << LibrarySlot(library); }
constexpr bool Contains(LibrarySet set, Library library) {
  return library != Library::kNone && (set & LibraryBit(library)) != 0;
}

// One GEMM of cuBLAS, as cublasGemmStridedBatchedEx takes it (every cuBLAS GEMM entry point with
// plain or strided operands is one): D = alpha * op(A) * op(B) + beta * C in place in C, column
// major. Enum values are cuBLAS's and CUDA's (cublasOperation_t, cudaDataType,
// cublasComputeType_t, cublasMath_t); the server checks every one.
struct VendorGemm {
  uint32_t op_a, op_b;
  int64_t m, n, k;
  int64_t lda, ldb, ldc;
  int64_t stride_a, stride_b, stride_c;
  int64_t batch;
  uint32_t type_a, type_b, type_c;
  uint32_t compute;
  uint32_t math_mode;
  // 1: alpha and beta hold the device addresses of the scalars (CUBLAS_POINTER_MODE_DEVICE);
  // 0: their bytes, of the compute type's scalar type.
  uint32_t scalars_on_device;
  uint64_t a, b, c;
  // The client's cublasSetWorkspace (0 bytes: none, the vendor library's own).
  uint64_t workspace, workspace_bytes;
  uint64_t stream;
  std::byte alpha[16];
  std::byte beta[16];
};
static_assert(std::is_trivially_copyable_v<VendorGemm> && std::is_standard_layout_v<VendorGemm>);
static_assert(sizeof(VendorGemm) == 192, "no padding: every byte is a field");

// One cublasLtMatmul, D = epilogue(alpha * op(A) * op(B) + beta * C (+ bias)), column major,
// its descriptors flattened (cuBLASLt's enum values; the server checks every one). A and B have
// a batch of 1 (the same matrix for every entry of D's) or D's.
struct VendorLtMatmul {
  uint32_t op_a, op_b;
  int64_t m, n, k;
  uint32_t type_a, type_b, type_c, type_d;
  uint32_t compute;     // cublasComputeType_t
  uint32_t scale_type;  // cudaDataType of alpha and beta
  uint32_t epilogue;    // cublasLtEpilogue_t: default, ReLU, GELU, each with or without bias
  uint32_t bias_type;   // cudaDataType of the bias
  int64_t lda, ldb, ldc, ldd;
  int64_t batch_a, batch_b, batch;  // batch counts: A's, B's, and C's and D's
  int64_t stride_a, stride_b, stride_c, stride_d, stride_bias;  // elements between entries
  uint64_t a, b, c, d, bias;
  uint32_t scalars_on_device;  // 1: alpha and beta hold device addresses
  uint32_t reserved;
  uint64_t workspace, workspace_bytes;
  uint64_t stream;
  std::byte alpha[16];
  std::byte beta[16];
};
static_assert(std::is_trivially_copyable_v<VendorLtMatmul> &&
              std::is_standard_layout_v<VendorLtMatmul>);
static_assert(sizeof(VendorLtMatmul) == 264, "no padding: every byte is a field");

}  // namespace tally::ipc
