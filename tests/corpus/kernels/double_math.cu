// Corpus: double-precision math library calls and single-precision intrinsics with explicit
// rounding modes and fast approximations.

__global__ void DoubleMath(const double* in, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = in[i];
  double ax = fabs(x) + 1.0;
  double r = sqrt(ax) + rsqrt(ax) + exp(-ax) + log(ax) + log2(ax) + sin(x) * cos(x);
  r += pow(ax, 0.75) + fma(x, 3.0, -1.0) + floor(x) + ceil(x) + trunc(x) + round(x);
  r += fmin(x, 0.5) + fmax(x, -0.5) + atan2(x, ax) + tanh(x) + erf(x) + cbrt(x);
  r += __dadd_rn(x, 1e-3) + __dmul_rz(x, 1.5) + __ddiv_ru(x, ax) + __drcp_rd(ax) + __dsqrt_rn(ax);
  out[i] = r + x / ax + static_cast<double>(static_cast<long long>(x * 1000.0));
}

__global__ void FloatIntrinsics(const float* in, float* out, int* ints, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  float ax = fabsf(x) + 1.0f;
  float r = __expf(x) + __logf(ax) + __sinf(x) + __cosf(x) + __fdividef(x, ax) + __powf(ax, 0.5f);
  r += __fadd_rz(x, 0.1f) + __fmul_ru(x, 3.0f) + __fmaf_rd(x, x, 1.0f) + __frcp_rn(ax) +
       __fsqrt_ru(ax) + __saturatef(x) + rsqrtf(ax) + sqrtf(ax) + exp2f(x) + erfcf(x);
  out[i] = r + x / ax;
  ints[i] = __float2int_rd(x * 100.0f) + __float2int_ru(x) + __float_as_int(x) +
            static_cast<int>(__float2uint_rn(ax)) + __double2int_rz(static_cast<double>(x) * 7.0) +
            static_cast<int>(__float2ll_rn(x * 1e6f) >> 8) + isnan(x) + isinf(x * 1e30f);
}
