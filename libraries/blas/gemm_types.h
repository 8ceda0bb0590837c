// The types of a GEMM as cuBLAS's ...Ex calls and cuBLASLt give them (cudaDataType of A, B, C and
// a cublasComputeType_t), and what Tally's GEMM kernel makes of them.
#pragma once

#include <cublas_v2.h>

#include <optional>

#include "libraries/kernels/blas_kernels.h"

namespace tally::libraries {

// The element types of A and B, of C (and D), and of the scalars alpha and beta.
struct GemmTypes {
  kernels::ElementType ab, c, scalar;
};

// Whether op(X) = X^T: CUBLAS_OP_T and CUBLAS_OP_C (the conjugate transpose of a real matrix is
// its transpose) are, CUBLAS_OP_N is not; nullopt for any other value.
std::optional<bool> Transposed(cublasOperation_t op);

// The element type of a real type the kernels know (f32, f64, f16, bf16), or nullopt.
std::optional<kernels::ElementType> ElementOf(cudaDataType type);

// The types Tally's kernels serve (cuBLAS documentation, cublasGemmEx, its table of supported
// combinations), with the scalars' type the compute type implies; nullopt for the others, `why`
// naming what is missing.
std::optional<GemmTypes> ExTypes(cudaDataType a, cudaDataType b, cudaDataType c,
                                 cublasComputeType_t compute, const char*& why);

}  // namespace tally::libraries
