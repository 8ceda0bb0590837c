#include "server/libraries/gemm_check.h"

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "server/cuda_result.h"

namespace tally::server {
namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();

// Bytes per element of the matrix types the GEMM entry points take.
std::optional<uint64_t> ElementBytes(uint32_t type) {
  switch (static_cast<cudaDataType>(type)) {
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    case CUDA_R_32F:
      return 4;
    case CUDA_R_64F:
      return 8;
    default:
      return std::nullopt;
  }
}

// Bytes of alpha and beta, whose type the compute type implies (cuBLAS documentation,
// cublasGemmEx).
std::optional<uint64_t> ScalarBytes(uint32_t compute) {
  switch (static_cast<cublasComputeType_t>(compute)) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      return 2;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return 4;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
      return 8;
    default:
      return std::nullopt;
  }
}

std::optional<bool> Transposed(uint32_t op) {
  switch (static_cast<cublasOperation_t>(op)) {
    case CUBLAS_OP_N:
      return false;
    case CUBLAS_OP_T:
    case CUBLAS_OP_C:
      return true;
    default:
      return std::nullopt;
  }
}

bool KnownMathMode(uint32_t mode) {
  const uint32_t base = mode & ~uint32_t{CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION};
  return base <= CUBLAS_TF32_TENSOR_OP_MATH;
}

absl::Status Invalid(const std::string& what) {
  return ClientError(CUDA_ERROR_INVALID_VALUE, "cuBLAS GEMM: " + what);
}

// One operand: `rows` x `cols` elements with leading dimension `ld`, `batch` of them `stride`
// elements apart.
struct Operand {
  const char* name;
  uint64_t address;
  int64_t rows, cols, ld, stride;
  uint32_t type;
};

absl::Status AddOperand(const Operand& o, int64_t batch, std::vector<DeviceRange>& ranges) {
  const std::optional<uint64_t> element = ElementBytes(o.type);
  if (!element) return Invalid(absl::StrFormat("%s has the unknown type %d", o.name, o.type));
  if (o.ld < std::max<int64_t>(1, o.rows) || o.ld > kMaxInt) {
    return Invalid(absl::StrFormat("the leading dimension of %s, %d, is not in [max(1, %d), 2^31)",
                                   o.name, o.ld, o.rows));
  }
  if (o.stride < 0) return Invalid(absl::StrFormat("the stride of %s is negative", o.name));
  if (o.rows == 0 || o.cols == 0) return absl::OkStatus();
  // At most (2^31)^2 + 2^31 + 2^31 * 2^63 elements: computed without overflow in 128 bits.
  const unsigned __int128 elements = static_cast<unsigned __int128>(o.cols - 1) * o.ld + o.rows +
                                     static_cast<unsigned __int128>(batch - 1) * o.stride;
  const unsigned __int128 bytes = elements * *element;
  if (bytes > std::numeric_limits<uint64_t>::max() - o.address) {
    return Invalid(absl::StrFormat("%s reaches past the end of the address space", o.name));
  }
  ranges.push_back({o.address, static_cast<uint64_t>(bytes), o.name});
  return absl::OkStatus();
}

uint64_t ScalarAddress(const std::byte (&bytes)[16]) {
  uint64_t address = 0;
  std::memcpy(&address, bytes, sizeof(address));
  return address;
}

// The epilogues forwarded: what Tally's kernels apply too (libraries/cublaslt), so that a call
// is refused alike either way. Sets `bias` for those with a bias.
bool ForwardedEpilogue(uint32_t epilogue, bool& bias) {
  switch (static_cast<cublasLtEpilogue_t>(epilogue)) {
    case CUBLASLT_EPILOGUE_DEFAULT:
    case CUBLASLT_EPILOGUE_RELU:
    case CUBLASLT_EPILOGUE_GELU:
      bias = false;
      return true;
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      bias = true;
      return true;
    default:
      return false;
  }
}

// Sizes, operations, the compute type and device scalars, as both call kinds have them.
template <typename Call>
absl::Status CheckCommon(const Call& call, int64_t batch, std::vector<DeviceRange>& ranges) {
  if (!Transposed(call.op_a) || !Transposed(call.op_b)) {
    return Invalid(absl::StrFormat("unknown operation %d or %d", call.op_a, call.op_b));
  }
  for (int64_t size : {call.m, call.n, call.k, batch}) {
    if (size < 0 || size > kMaxInt) {
      return Invalid(absl::StrFormat("a size (m %d, n %d, k %d, batch %d) is not in [0, 2^31)",
                                     call.m, call.n, call.k, batch));
    }
  }
  const std::optional<uint64_t> scalar = ScalarBytes(call.compute);
  if (!scalar) return Invalid(absl::StrFormat("unknown compute type %d", call.compute));
  if (call.scalars_on_device > 1) return Invalid("scalars_on_device is neither 0 nor 1");
  if (call.scalars_on_device == 1) {
    ranges.push_back({ScalarAddress(call.alpha), *scalar, "alpha"});
    ranges.push_back({ScalarAddress(call.beta), *scalar, "beta"});
  }
  if (call.workspace_bytes > 0) {
    ranges.push_back({call.workspace, call.workspace_bytes, "workspace"});
  }
  return absl::OkStatus();
}

}  // namespace

