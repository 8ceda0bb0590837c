// Corpus: __half, __half2 and __nv_bfloat16 arithmetic, conversions and math functions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__global__ void HalfMath(const __half* a, const __half* b, __half* out, float* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = a[i];
  __half y = b[i];
  __half r = __hfma(x, y, __float2half(0.5f));
  r = __hadd(r, __hmul(x, x));
  r = __hmax(r, __hneg(y));
  if (__hlt(r, __float2half(-4.0f))) r = __float2half(-4.0f);
  out[i] = r;
  wide[i] = __half2float(hsqrt(__habs(x))) + __half2float(hexp(__float2half(0.01f * i))) +
            __half2float(hrcp(__hadd(y, __float2half(8.0f))));
}

__global__ void Half2Math(const __half2* a, const __half2* b, __half2* out, float2* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 p = __hmul2(a[i], b[i]);
  __half2 q = __hfma2(a[i], __float2half2_rn(2.0f), p);
  q = __hsub2(q, __lowhigh2highlow(b[i]));
  out[i] = __hmax2(q, __floats2half2_rn(-1.0f, -2.0f));
  wide[i] = __half22float2(h2cos(__hmul2(q, __float2half2_rn(0.125f))));
}

__global__ void Bfloat16Math(const __nv_bfloat16* a, const float* f, __nv_bfloat16* out,
                             __nv_bfloat162* pairs, float* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __nv_bfloat16 x = a[i];
  __nv_bfloat16 y = __float2bfloat16(f[i]);
  __nv_bfloat16 r = __hadd(__hmul(x, y), __float2bfloat16(1.0f));
  r = __hmax(__hsub(r, __hmul(x, y)), __float2bfloat16_rz(-3.5f));
  out[i] = r;
  pairs[i] = __hadd2(__halves2bfloat162(x, y), __float2bfloat162_rn(0.25f));
  wide[i] =
      __bfloat162float(r) + __bfloat162float(__float2bfloat16(__half2float(__float2half(f[i]))));
}
