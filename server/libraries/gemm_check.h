// What the server checks of a cuBLAS GEMM a client asks the vendor library to run
// (ipc::VendorGemm): its arguments as cuBLAS documents them, and the device memory it will read
// and write, which must all be the client's (the handler checks that against its allocations).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ipc/vendor_calls.h"

namespace tally::server {

struct DeviceRange {
  uint64_t address = 0;
  uint64_t bytes = 0;
  const char* what = "";  // "A", "B", "C", "alpha", "beta", "workspace"
};

// The ranges the GEMM touches (none of an operand it does not read: k = 0 reads neither A nor
// B), or a ClientError(CUDA_ERROR_INVALID_VALUE) naming the argument that is wrong: an unknown
// operation, type, compute type or math mode, a negative size or stride, a leading dimension
// smaller than its operand's rows, or a size past the 32-bit entry point's.
absl::StatusOr<std::vector<DeviceRange>> GemmRanges(const ipc::VendorGemm& call);

// The same for a cuBLASLt matmul: also its epilogue (bias, ReLU, GELU only), scale type, D, the
// bias (m elements per batch entry), and A's and B's batch counts (1 or D's).
absl::StatusOr<std::vector<DeviceRange>> LtMatmulRanges(const ipc::VendorLtMatmul& call);

// Whether the GEMM computes nothing (m, n or batch 0): the server then queues nothing.
bool EmptyGemm(const ipc::VendorGemm& call);
bool EmptyGemm(const ipc::VendorLtMatmul& call);

// "cuBLAS GEMM m x n x k (batch b, A N, B T, types 0/0/0, compute 68)", for messages.
std::string DescribeGemm(const ipc::VendorGemm& call);
std::string DescribeGemm(const ipc::VendorLtMatmul& call);

}  // namespace tally::server
