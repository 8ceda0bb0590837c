// Conformance kernels: warp matrix multiply-accumulate (wmma, f16 inputs, f32 accumulators).
// References in ../tensor_core_cases.cc.
#include <mma.h>

using namespace nvcuda;

// One warp computes D = A * B + C for 16x16 tiles (row-major A, column-major B).
extern "C" __global__ void wmma_16x16x16(const __half* a, const __half* b, const float* c,
                                         float* d) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  unsigned tile = blockIdx.x;
  wmma::load_matrix_sync(fa, a + tile * 256, 16);
  wmma::load_matrix_sync(fb, b + tile * 256, 16);
  wmma::load_matrix_sync(acc, c + tile * 256, 16, wmma::mem_row_major);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d + tile * 256, acc, 16, wmma::mem_row_major);
}
