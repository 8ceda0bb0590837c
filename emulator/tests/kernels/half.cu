// f16/bf16 arithmetic, conversions, comparisons and atomics through cuda_fp16.h/cuda_bf16.h, as
// applications write them. Compiled for compute_80 and compute_90 (whose bf16 arithmetic has
// native add/sub/mul forms). References are in half_test.cc; values travel as raw 16-bit
// patterns so that every result is compared bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

constexpr int kHalfResults = 16;
constexpr int kBf16Results = 10;

__device__ __half H(uint16_t bits) { return __ushort_as_half(bits); }
__device__ uint16_t Bits(__half h) { return __half_as_ushort(h); }
__device__ __nv_bfloat16 B(uint16_t bits) { return __ushort_as_bfloat16(bits); }
__device__ uint16_t Bits(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }

// out[i * kHalfResults + k]: the k-th operation on (a[i], b[i], c[i]).
extern "C" __global__ void half_arith(const uint16_t* a, const uint16_t* b, const uint16_t* c,
                                      uint16_t* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = H(a[i]), y = H(b[i]), z = H(c[i]);
  uint16_t* o = out + i * kHalfResults;
  o[0] = Bits(__hadd(x, y));
  o[1] = Bits(__hsub(x, y));
  o[2] = Bits(__hmul(x, y));
  o[3] = Bits(__hfma(x, y, z));
  o[4] = Bits(__hadd_sat(x, y));
  o[5] = Bits(__hfma_relu(x, y, z));
  o[6] = Bits(__hmin(x, y));
  o[7] = Bits(__hmax(x, y));
  o[8] = Bits(__hmin_nan(x, y));
  o[9] = Bits(__hmax_nan(x, y));
  o[10] = Bits(__hneg(x));
  o[11] = Bits(__habs(y));
  o[12] = (__hlt(x, y) ? 1 : 0) | (__hgtu(x, y) ? 2 : 0) | (__heq(x, y) ? 4 : 0) |
          (__hisnan(x) ? 8 : 0) | (__hge(x, y) ? 16 : 0) | (__hneu(x, y) ? 32 : 0);
  o[13] = Bits(__hmul_sat(x, y));
  o[14] = Bits(__hfma_sat(x, y, z));
  o[15] = Bits(__hsub_sat(x, y));
}

// The same operations on packed pairs: lane 0 of out2 from (a, b, c), lane 1 from (b, c, a).
extern "C" __global__ void half2_arith(const uint16_t* a, const uint16_t* b, const uint16_t* c,
                                       uint32_t* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 x = __halves2half2(H(a[i]), H(b[i]));
  __half2 y = __halves2half2(H(b[i]), H(c[i]));
  __half2 z = __halves2half2(H(c[i]), H(a[i]));
  uint32_t* o = out + i * 6;
  auto bits = [](__half2 h) {
    return uint32_t{Bits(__low2half(h))} | uint32_t{Bits(__high2half(h))} << 16;
  };
  o[0] = bits(__hadd2(x, y));
  o[1] = bits(__hfma2(x, y, z));
  o[2] = bits(__hmul2_sat(x, y));
  o[3] = bits(__hmin2_nan(x, y));
  o[4] = bits(__hlt2(x, y));  // 1.0 or 0.0 per half
  o[5] = bits(__hfma2_relu(x, y, z));
}

extern "C" __global__ void bf16_arith(const uint16_t* a, const uint16_t* b, const uint16_t* c,
                                      uint16_t* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __nv_bfloat16 x = B(a[i]), y = B(b[i]), z = B(c[i]);
  uint16_t* o = out + i * kBf16Results;
  o[0] = Bits(__hadd(x, y));
  o[1] = Bits(__hsub(x, y));
  o[2] = Bits(__hmul(x, y));
  o[3] = Bits(__hfma(x, y, z));
  o[4] = Bits(__hmax(x, y));
  o[5] = Bits(__hmin_nan(x, y));
  o[6] = Bits(__hneg(x));
  o[7] = Bits(__habs(y));
  o[8] = (__hlt(x, y) ? 1 : 0) | (__hgtu(x, y) ? 2 : 0) | (__heq(x, y) ? 4 : 0);
  __nv_bfloat162 p =
      __hfma2(__halves2bfloat162(x, y), __halves2bfloat162(y, z), __halves2bfloat162(z, x));
  o[9] = Bits(__hadd(__low2bfloat16(p), __high2bfloat16(p)));
}

