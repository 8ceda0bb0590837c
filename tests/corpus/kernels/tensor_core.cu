// Corpus: tensor cores through the wmma API and through inline `mma.sync`/`ldmatrix`.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

// One warp computes a 16x16 tile: C = A * B + C with half inputs and float accumulation.
__global__ void WmmaTile(const half* a, const half* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
  wmma::mma_sync(fc, fa, fb, fc);
  for (int k = 0; k < fc.num_elements; ++k) fc.x[k] *= 0.5f;
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

// Integer tensor cores (sm_72+) and, from sm_80, bfloat16 fragments.
__global__ void WmmaOtherTypes(const signed char* a, const signed char* b, int* c,
                               const __nv_bfloat16* ba, const __nv_bfloat16* bb, float* bc) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
  wmma::fill_fragment(fc, 0);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_col_major);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> ga;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> gb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> gc;
  wmma::fill_fragment(gc, 1.0f);
  wmma::load_matrix_sync(ga, ba, 16);
  wmma::load_matrix_sync(gb, bb, 16);
  wmma::mma_sync(gc, ga, gb, gc);
  wmma::store_matrix_sync(bc, gc, 16, wmma::mem_row_major);
#else
  if (threadIdx.x == 0) bc[0] = __bfloat162float(ba[0]) * __bfloat162float(bb[0]);
#endif
}

// m16n8k8 (sm_75+) with operands loaded from shared memory by ldmatrix; each lane holds
// two f16x2 registers of A, one of B and four floats of C/D (PTX ISA "Matrix fragments for
// mma.m16n8k8").
__global__ void MmaInlineAsm(const unsigned* a, const unsigned* b, float* d) {
  __shared__ unsigned short tile[8 * 8];
  int lane = threadIdx.x;
  for (int k = lane; k < 64; k += 32) tile[k] = static_cast<unsigned short>(a[k] & 0xffff);
  __syncwarp();
  unsigned a0 = a[2 * lane];
  unsigned a1 = a[2 * lane + 1];
  unsigned b0;
  unsigned shared_row = static_cast<unsigned>(__cvta_generic_to_shared(&tile[(lane % 8) * 8]));
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(b0) : "r"(shared_row));
  b0 ^= b[lane];
  float c0 = 0.0f, c1 = 1.0f, c2 = 2.0f, c3 = 3.0f;
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
      "{%0, %1, %2, %3};"
      : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
      : "r"(a0), "r"(a1), "r"(b0));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // m16n8k16 with bfloat16 inputs exists from sm_80.
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
      : "r"(a0), "r"(a1), "r"(a1), "r"(a0), "r"(b0), "r"(b0));
#endif
  d[4 * lane + 0] = c0;
  d[4 * lane + 1] = c1;
  d[4 * lane + 2] = c2;
  d[4 * lane + 3] = c3;
}
