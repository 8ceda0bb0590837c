// The device memory a vendor GEMM touches, computed from its arguments as cuBLAS reads them
// (column major, leading dimensions, transposes, batch strides, device scalars, a workspace),
// and the arguments refused before anything reaches the vendor library.
#include "server/libraries/gemm_check.h"

#include <cublasLt.h>
#include <cublas_api.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "server/cuda_result.h"

namespace tally::server {
namespace {

ipc::VendorGemm Gemm(int64_t m, int64_t n, int64_t k) {
  ipc::VendorGemm call{};
  call.op_a = CUBLAS_OP_N;
  call.op_b = CUBLAS_OP_N;
  call.m = m;
  call.n = n;
  call.k = k;
  call.lda = m;
  call.ldb = k;
  call.ldc = m;
  call.batch = 1;
  call.type_a = call.type_b = call.type_c = CUDA_R_32F;
  call.compute = CUBLAS_COMPUTE_32F;
  call.a = 0x10000;
  call.b = 0x20000;
  call.c = 0x30000;
  return call;
}

// The bytes of the range named `what`, or -1 when the GEMM touches no such range.
int64_t BytesOf(const std::vector<DeviceRange>& ranges, const std::string& what) {
  for (const DeviceRange& range : ranges) {
    if (what == range.what) return static_cast<int64_t>(range.bytes);
  }
  return -1;
}

TEST_CASE("plain and transposed operands span their columns up to the last row") {
  ipc::VendorGemm call = Gemm(3, 5, 4);
  call.lda = 7;  // A: 3 x 4 with ld 7 -> 3 * 7 + 3 elements
  auto ranges = GemmRanges(call);
  REQUIRE(ranges.ok());
  CHECK(BytesOf(*ranges, "A") == (3 * 7 + 3) * 4);
  CHECK(BytesOf(*ranges, "B") == (4 * 4 + 4) * 4);
  CHECK(BytesOf(*ranges, "C") == (4 * 3 + 3) * 4);
  CHECK(BytesOf(*ranges, "alpha") == -1);  // host scalars: not device memory
  call.op_a = CUBLAS_OP_T;                 // op(A) = A^T: A is 4 x 3, ld at least 4
  call.lda = 4;
  ranges = GemmRanges(call);
  REQUIRE(ranges.ok());
  CHECK(BytesOf(*ranges, "A") == (2 * 4 + 4) * 4);
}

TEST_CASE("batches reach stride times batch - 1 further; stride 0 shares one matrix") {
  ipc::VendorGemm call = Gemm(2, 2, 2);
  call.type_a = call.type_b = call.type_c = CUDA_R_16F;
  call.batch = 3;
  call.stride_a = 100;
  call.stride_b = 0;
  call.stride_c = 4;
  auto ranges = GemmRanges(call);
  REQUIRE(ranges.ok());
  CHECK(BytesOf(*ranges, "A") == (4 + 2 * 100) * 2);
  CHECK(BytesOf(*ranges, "B") == 4 * 2);
  CHECK(BytesOf(*ranges, "C") == (4 + 2 * 4) * 2);
}

TEST_CASE("device scalars and a workspace are ranges too; k = 0 reads neither A nor B") {
  ipc::VendorGemm call = Gemm(4, 4, 0);
  call.lda = 4;
  call.ldb = 1;
  call.compute = CUBLAS_COMPUTE_64F;
  call.type_a = call.type_b = call.type_c = CUDA_R_64F;
  call.scalars_on_device = 1;
  const uint64_t alpha = 0x40000, beta = 0x40008;
  std::memcpy(call.alpha, &alpha, sizeof(alpha));
  std::memcpy(call.beta, &beta, sizeof(beta));
  call.workspace = 0x50000;
  call.workspace_bytes = 1024;
  auto ranges = GemmRanges(call);
  REQUIRE(ranges.ok());
  CHECK(BytesOf(*ranges, "A") == -1);
  CHECK(BytesOf(*ranges, "B") == -1);
  CHECK(BytesOf(*ranges, "C") == 16 * 8);  // C is still scaled by beta
  CHECK(BytesOf(*ranges, "alpha") == 8);
  CHECK(BytesOf(*ranges, "beta") == 8);
  CHECK(BytesOf(*ranges, "workspace") == 1024);
}

TEST_CASE("arguments cuBLAS refuses, and sizes that would wrap, are refused") {
  auto refused = [](ipc::VendorGemm call) {
    return ResultOf(GemmRanges(call).status()) == CUDA_ERROR_INVALID_VALUE;
  };
  ipc::VendorGemm call = Gemm(3, 3, 3);
  CHECK(GemmRanges(call).ok());
  call.lda = 2;  // smaller than A's rows
  CHECK(refused(call));
  call = Gemm(3, 3, 3);
  call.m = -1;
  CHECK(refused(call));
  call = Gemm(3, 3, 3);
  call.op_a = 7;
  CHECK(refused(call));
  call = Gemm(3, 3, 3);
  call.type_b = CUDA_C_32F;  // complex: not among the types the server forwards
  CHECK(refused(call));
  call = Gemm(3, 3, 3);
  call.compute = 12345;
  CHECK(refused(call));
  call = Gemm(3, 3, 3);
  call.math_mode = 9;
  CHECK(refused(call));
  call = Gemm(3, 3, 3);
  call.batch = 2;
  call.stride_c = -4;
  CHECK(refused(call));
  call = Gemm(3, 3, 3);
  call.batch = 2;
  call.stride_a = std::numeric_limits<int64_t>::max();  // past the end of the address space
  CHECK(refused(call));
  call = Gemm(int64_t{1} << 31, 1, 1);  // past the 32-bit entry point's sizes
  CHECK(refused(call));
}

TEST_CASE("a GEMM with no output computes nothing") {
  CHECK(EmptyGemm(Gemm(0, 3, 3)));
  CHECK(EmptyGemm(Gemm(3, 0, 3)));
  CHECK_FALSE(EmptyGemm(Gemm(3, 3, 0)));
  ipc::VendorGemm call = Gemm(3, 3, 3);
  call.batch = 0;
  CHECK(EmptyGemm(call));
}

ipc::VendorLtMatmul LtMatmul(int64_t m, int64_t n, int64_t k) {
  ipc::VendorLtMatmul call{};
  call.m = m;
  call.n = n;
  call.k = k;
  call.lda = m;
  call.ldb = k;
  call.ldc = call.ldd = m;
  call.batch_a = call.batch_b = call.batch = 1;
  call.type_a = call.type_b = call.type_c = call.type_d = call.bias_type = CUDA_R_16BF;
  call.compute = CUBLAS_COMPUTE_32F;
  call.scale_type = CUDA_R_32F;
  call.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  call.a = 0x10000;
  call.b = 0x20000;
  call.c = 0x30000;
  call.d = 0x40000;
  call.bias = 0x50000;
  return call;
}

TEST_CASE("a cuBLASLt matmul reads C, writes D, and reads a bias of m elements per entry") {
  ipc::VendorLtMatmul call = LtMatmul(3, 2, 4);
  call.epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
  call.batch = 2;
  call.batch_b = 2;
  call.stride_b = 8;
  call.stride_c = call.stride_d = 6;
  call.stride_bias = 3;
  auto ranges = GemmRanges(Gemm(1, 1, 1));  // the plain GEMM has no D and no bias
  REQUIRE(ranges.ok());
  CHECK(BytesOf(*ranges, "D") == -1);
  auto lt = LtMatmulRanges(call);
  REQUIRE(lt.ok());
  CHECK(BytesOf(*lt, "A") == (3 * 3 + 3) * 2);  // one entry for all (batch 1)
  CHECK(BytesOf(*lt, "B") == (4 + 4 + 8) * 2);
  CHECK(BytesOf(*lt, "C") == (3 + 3 + 6) * 2);
  CHECK(BytesOf(*lt, "D") == (3 + 3 + 6) * 2);
  CHECK(BytesOf(*lt, "bias") == (3 + 3) * 2);
  call.epilogue = CUBLASLT_EPILOGUE_RELU;  // no bias read
  lt = LtMatmulRanges(call);
  REQUIRE(lt.ok());
  CHECK(BytesOf(*lt, "bias") == -1);
}

TEST_CASE("cuBLASLt matmuls outside what is forwarded are refused") {
  auto refused = [](ipc::VendorLtMatmul call) {
    return ResultOf(LtMatmulRanges(call).status()) == CUDA_ERROR_INVALID_VALUE;
  };
  CHECK(LtMatmulRanges(LtMatmul(2, 2, 2)).ok());
  ipc::VendorLtMatmul call = LtMatmul(2, 2, 2);
  call.epilogue = CUBLASLT_EPILOGUE_DRELU;  // a gradient epilogue: not forwarded
  CHECK(refused(call));
  call = LtMatmul(2, 2, 2);
  call.batch = 3;
  call.batch_a = 2;  // neither 1 nor D's
  CHECK(refused(call));
  call = LtMatmul(2, 2, 2);
  call.scale_type = CUDA_R_64F;  // not the compute type's scalar
  CHECK(refused(call));
  call = LtMatmul(2, 2, 2);
  call.ldd = 1;
  CHECK(refused(call));
}

}  // namespace
}  // namespace tally::server
