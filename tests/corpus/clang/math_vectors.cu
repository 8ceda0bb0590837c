// Corpus (clang): math builtins, vector types (v4 loads and stores), 64-bit integer
// arithmetic and selects.
#include "nvptx_shim.h"

typedef float float4_t __attribute__((ext_vector_type(4)));
typedef int int2_t __attribute__((ext_vector_type(2)));

__global__ void VectorMath(const float4_t* in, float4_t* out, const int2_t* pairs, int2_t* swapped,
                           unsigned n) {
  unsigned i = GlobalX();
  if (i >= n) return;
  float4_t v = in[i];
  float4_t r;
  r.x = __builtin_sqrtf(__builtin_fabsf(v.x));
  r.y = __nvvm_ex2_approx_f(v.y);
  r.z = __nvvm_fma_rn_f(v.z, v.w, 1.0f);
  r.w = v.x < v.y ? __nvvm_fmax_f(v.z, v.w) : __nvvm_fmin_f(v.z, v.w);
  out[i] = r * 0.5f;
  int2_t p = pairs[i];
  swapped[i] = p.yx;
}

__global__ void DoubleAndWide(const double* in, double* out, long long* wide, unsigned n) {
  unsigned i = GlobalX();
  if (i >= n) return;
  double x = in[i];
  out[i] = __nvvm_fma_rn_d(x, x, __builtin_sqrt(__builtin_fabs(x))) + __nvvm_rcp_rn_d(x + 2.0);
  long long w = static_cast<long long>(x * 1e9);
  wide[i] = (w >> 7) * 3 + (w % 1000) - __builtin_popcountll(w) + __builtin_clzll(w | 1);
}