bool EmptyGemm(const ipc::VendorGemm& call) {
  return call.m == 0 || call.n == 0 || call.batch == 0;
}

absl::StatusOr<std::vector<DeviceRange>> GemmRanges(const ipc::VendorGemm& call) {
  std::vector<DeviceRange> ranges;
  TALLY_RETURN_IF_ERROR(CheckCommon(call, call.batch, ranges));
  if (!KnownMathMode(call.math_mode)) {
    return Invalid(absl::StrFormat("unknown math mode %d", call.math_mode));
  }
  const bool ta = *Transposed(call.op_a), tb = *Transposed(call.op_b);
  const int64_t batch = std::max<int64_t>(call.batch, 1);
  const bool computes = !EmptyGemm(call);
  // A and B are read only when there is a product to compute.
  const int64_t k = computes ? call.k : 0;
  TALLY_RETURN_IF_ERROR(AddOperand(
      {"A", call.a, ta ? k : call.m, ta ? call.m : k, call.lda, call.stride_a, call.type_a}, batch,
      ranges));
  TALLY_RETURN_IF_ERROR(AddOperand(
      {"B", call.b, tb ? call.n : k, tb ? k : call.n, call.ldb, call.stride_b, call.type_b}, batch,
      ranges));
  TALLY_RETURN_IF_ERROR(
      AddOperand({"C", call.c, computes ? call.m : 0, call.n, call.ldc, call.stride_c, call.type_c},
                 batch, ranges));
  return ranges;
}

absl::StatusOr<std::vector<DeviceRange>> LtMatmulRanges(const ipc::VendorLtMatmul& call) {
  std::vector<DeviceRange> ranges;
  TALLY_RETURN_IF_ERROR(CheckCommon(call, call.batch, ranges));
  bool bias = false;
  if (!ForwardedEpilogue(call.epilogue, bias)) {
    return Invalid(absl::StrFormat("the epilogue %d is not forwarded", call.epilogue));
  }
  if (ElementBytes(call.scale_type) != ScalarBytes(call.compute)) {
    return Invalid(
        absl::StrFormat("scale type %d for compute type %d", call.scale_type, call.compute));
  }
  for (int64_t batch : {call.batch_a, call.batch_b}) {
    if (batch != 1 && batch != call.batch) {
      return Invalid(absl::StrFormat("a batch of %d for A or B beside D's %d", batch, call.batch));
    }
  }
  const bool ta = *Transposed(call.op_a), tb = *Transposed(call.op_b);
  const bool computes = !EmptyGemm(call);
  const int64_t m = computes ? call.m : 0, k = computes ? call.k : 0;
  TALLY_RETURN_IF_ERROR(
      AddOperand({"A", call.a, ta ? k : m, ta ? m : k, call.lda, call.stride_a, call.type_a},
                 std::max<int64_t>(call.batch_a, 1), ranges));
  TALLY_RETURN_IF_ERROR(AddOperand(
      {"B", call.b, tb ? call.n : k, tb ? k : call.n, call.ldb, call.stride_b, call.type_b},
      std::max<int64_t>(call.batch_b, 1), ranges));
  const int64_t batch = std::max<int64_t>(call.batch, 1);
  TALLY_RETURN_IF_ERROR(
      AddOperand({"C", call.c, m, call.n, call.ldc, call.stride_c, call.type_c}, batch, ranges));
  TALLY_RETURN_IF_ERROR(
      AddOperand({"D", call.d, m, call.n, call.ldd, call.stride_d, call.type_d}, batch, ranges));
  if (bias) {
    TALLY_RETURN_IF_ERROR(AddOperand(
        {"bias", call.bias, m, 1, std::max<int64_t>(m, 1), call.stride_bias, call.bias_type}, batch,
        ranges));
  }
  return ranges;
}

bool EmptyGemm(const ipc::VendorLtMatmul& call) {
  return call.m == 0 || call.n == 0 || call.batch == 0;
}

std::string DescribeGemm(const ipc::VendorLtMatmul& call) {
  return absl::StrFormat(
      "cuBLASLt matmul %dx%dx%d (batch %d, ops %d/%d, types %d/%d/%d/%d, compute %d, epilogue %d)",
      call.m, call.n, call.k, call.batch, call.op_a, call.op_b, call.type_a, call.type_b,
      call.type_c, call.type_d, call.compute, call.epilogue);
}

std::string DescribeGemm(const ipc::VendorGemm& call) {
  return absl::StrFormat("cuBLAS GEMM %dx%dx%d (batch %d, ops %d/%d, types %d/%d/%d, compute %d)",
                         call.m, call.n, call.k, call.batch, call.op_a, call.op_b, call.type_a,
                         call.type_b, call.type_c, call.compute);
}

}  // namespace tally::server
