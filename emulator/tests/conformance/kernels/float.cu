// Conformance kernels: f32/f64 arithmetic with every rounding mode, IEEE operations, the
// approximate functions and the math library (references in ../float_cases.cc).
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

// add/sub/mul/fma/div/rcp/sqrt .f32 in each rounding mode (.rn .rz .rm .rp): bit-exact.
extern "C" __global__ void f32_rounding(const float* a, const float* b, const float* c,
                                        float* out) {
  unsigned i = GID;
  float x = a[i], y = b[i], z = c[i];
  float* o = out + i * 28;
  o[0] = __fadd_rn(x, y);
  o[1] = __fadd_rz(x, y);
  o[2] = __fadd_rd(x, y);
  o[3] = __fadd_ru(x, y);
  o[4] = __fsub_rn(x, z);
  o[5] = __fsub_rz(x, z);
  o[6] = __fsub_rd(x, z);
  o[7] = __fsub_ru(x, z);
  o[8] = __fmul_rn(x, y);
  o[9] = __fmul_rz(x, y);
  o[10] = __fmul_rd(x, y);
  o[11] = __fmul_ru(x, y);
  o[12] = __fmaf_rn(x, y, z);
  o[13] = __fmaf_rz(x, y, z);
  o[14] = __fmaf_rd(x, y, z);
  o[15] = __fmaf_ru(x, y, z);
  o[16] = __fdiv_rn(x, y);
  o[17] = __fdiv_rz(x, y);
  o[18] = __fdiv_rd(x, y);
  o[19] = __fdiv_ru(x, y);
  o[20] = __frcp_rn(y);
  o[21] = __frcp_rz(y);
  o[22] = __frcp_rd(y);
  o[23] = __frcp_ru(y);
  float m = fabsf(z);
  o[24] = __fsqrt_rn(m);
  o[25] = __fsqrt_rz(m);
  o[26] = __fsqrt_rd(m);
  o[27] = __fsqrt_ru(m);
}

// The same for f64.
extern "C" __global__ void f64_rounding(const double* a, const double* b, const double* c,
                                        double* out) {
  unsigned i = GID;
  double x = a[i], y = b[i], z = c[i];
  double* o = out + i * 28;
  o[0] = __dadd_rn(x, y);
  o[1] = __dadd_rz(x, y);
  o[2] = __dadd_rd(x, y);
  o[3] = __dadd_ru(x, y);
  o[4] = __dsub_rn(x, z);
  o[5] = __dsub_rz(x, z);
  o[6] = __dsub_rd(x, z);
  o[7] = __dsub_ru(x, z);
  o[8] = __dmul_rn(x, y);
  o[9] = __dmul_rz(x, y);
  o[10] = __dmul_rd(x, y);
  o[11] = __dmul_ru(x, y);
  o[12] = __fma_rn(x, y, z);
  o[13] = __fma_rz(x, y, z);
  o[14] = __fma_rd(x, y, z);
  o[15] = __fma_ru(x, y, z);
  o[16] = __ddiv_rn(x, y);
  o[17] = __ddiv_rz(x, y);
  o[18] = __ddiv_rd(x, y);
  o[19] = __ddiv_ru(x, y);
  o[20] = __drcp_rn(y);
  o[21] = __drcp_rz(y);
  o[22] = __drcp_rd(y);
  o[23] = __drcp_ru(y);
  double m = fabs(z);
  o[24] = __dsqrt_rn(m);
  o[25] = __dsqrt_rz(m);
  o[26] = __dsqrt_rd(m);
  o[27] = __dsqrt_ru(m);
}

// IEEE operations on special values: min/max (NaN ignored), abs, neg, copysign, division and
// square root of zeros, infinities and NaN.
extern "C" __global__ void float_ieee_special(const float* a, const float* b, const double* c,
                                              const double* d, float* minmax, float* out,
                                              double* dminmax, double* dout) {
  unsigned i = GID;
  float x = a[i], y = b[i];
  double p = c[i], q = d[i];
  minmax[i * 2] = fminf(x, y);
  minmax[i * 2 + 1] = fmaxf(x, y);
  float* o = out + i * 6;
  o[0] = fabsf(x);
  o[1] = -x;
  o[2] = copysignf(x, y);
  o[3] = x / y;
  o[4] = sqrtf(x);
  o[5] = __fmul_rn(x, y) + 1.0f;
  dminmax[i * 2] = fmin(p, q);
  dminmax[i * 2 + 1] = fmax(p, q);
  double* w = dout + i * 5;
  w[0] = fabs(p);
  w[1] = -p;
  w[2] = copysign(p, q);
  w[3] = p / q;
  w[4] = sqrt(p);
}

