// Conformance kernels: f16 and bf16 arithmetic, scalar and packed, and conversions (references
// in ../half_cases.cc). Results are written as f32 (exact widening).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define GID (blockIdx.x * blockDim.x + threadIdx.x)

extern "C" __global__ void half_arith(const float* a, const float* b, const float* c,
                                      float* out) {
  unsigned i = GID;
  __half x = __float2half_rn(a[i]), y = __float2half_rn(b[i]), z = __float2half_rn(c[i]);
  float* o = out + i * 8;
  o[0] = __half2float(x);
  o[1] = __half2float(__hadd(x, y));
  o[2] = __half2float(__hsub(x, z));
  o[3] = __half2float(__hmul(x, y));
  o[4] = __half2float(__hfma(x, y, z));
  __half2 p = __halves2half2(x, y), q = __halves2half2(z, x);
  __half2 r = __hfma2(p, q, p);
  o[5] = __low2float(r);
  o[6] = __high2float(r);
  o[7] = __hlt(x, y) ? 1.0f : 0.0f;
}

extern "C" __global__ void bf16_arith(const float* a, const float* b, const float* c,
                                      float* out) {
#if __CUDA_ARCH__ >= 800  // bf16 arithmetic: sm_80 and newer
  unsigned i = GID;
  __nv_bfloat16 x = __float2bfloat16_rn(a[i]), y = __float2bfloat16_rn(b[i]),
                z = __float2bfloat16_rn(c[i]);
  float* o = out + i * 6;
  o[0] = __bfloat162float(x);
  o[1] = __bfloat162float(x + y);
  o[2] = __bfloat162float(__hmul(x, y));
  o[3] = __bfloat162float(__hfma(x, y, z));
  __nv_bfloat162 p = __halves2bfloat162(x, y);
  __nv_bfloat162 r = __hmul2(p, p);
  o[4] = __low2float(r);
  o[5] = __high2float(r);
#endif
}
