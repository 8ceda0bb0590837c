// Conformance kernels: warp matrix multiply-accumulate through the wmma API (f16 inputs, f16 and
// f32 accumulators, every f16 shape, row/col layouts, strides, global and shared memory) and
// through inline PTX: mma.sync (f16, bf16, tf32, f64, s8/u8), ldmatrix and movmatrix, with the
// fragments built by hand from the PTX ISA's layout tables. References in ../tensor_core_cases.cc.
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

// D = A * B + C with A (M x K) and B (K x N) in the given layouts at leading dimension `ld`
// (elements), C and D (M x N) with f16 C read row-major, D stored column-major, both at `ld`.
template <int M, int N, int K, typename LayoutA, typename LayoutB, typename AccD>
__device__ void WmmaStrided(const __half* a, const __half* b, const __half* c, AccD* d,
                            unsigned ld) {
  wmma::fragment<wmma::matrix_a, M, N, K, __half, LayoutA> fa;
  wmma::fragment<wmma::matrix_b, M, N, K, __half, LayoutB> fb;
  wmma::fragment<wmma::accumulator, M, N, K, __half> fc;
  wmma::fragment<wmma::accumulator, M, N, K, AccD> fd;
  wmma::load_matrix_sync(fa, a, ld);
  wmma::load_matrix_sync(fb, b, ld);
  wmma::load_matrix_sync(fc, c, ld, wmma::mem_row_major);
  wmma::mma_sync(fd, fa, fb, fc);
  wmma::store_matrix_sync(d, fd, ld, wmma::mem_col_major);
}

extern "C" __global__ void wmma_m32n8k16_col_row(const __half* a, const __half* b,
                                                 const __half* c, float* d, unsigned ld) {
  WmmaStrided<32, 8, 16, wmma::col_major, wmma::row_major>(a, b, c, d, ld);
}
extern "C" __global__ void wmma_m8n32k16_row_row(const __half* a, const __half* b,
                                                 const __half* c, __half* d, unsigned ld) {
  WmmaStrided<8, 32, 16, wmma::row_major, wmma::row_major>(a, b, c, d, ld);
}
extern "C" __global__ void wmma_m16n16k16_col_col(const __half* a, const __half* b,
                                                  const __half* c, __half* d, unsigned ld) {
  WmmaStrided<16, 16, 16, wmma::col_major, wmma::col_major>(a, b, c, d, ld);
}

// Operands staged in shared memory (wmma.load/store .shared), accumulated twice over k, and
// an element-wise scaling of the accumulator fragment (any fragment layout allows it).
extern "C" __global__ void wmma_shared_k32(const __half* a, const __half* b, float* d) {
  __shared__ __half sa[16 * 32], sb[32 * 16];
  __shared__ float sd[16 * 16];
  for (int i = threadIdx.x; i < 512; i += 32) {
    sa[i] = a[i];
    sb[i] = b[i];
  }
  __syncwarp();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.5f);
  for (int k = 0; k < 32; k += 16) {
    wmma::load_matrix_sync(fa, sa + k, 32);       // A: 16 x 32 row-major
    wmma::load_matrix_sync(fb, sb + k * 16, 16);  // B: 32 x 16 row-major
    wmma::mma_sync(acc, fa, fb, acc);
  }
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] *= 2.0f;
  wmma::store_matrix_sync(sd, acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int i = threadIdx.x; i < 256; i += 32) d[i] = sd[i];
}

// mma.sync through inline PTX. Inputs are row-major A (M x K), B (K x N) and C (M x N) of the
// element types' bits; every lane packs its fragment by the PTX ISA's tables ("Matrix Fragments
// for mma.m16n8k16 with floating point type" & co.: groupID = lane >> 2, threadID_in_group =
// lane % 4) and writes D back row-major.
__device__ unsigned Pack2(unsigned short lo, unsigned short hi) {
  return lo | (static_cast<unsigned>(hi) << 16);
}
__device__ unsigned Pack4(const signed char* p0, int step) {
  unsigned v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<unsigned>(static_cast<unsigned char>(p0[i * step])) << (8 * i);
  return v;
}