// The approximate instructions (ex2, lg2, sin, cos, rcp, sqrt, rsqrt, tanh .approx) and the
// fast intrinsics built on them.
extern "C" __global__ void f32_approx(const float* a, const float* b, float* out) {
  unsigned i = GID;
  float x = a[i], y = b[i];  // x in [-3, 3], y in [0.25, 8]
  float r[8];
  asm("ex2.approx.f32 %0, %1;" : "=f"(r[0]) : "f"(x));
  asm("lg2.approx.f32 %0, %1;" : "=f"(r[1]) : "f"(y));
  asm("sin.approx.f32 %0, %1;" : "=f"(r[2]) : "f"(x));
  asm("cos.approx.f32 %0, %1;" : "=f"(r[3]) : "f"(x));
  asm("rcp.approx.f32 %0, %1;" : "=f"(r[4]) : "f"(y));
  asm("sqrt.approx.f32 %0, %1;" : "=f"(r[5]) : "f"(y));
  asm("rsqrt.approx.f32 %0, %1;" : "=f"(r[6]) : "f"(y));
  asm("tanh.approx.f32 %0, %1;" : "=f"(r[7]) : "f"(x));
  float* o = out + i * 14;
  for (int k = 0; k < 8; ++k) o[k] = r[k];
  o[8] = __expf(x);
  o[9] = __logf(y);
  o[10] = __sinf(x);
  o[11] = __cosf(x);
  o[12] = __fdividef(x, y);
  o[13] = rsqrtf(y);
}

// f64 approximations: rcp.approx.ftz.f64 and rsqrt.approx.f64.
extern "C" __global__ void f64_approx(const double* a, double* out) {
  unsigned i = GID;
  double x = a[i];
  double r0, r1;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r0) : "d"(x));
  asm("rsqrt.approx.f64 %0, %1;" : "=d"(r1) : "d"(x));
  out[i * 2] = r0;
  out[i * 2 + 1] = r1;
}

// The CUDA math library (libdevice code compiled into the module), single precision.
extern "C" __global__ void f32_math(const float* a, const float* b, float* out) {
  unsigned i = GID;
  float x = a[i], y = b[i];  // x in [-4, 4], y in [0.1, 10]
  float* o = out + i * 12;
  o[0] = expf(x);
  o[1] = logf(y);
  o[2] = sinf(x * 10.0f);
  o[3] = cosf(x * 10.0f);
  o[4] = tanf(x * 0.3f);
  o[5] = powf(y, x);
  o[6] = tanhf(x);
  o[7] = erff(x);
  o[8] = atan2f(x, y - 5.0f);
  o[9] = cbrtf(x);
  o[10] = log1pf(y);
  o[11] = exp2f(x) + log2f(y) + log10f(y);
}

// The CUDA math library, double precision.
extern "C" __global__ void f64_math(const double* a, const double* b, double* out) {
  unsigned i = GID;
  double x = a[i], y = b[i];
  double* o = out + i * 12;
  o[0] = exp(x);
  o[1] = log(y);
  o[2] = sin(x * 10.0);
  o[3] = cos(x * 10.0);
  o[4] = tan(x * 0.3);
  o[5] = pow(y, x);
  o[6] = tanh(x);
  o[7] = erf(x);
  o[8] = atan2(x, y - 5.0);
  o[9] = cbrt(x);
  o[10] = log1p(y);
  o[11] = exp2(x) + log2(y) + log10(y);
}

// Horner evaluation and Newton iterations with explicit fma: bit-exact in both widths.
extern "C" __global__ void float_fma_chain(const float* a, const double* b, float* out,
                                           double* dout) {
  unsigned i = GID;
  float x = a[i];
  double p = b[i];
  const float cf[6] = {0.5f, -1.25f, 3.0f, 0.125f, -2.0f, 1.0f};
  float h = cf[0];
  for (int k = 1; k < 6; ++k) h = fmaf(h, x, cf[k]);
  float r = 0.25f;  // 1/(2 + |x|) by Newton-Raphson
  float den = 2.0f + fabsf(x);
  for (int k = 0; k < 6; ++k) r = fmaf(r, fmaf(-den, r, 1.0f), r);
  out[i * 2] = h;
  out[i * 2 + 1] = r;
  double g = 0.0;
  for (int k = 0; k < 8; ++k) g = fma(g, p, (double)(k + 1) * 0.25);
  dout[i] = g;
}
