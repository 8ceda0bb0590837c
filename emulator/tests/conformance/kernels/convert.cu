// Conformance kernels: conversions (cvt) between integer and floating-point types with every
// rounding mode and saturation, float saturation and flush-to-zero, floating-point comparisons
// (references in ../convert_cases.cc).
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

// Integer narrowing, widening and saturating conversions.
extern "C" __global__ void cvt_int_int(const long long* a, int* out) {
  unsigned i = GID;
  long long w = a[i];
  int x = (int)w;
  int* o = out + i * 14;
  o[0] = (signed char)x;
  o[1] = (unsigned char)x;
  o[2] = (short)x;
  o[3] = (unsigned short)x;
  o[4] = (int)(w >> 32);
  o[5] = (int)((unsigned long long)(unsigned)x >> 3);  // cvt.u64.u32
  unsigned short h0, h1, h2, h3;
  asm("cvt.sat.s8.s32 %0, %1;" : "=h"(h0) : "r"(x));
  asm("cvt.sat.u8.s32 %0, %1;" : "=h"(h1) : "r"(x));
  asm("cvt.sat.s16.s32 %0, %1;" : "=h"(h2) : "r"(x));
  asm("cvt.sat.u16.s32 %0, %1;" : "=h"(h3) : "r"(x));
  o[6] = (signed char)h0;  // only the low 8 bits: the extension into a wider register varies
  o[7] = (unsigned char)h1;
  o[8] = (short)h2;
  o[9] = h3;
  int s0, s1, s2, s3;
  asm("cvt.sat.s32.s64 %0, %1;" : "=r"(s0) : "l"(w));
  asm("cvt.sat.u32.s64 %0, %1;" : "=r"(s1) : "l"(w));
  asm("cvt.sat.u32.s32 %0, %1;" : "=r"(s2) : "r"(x));
  asm("cvt.sat.s32.u32 %0, %1;" : "=r"(s3) : "r"(x));
  o[10] = s0;
  o[11] = s1;
  o[12] = s2;
  o[13] = s3;
}

// Float to integer with each rounding mode: out-of-range values saturate, NaN gives 0.
extern "C" __global__ void cvt_float_to_int(const float* a, const double* b, int* out32,
                                            long long* out64) {
  unsigned i = GID;
  float x = a[i];
  double d = b[i];
  int* o = out32 + i * 12;
  o[0] = __float2int_rn(x);
  o[1] = __float2int_rz(x);
  o[2] = __float2int_rd(x);
  o[3] = __float2int_ru(x);
  o[4] = (int)__float2uint_rn(x);
  o[5] = (int)__float2uint_rz(x);
  o[6] = (int)__float2uint_rd(x);
  o[7] = (int)__float2uint_ru(x);
  o[8] = __double2int_rn(d);
  o[9] = __double2int_rz(d);
  o[10] = __double2int_rd(d);
  o[11] = (int)__double2uint_ru(d);
  long long* w = out64 + i * 8;
  w[0] = __float2ll_rn(x);
  w[1] = __float2ll_rz(x);
  w[2] = __float2ll_rd(x);
  w[3] = (long long)__float2ull_ru(x);
  w[4] = __double2ll_rn(d);
  w[5] = __double2ll_rz(d);
  w[6] = __double2ll_ru(d);
  w[7] = (long long)__double2ull_rd(d);
}

// Integer to float with each rounding mode.
extern "C" __global__ void cvt_int_to_float(const int* a, const long long* b, float* out,
                                            double* dout) {
  unsigned i = GID;
  int x = a[i];
  long long w = b[i];
  float* o = out + i * 16;
  o[0] = __int2float_rn(x);
  o[1] = __int2float_rz(x);
  o[2] = __int2float_rd(x);
  o[3] = __int2float_ru(x);
  o[4] = __uint2float_rn((unsigned)x);
  o[5] = __uint2float_rz((unsigned)x);
  o[6] = __uint2float_rd((unsigned)x);
  o[7] = __uint2float_ru((unsigned)x);
  o[8] = __ll2float_rn(w);
  o[9] = __ll2float_rz(w);
  o[10] = __ll2float_rd(w);
  o[11] = __ll2float_ru(w);
  o[12] = __ull2float_rn((unsigned long long)w);
  o[13] = __ull2float_rz((unsigned long long)w);
  o[14] = __ull2float_rd((unsigned long long)w);
  o[15] = __ull2float_ru((unsigned long long)w);
  double* d = dout + i * 6;
  d[0] = __int2double_rn(x);
  d[1] = __ll2double_rn(w);
  d[2] = __ll2double_rz(w);
  d[3] = __ll2double_rd(w);
  d[4] = __ll2double_ru(w);
  d[5] = __ull2double_rz((unsigned long long)w);
}