// C and D of the m16n8 shapes: c0,c1 (g, 2t..2t+1), c2,c3 (g+8, 2t..), row-major in memory.
template <typename T>
__device__ void LoadM16N8(const T* c, T& c0, T& c1, T& c2, T& c3) {
  int g = threadIdx.x >> 2, t = threadIdx.x & 3;
  c0 = c[g * 8 + 2 * t];
  c1 = c[g * 8 + 2 * t + 1];
  c2 = c[(g + 8) * 8 + 2 * t];
  c3 = c[(g + 8) * 8 + 2 * t + 1];
}
template <typename T>
__device__ void StoreM16N8(T* d, T d0, T d1, T d2, T d3) {
  int g = threadIdx.x >> 2, t = threadIdx.x & 3;
  d[g * 8 + 2 * t] = d0;
  d[g * 8 + 2 * t + 1] = d1;
  d[(g + 8) * 8 + 2 * t] = d2;
  d[(g + 8) * 8 + 2 * t + 1] = d3;
}

// m16n8k16 .f16/.bf16 (f32 accumulators): a0,a1 (g, 2t..2t+1), a2,a3 (g+8, 2t..), a4,a5
// (g, 2t+8..), a6,a7 (g+8, 2t+8..); b0,b1 (2t.., g), b2,b3 (2t+8.., g); c0,c1 (g, 2t..),
// c2,c3 (g+8, 2t..).
#define TALLY_MMA_M16N8K16(name, type)                                                          \
  extern "C" __global__ void name(const unsigned short* a, const unsigned short* b,            \
                                  const float* c, float* d) {                                  \
    int g = threadIdx.x >> 2, t = threadIdx.x & 3;                                             \
    unsigned a0 = Pack2(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]);                             \
    unsigned a1 = Pack2(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]);                 \
    unsigned a2 = Pack2(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]);                         \
    unsigned a3 = Pack2(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9]);             \
    unsigned b0 = Pack2(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);                           \
    unsigned b1 = Pack2(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]);                       \
    float d0, d1, d2, d3;                                                                       \
    LoadM16N8(c, d0, d1, d2, d3);                                                               \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." type "." type                         \
                 ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"         \
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)                                       \
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                       \
    StoreM16N8(d, d0, d1, d2, d3);                                                              \
  }
#if __CUDA_ARCH__ >= 800  // m16n8k16 and the bf16/tf32/f64/integer forms below need sm_80
TALLY_MMA_M16N8K16(mma_m16n8k16_f16, "f16")
TALLY_MMA_M16N8K16(mma_m16n8k16_bf16, "bf16")
#endif

// m16n8k8 .f16 with f16 C and D: a0,a1 (g, 2t..), a2,a3 (g+8, 2t..); b0,b1 (2t.., g); C/D
// registers {c0,c1} (g, 2t..) and {c2,c3} (g+8, 2t..).
extern "C" __global__ void mma_m16n8k8_f16_f16acc(const unsigned short* a,
                                                  const unsigned short* b,
                                                  const unsigned short* c, unsigned short* d) {
  int g = threadIdx.x >> 2, t = threadIdx.x & 3;
  unsigned a0 = Pack2(a[g * 8 + 2 * t], a[g * 8 + 2 * t + 1]);
  unsigned a1 = Pack2(a[(g + 8) * 8 + 2 * t], a[(g + 8) * 8 + 2 * t + 1]);
  unsigned b0 = Pack2(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);
  unsigned c0 = Pack2(c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1]);
  unsigned c1 = Pack2(c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]);
  unsigned d0, d1;
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3}, {%4}, "
               "{%5, %6};"
               : "=r"(d0), "=r"(d1)
               : "r"(a0), "r"(a1), "r"(b0), "r"(c0), "r"(c1));
  d[g * 8 + 2 * t] = d0 & 0xffff;
  d[g * 8 + 2 * t + 1] = d0 >> 16;
  d[(g + 8) * 8 + 2 * t] = d1 & 0xffff;
  d[(g + 8) * 8 + 2 * t + 1] = d1 >> 16;
}

#if __CUDA_ARCH__ >= 800
// m16n8k8 .tf32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (t, g), b1 (t+4, g).
extern "C" __global__ void mma_m16n8k8_tf32(const float* a, const float* b, const float* c,
                                            float* d) {
  int g = threadIdx.x >> 2, t = threadIdx.x & 3;
  unsigned a0 = __float_as_uint(a[g * 8 + t]), a1 = __float_as_uint(a[(g + 8) * 8 + t]);
  unsigned a2 = __float_as_uint(a[g * 8 + t + 4]), a3 = __float_as_uint(a[(g + 8) * 8 + t + 4]);
  unsigned b0 = __float_as_uint(b[t * 8 + g]), b1 = __float_as_uint(b[(t + 4) * 8 + g]);
  float d0, d1, d2, d3;
  LoadM16N8(c, d0, d1, d2, d3);
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  StoreM16N8(d, d0, d1, d2, d3);
}

