// Numerics of the landed instruction families: directed rounding, conversions with saturation,
// NaN-aware comparisons, 64-bit integer arithmetic, shared-memory atomics and generic pointers
// into shared and local memory. References are in numerics_test.cc.
#include <cstdint>

// Directed-rounding intrinsics compile to add.rz, mul.rp, div.rm, sqrt.rp, cvt.rmi, cvt.rz...
extern "C" __global__ void rounding(const float* a, const float* b, const double* c, float* out,
                                    int* iout) {
  int i = threadIdx.x;
  float x = a[i], y = b[i];
  float* o = out + i * 8;
  o[0] = __fadd_rz(x, y);
  o[1] = __fmul_ru(x, y);
  o[2] = __fdiv_rd(x, y);
  o[3] = __fsqrt_ru(fabsf(x));
  o[4] = __fmaf_rz(x, y, 1.0f);
  o[5] = __double2float_rz(c[i]);
  o[6] = __double2float_ru(c[i]);
  o[7] = __int2float_rz(0x7fffffff - i * 1000);
  iout[i * 4] = __float2int_rd(x * 7.5f);
  iout[i * 4 + 1] = __float2int_ru(x * 7.5f);
  iout[i * 4 + 2] = __float2uint_rz(x * 1e9f);  // negative -> 0, large -> saturates
  iout[i * 4 + 3] = (int)__double2ll_rn(c[i] * 1e12);
}

extern "C" __global__ void compares(const float* a, const float* b, int* out) {
  int i = threadIdx.x;
  float x = a[i], y = b[i];
  int bits = 0;
  bits |= (x < y) << 0;
  bits |= (x <= y) << 1;
  bits |= (x == y) << 2;
  bits |= (x != y) << 3;
  bits |= !(x >= y) << 4;  // unordered-or-less
  bits |= isnan(x) << 5;
  bits |= (isnan(x) || isnan(y) || x > y) << 6;
  bits |= ((x < y) && (y > 0.0f)) << 7;
  out[i] = bits;
}

extern "C" __global__ void wide_ints(const int64_t* a, const int64_t* b, int64_t* out) {
  int i = threadIdx.x;
  int64_t x = a[i], y = b[i];
  uint64_t ux = x, uy = y;
  int64_t* o = out + i * 8;
  o[0] = x * y;
  o[1] = __mul64hi(x, y);
  o[2] = (int64_t)__umul64hi(ux, uy);
  o[3] = y != 0 ? x / y : 0;
  o[4] = y != 0 ? x % y : 0;
  o[5] = (int64_t)(uy != 0 ? ux / uy : 0);
  o[6] = x >> (y & 63);
  o[7] = (int64_t)__popcll(ux) + __clzll(x) * 100 + (int64_t)__brevll(ux);
}

extern "C" __global__ void conversions(const int* a, const double* d, int* out, double* dout) {
  int i = threadIdx.x;
  int x = a[i];
  int* o = out + i * 6;
  o[0] = (unsigned char)x;
  o[1] = (short)x;
  o[2] = (int)(unsigned short)(x >> 4);
  o[3] = __float2int_rn((float)d[i]);
  o[4] = (int)(float)(int64_t)(d[i] * 1e8);  // saturates for |d| > ~21
  o[5] = (int)(d[i] < 0 ? 0u : (unsigned)d[i]);
  dout[i * 2] = (double)(uint64_t)(x < 0 ? -x : x) * 1e-3;
  dout[i * 2 + 1] = (double)(float)d[i];
}

// Shared-memory atomics from every thread of a 2-D block, then a per-block result.
extern "C" __global__ void shared_atomics(const int* in, int* out) {
  __shared__ int histogram[16];
  __shared__ unsigned maximum;
  int t = threadIdx.y * blockDim.x + threadIdx.x;
  if (t < 16) histogram[t] = 0;
  if (t == 0) maximum = 0;
  __syncthreads();
  int v = in[blockIdx.x * blockDim.x * blockDim.y + t];
  atomicAdd(&histogram[v & 15], 1);
  atomicMax(&maximum, (unsigned)v);
  __syncthreads();
  if (t < 16) out[blockIdx.x * 17 + t] = histogram[t];
  if (t == 0) out[blockIdx.x * 17 + 16] = maximum;
}

// A device function taking a generic pointer that points into shared or local memory.
__device__ __noinline__ int sum_generic(const int* p, int n) {
  int s = 0;
  for (int k = 0; k < n; ++k) s += p[k];
  return s;
}

extern "C" __global__ void generic_pointers(const int* in, int* out) {
  __shared__ int tile[64];
  int local[8];
  int t = threadIdx.x;
  tile[t] = in[t];
  for (int k = 0; k < 8; ++k) local[k] = in[(t + k) & 63] * (k + 1);
  __syncthreads();
  out[t * 2] = sum_generic(tile + (t & ~7), 8);
  out[t * 2 + 1] = sum_generic(local, 8);
}

// Funnel shifts, three-input logic and copysign, written as inline PTX.
extern "C" __global__ void bit_ops(const unsigned* a, const unsigned* b, const float* f,
                                   unsigned* out, float* fout) {
  int i = threadIdx.x;
  unsigned x = a[i], y = b[i], r0, r1, r2, r3, r4, r5;
  unsigned n = y & 63;
  asm("shf.l.wrap.b32 %0, %1, %2, %3;" : "=r"(r0) : "r"(x), "r"(y), "r"(n));
  asm("shf.r.wrap.b32 %0, %1, %2, %3;" : "=r"(r1) : "r"(x), "r"(y), "r"(n));
  asm("shf.l.clamp.b32 %0, %1, %2, %3;" : "=r"(r2) : "r"(x), "r"(y), "r"(n));
  asm("shf.r.clamp.b32 %0, %1, %2, %3;" : "=r"(r3) : "r"(x), "r"(y), "r"(n));
  asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(r4) : "r"(x), "r"(y), "r"(n));  // a ^ b ^ c
  asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(r5) : "r"(x), "r"(y), "r"(n));  // majority
  unsigned* o = out + i * 6;
  o[0] = r0, o[1] = r1, o[2] = r2, o[3] = r3, o[4] = r4, o[5] = r5;
  float s;
  asm("copysign.f32 %0, %1, %2;" : "=f"(s) : "f"(f[i]), "f"(f[i + 1]));
  fout[i] = s;
}

// sad and 16-bit compare-and-swap (atomicCAS on unsigned short, sm_70+).
extern "C" __global__ void sad_cas16(const int* a, const int* b, int* out, unsigned short* words) {
  int i = threadIdx.x;
  out[i] = __sad(a[i], b[i], 7u) + (int)__usad(a[i], b[i], 0u);
  unsigned short* word = words + (i & 3);
  unsigned short old = *word, seen;
  while ((seen = atomicCAS(word, old, (unsigned short)(old + 1))) != old) old = seen;
}