// Float to float: f64 -> f32 with each rounding mode, f32 -> f64, and rounding to integral
// values (cvt.rni/rzi/rmi/rpi) in both widths.
extern "C" __global__ void cvt_float_float(const double* a, float* out, double* dout) {
  unsigned i = GID;
  double d = a[i];
  float x = (float)d;
  float* o = out + i * 8;
  o[0] = __double2float_rn(d);
  o[1] = __double2float_rz(d);
  o[2] = __double2float_rd(d);
  o[3] = __double2float_ru(d);
  o[4] = rintf(x);
  o[5] = truncf(x);
  o[6] = floorf(x);
  o[7] = ceilf(x);
  double* w = dout + i * 5;
  w[0] = (double)x;
  w[1] = rint(d);
  w[2] = trunc(d);
  w[3] = floor(d);
  w[4] = ceil(d);
}

// Saturation to [0, 1] (.sat: NaN gives 0) and flush-to-zero of subnormal inputs and results.
extern "C" __global__ void float_sat_ftz(const float* a, const float* b, float* out,
                                         double* dout) {
  unsigned i = GID;
  float x = a[i], y = b[i];
  float* o = out + i * 6;
  o[0] = __saturatef(x);
  float r1, r2, r3, r4, r5;
  asm("add.rn.sat.f32 %0, %1, %2;" : "=f"(r1) : "f"(x), "f"(y));
  asm("mul.rn.sat.f32 %0, %1, %2;" : "=f"(r2) : "f"(x), "f"(y));
  asm("fma.rn.sat.f32 %0, %1, %2, %1;" : "=f"(r3) : "f"(x), "f"(y));
  asm("add.rn.ftz.f32 %0, %1, %2;" : "=f"(r4) : "f"(x), "f"(y));
  asm("mul.rn.ftz.f32 %0, %1, %2;" : "=f"(r5) : "f"(x), "f"(y));
  o[1] = r1;
  o[2] = r2;
  o[3] = r3;
  o[4] = r4;
  o[5] = r5;
  double wide;
  asm("cvt.ftz.f64.f32 %0, %1;" : "=d"(wide) : "f"(x));
  dout[i] = wide;
}

// Floating-point comparisons, ordered and unordered (setp), NaN/infinity tests and selp.
extern "C" __global__ void float_compare(const float* a, const float* b, const double* c,
                                         const double* d, unsigned* out, float* fout) {
  unsigned i = GID;
  float x = a[i], y = b[i];
  double p = c[i], q = d[i];
  unsigned bits = 0, k = 0, v;
#define SETP(cmp)                                                                           \
  asm("{ .reg .pred p; setp." cmp ".f32 p, %1, %2; selp.u32 %0, 1, 0, p; }" : "=r"(v)      \
      : "f"(x), "f"(y));                                                                    \
  bits |= v << k++;
  SETP("eq") SETP("ne") SETP("lt") SETP("le") SETP("gt") SETP("ge")
  SETP("equ") SETP("neu") SETP("ltu") SETP("leu") SETP("gtu") SETP("geu")
  SETP("num") SETP("nan")
#undef SETP
  bits |= (unsigned)(p < q) << k++;
  bits |= (unsigned)(p >= q) << k++;
  bits |= (unsigned)!(p < q) << k++;
  bits |= (unsigned)(p != q) << k++;
  bits |= (unsigned)isnan(x) << k++;
  bits |= (unsigned)isinf(x) << k++;
  bits |= (unsigned)isfinite(p) << k++;
  bits |= (unsigned)signbit(x) << k++;
  out[i] = bits;
  fout[i] = x < y ? y : x * 0.5f;
}
