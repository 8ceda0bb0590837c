// GEMM types (gemm_types.h).
#include "libraries/blas/gemm_types.h"

namespace tally::libraries {

using kernels::ElementType;

std::optional<bool> Transposed(cublasOperation_t op) {
  switch (op) {
    case CUBLAS_OP_N:
      return false;
    case CUBLAS_OP_T:
    case CUBLAS_OP_C:  // the conjugate transpose of a real matrix is its transpose
      return true;
    default:
      return std::nullopt;
  }
}

std::optional<ElementType> ElementOf(cudaDataType type) {
  switch (type) {
    case CUDA_R_32F:
      return ElementType::kF32;
    case CUDA_R_64F:
      return ElementType::kF64;
    case CUDA_R_16F:
      return ElementType::kF16;
    case CUDA_R_16BF:
      return ElementType::kBF16;
    default:
      return std::nullopt;
  }
}

// The ...Ex forms: the types and the compute type Tally's kernels serve (cuBLAS documentation,
// cublasGemmEx, its table of supported combinations), and the scalars' type they imply; nullopt
// for the others, `why` naming what is missing.
std::optional<GemmTypes> ExTypes(cudaDataType a, cudaDataType b, cudaDataType c,
                                 cublasComputeType_t compute, const char*& why) {
  const std::optional<ElementType> ab = ElementOf(a);
  const std::optional<ElementType> c_type = ElementOf(c);
  if (a != b || !ab || !c_type) {
    why = "this combination of A, B and C types";
    return std::nullopt;
  }
  switch (compute) {
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
      if (*ab != ElementType::kF64 || *c_type != ElementType::kF64) break;
      return GemmTypes{ElementType::kF64, ElementType::kF64, ElementType::kF64};
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      // f32 accumulation, computed in full f32 (which every fast mode allows).
      if (*ab == ElementType::kF64 || *c_type == ElementType::kF64) break;
      if (*c_type != *ab && *c_type != ElementType::kF32) break;
      return GemmTypes{*ab, *c_type, ElementType::kF32};
    default:
      why = "this compute type (16-bit and integer computation)";
      return std::nullopt;
  }
  why = "this combination of types and compute type";
  return std::nullopt;
}

}  // namespace tally::libraries