// Conversions with every rounding mode: f32 -> f16/bf16, f64 -> f16/bf16, integers -> f16/bf16,
// f16/bf16 -> f32 and integers.
extern "C" __global__ void half_convert(const float* f, const double* d, const int* s,
                                        const long long* ll, uint16_t* out, int* iout, float* fout,
                                        int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint16_t* o = out + i * 16;
  o[0] = Bits(__float2half_rn(f[i]));
  o[1] = Bits(__float2half_rz(f[i]));
  o[2] = Bits(__float2half_rd(f[i]));
  o[3] = Bits(__float2half_ru(f[i]));
  o[4] = Bits(__float2bfloat16_rn(f[i]));
  o[5] = Bits(__float2bfloat16_rz(f[i]));
  o[6] = Bits(__float2bfloat16_rd(f[i]));
  o[7] = Bits(__float2bfloat16_ru(f[i]));
  o[8] = Bits(__double2half(d[i]));
  o[9] = Bits(__double2bfloat16(d[i]));
  o[10] = Bits(__int2half_rn(s[i]));
  o[11] = Bits(__int2half_rd(s[i]));
  o[12] = Bits(__ll2half_rz(ll[i]));
  o[13] = Bits(__int2bfloat16_ru(s[i]));
  __half2 packed = __floats2half2_rn(f[i], -f[i]);
  o[14] = Bits(__high2half(packed));
  o[15] = Bits(__float2half_rn(f[i]) == __low2half(packed) ? __half(0) : __half(1));
  __half h = __float2half_rn(f[i]);
  int* io = iout + i * 4;
  io[0] = __half2int_rz(h);
  io[1] = __half2int_rd(h);
  io[2] = static_cast<int>(__half2uint_ru(h));
  io[3] = __bfloat162int_rn(__float2bfloat16_rn(f[i]));
  fout[i * 2] = __half2float(h);
  fout[i * 2 + 1] = __bfloat162float(__float2bfloat16_rn(f[i]));
}

// atomicAdd on f16, f16x2, bf16 and bf16x2 counters in global and shared memory: each thread adds
// 1 (and 0.5 to the high halves), sums that every order computes exactly.
extern "C" __global__ void half_atomics(__half* h, __half2* h2, __nv_bfloat16* b,
                                        __nv_bfloat162* b2, float* shared_sums) {
  __shared__ __half sh;
  __shared__ __half2 sh2;
  __shared__ __nv_bfloat16 sb;
  __shared__ __nv_bfloat162 sb2;
  if (threadIdx.x == 0) {
    sh = __float2half(0.0f);
    sh2 = __floats2half2_rn(0.0f, 0.0f);
    sb = __float2bfloat16(0.0f);
    sb2 = __floats2bfloat162_rn(0.0f, 0.0f);
  }
  __syncthreads();
  atomicAdd(h, __float2half(1.0f));
  atomicAdd(h2, __floats2half2_rn(1.0f, 0.5f));
  atomicAdd(b, __float2bfloat16(1.0f));
  atomicAdd(b2, __floats2bfloat162_rn(1.0f, 0.5f));
  atomicAdd(&sh, __float2half(1.0f));
  atomicAdd(&sh2, __floats2half2_rn(1.0f, 0.5f));
  atomicAdd(&sb, __float2bfloat16(1.0f));
  atomicAdd(&sb2, __floats2bfloat162_rn(1.0f, 0.5f));
  __syncthreads();
  if (threadIdx.x == 0) {
    float* s = shared_sums + blockIdx.x * 6;
    s[0] = __half2float(sh);
    s[1] = __low2float(sh2);
    s[2] = __high2float(sh2);
    s[3] = __bfloat162float(sb);
    s[4] = __low2float(sb2);
    s[5] = __high2float(sb2);
  }
}

// Approximate functions (ex2.approx.f16, tanh.approx.f16 and their bf16/x2 forms).
extern "C" __global__ void half_approx(const float* f, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half h = __float2half(f[i]);
  __half2 h2 = __floats2half2_rn(f[i], -f[i]);
  out[i * 4] = __half2float(hexp2(h));
  out[i * 4 + 1] = __half2float(htanh_approx(h));
  out[i * 4 + 2] = __high2float(h2exp2(h2));
  out[i * 4 + 3] = __bfloat162float(hexp2(__float2bfloat16(f[i])));
}

// min/max.NaN on f32 (sm_80+): a NaN operand gives NaN.
extern "C" __global__ void f32_min_max_nan(const float* a, const float* b, float* out) {
  int i = threadIdx.x;
  float lo, hi;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(lo) : "f"(a[i]), "f"(b[i]));
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(hi) : "f"(a[i]), "f"(b[i]));
  out[2 * i] = lo;
  out[2 * i + 1] = hi;
}