// m8n8k4 .f64: a0 (g, t); b0 (t, g); c0,c1 (g, 2t..2t+1).
extern "C" __global__ void mma_m8n8k4_f64(const double* a, const double* b, const double* c,
                                          double* d) {
  int g = threadIdx.x >> 2, t = threadIdx.x & 3;
  double d0 = c[g * 8 + 2 * t], d1 = c[g * 8 + 2 * t + 1];
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, "
               "{%0, %1};"
               : "+d"(d0), "+d"(d1)
               : "d"(a[g * 4 + t]), "d"(b[t * 8 + g]));
  d[g * 8 + 2 * t] = d0;
  d[g * 8 + 2 * t + 1] = d1;
}

// m16n8k32 .s8/.u8 -> .s32: a0..a3 (g, 4t..4t+3), a4..a7 (g+8, 4t..), a8..a11 (g, 4t+16..),
// a12..a15 (g+8, 4t+16..); b0..b3 (4t.., g), b4..b7 (4t+16.., g).
#define TALLY_MMA_M16N8K32(name, types)                                                        \
  extern "C" __global__ void name(const signed char* a, const signed char* b, const int* c,   \
                                  int* d) {                                                   \
    int g = threadIdx.x >> 2, t = threadIdx.x & 3;                                            \
    unsigned a0 = Pack4(a + g * 32 + 4 * t, 1), a1 = Pack4(a + (g + 8) * 32 + 4 * t, 1);      \
    unsigned a2 = Pack4(a + g * 32 + 4 * t + 16, 1);                                          \
    unsigned a3 = Pack4(a + (g + 8) * 32 + 4 * t + 16, 1);                                    \
    unsigned b0 = Pack4(b + (4 * t) * 8 + g, 8), b1 = Pack4(b + (4 * t + 16) * 8 + g, 8);     \
    int d0, d1, d2, d3;                                                                       \
    LoadM16N8(c, d0, d1, d2, d3);                                                             \
    asm volatile("mma.sync.aligned.m16n8k32.row.col" types                                     \
                 " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"            \
                 : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3)                                      \
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                      \
    StoreM16N8(d, d0, d1, d2, d3);                                                             \
  }
TALLY_MMA_M16N8K32(mma_m16n8k32_s8_u8, ".s32.s8.u8.s32")
TALLY_MMA_M16N8K32(mma_m16n8k32_s8_satfinite, ".satfinite.s32.s8.s8.s32")
#endif

// ldmatrix: 32 rows of 8 b16 values in shared memory at a 24-element pitch; lane l supplies the
// address of row (5 l) mod 32 (lanes past the matrices' rows an unusable one, which must not be
// read), and stores its registers to out[4 l ..].
template <int kCount, bool kTrans>
__device__ void LoadMatrices(const unsigned short* in, unsigned* out) {
  __shared__ unsigned short rows[32 * 24];
  int lane = threadIdx.x;
  for (int i = lane; i < 32 * 8; i += 32) rows[(i / 8) * 24 + i % 8] = in[i];
  __syncwarp();
  unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(&rows[(5 * lane % 32) * 24]));
  if (lane >= 8 * kCount) address = 0xfffffff0u;
  unsigned r[4] = {0, 0, 0, 0};
  if (kCount == 1 && !kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(address));
  } else if (kCount == 2 && !kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(address));
  } else if (kCount == 4 && !kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
  }
  for (int j = 0; j < 4; ++j) out[4 * lane + j] = r[j];
}
extern "C" __global__ void ldmatrix_x1(const unsigned short* in, unsigned* out) {
  LoadMatrices<1, false>(in, out);
}
extern "C" __global__ void ldmatrix_x2(const unsigned short* in, unsigned* out) {
  LoadMatrices<2, false>(in, out);
}
extern "C" __global__ void ldmatrix_x4(const unsigned short* in, unsigned* out) {
  LoadMatrices<4, false>(in, out);
}
extern "C" __global__ void ldmatrix_x4_trans(const unsigned short* in, unsigned* out) {
  LoadMatrices<4, true>(in, out);
}

// movmatrix: lane l holds row l / 4, columns 2 (l % 4) and the next of an 8x8 matrix; the
// result holds the same of its transpose.
extern "C" __global__ void movmatrix_trans(const unsigned* in, unsigned* out) {
  unsigned result;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(result) : "r"(in[threadIdx.x]));
  out[threadIdx.x] = result;
}
