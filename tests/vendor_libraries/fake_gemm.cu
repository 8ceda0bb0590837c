// The kernels of the test's stand-in for NVIDIA's cuBLAS and cuBLASLt (fake_cublas.cc): a plain
// GEMM per combination of storage and accumulation types, D = act(alpha * op(A) * op(B) +
// beta * C + bias), column major, batched by strides; beta == 0 never reads C.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

template <typename T>
__device__ float ToFloat(T v) {
  return static_cast<float>(v);
}
template <>
__device__ float ToFloat(__half v) {
  return __half2float(v);
}
template <>
__device__ float ToFloat(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename Acc, typename T>
__device__ Acc Load(T v) {
  return static_cast<Acc>(ToFloat(v));
}
template <>
__device__ double Load<double, double>(double v) {
  return v;
}

template <typename T, typename Acc>
__device__ T Store(Acc v) {
  return static_cast<T>(v);
}
template <>
__device__ __half Store<__half, float>(float v) {
  return __float2half(v);
}
template <>
__device__ __nv_bfloat16 Store<__nv_bfloat16, float>(float v) {
  return __float2bfloat16(v);
}

// The epilogue: 0 none, 1 ReLU, 2 GELU (tanh approximation, as cuBLASLt's).
template <typename Acc>
__device__ Acc Activate(Acc x, int activation) {
  if (activation == 1) return x > Acc(0) ? x : Acc(0);
  if (activation == 2) {
    const float v = static_cast<float>(x);
    return static_cast<Acc>(0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))));
  }
  return x;
}

// D = act(alpha * op(A) * op(B) + beta * C + bias); C may be D (cuBLAS) or not (cuBLASLt).
template <typename In, typename Out, typename Acc>
__device__ void Gemm(int ta, int tb, int m, int n, int k, const Acc* alpha_at, Acc alpha,
                     const In* a, int lda, long long stride_a, const In* b, int ldb,
                     long long stride_b, const Acc* beta_at, Acc beta, const Out* c, int ldc,
                     long long stride_c, Out* d, int ldd, long long stride_d, const Out* bias,
                     long long stride_bias, int activation) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  a += blockIdx.z * stride_a;
  b += blockIdx.z * stride_b;
  c += blockIdx.z * stride_c;
  d += blockIdx.z * stride_d;
  if (alpha_at != nullptr) alpha = *alpha_at;
  if (beta_at != nullptr) beta = *beta_at;
  Acc sum = 0;
  for (int i = 0; i < k; ++i) {
    const In x =
        ta ? a[row * static_cast<long long>(lda) + i] : a[i * static_cast<long long>(lda) + row];
    const In y =
        tb ? b[i * static_cast<long long>(ldb) + col] : b[col * static_cast<long long>(ldb) + i];
    sum += Load<Acc>(x) * Load<Acc>(y);
  }
  Acc value = alpha * sum;
  if (beta != Acc(0)) value += beta * Load<Acc>(c[col * static_cast<long long>(ldc) + row]);
  if (bias != nullptr) value += Load<Acc>(bias[blockIdx.z * stride_bias + row]);
  d[col * static_cast<long long>(ldd) + row] = Store<Out>(Activate(value, activation));
}

#define FAKE_GEMM(name, In, Out, Acc)                                                             \
  extern "C" __global__ void name(                                                                \
      int ta, int tb, int m, int n, int k, const Acc* alpha_at, Acc alpha, const In* a, int lda,  \
      long long stride_a, const In* b, int ldb, long long stride_b, const Acc* beta_at, Acc beta, \
      const Out* c, int ldc, long long stride_c, Out* d, int ldd, long long stride_d,             \
      const Out* bias, long long stride_bias, int activation) {                                   \
    Gemm<In, Out, Acc>(ta, tb, m, n, k, alpha_at, alpha, a, lda, stride_a, b, ldb, stride_b,      \
                       beta_at, beta, c, ldc, stride_c, d, ldd, stride_d, bias, stride_bias,      \
                       activation);                                                               \
  }
FAKE_GEMM(fake_gemm_f32_f32, float, float, float)
FAKE_GEMM(fake_gemm_f64_f64, double, double, double)
FAKE_GEMM(fake_gemm_f16_f16, __half, __half, float)
FAKE_GEMM(fake_gemm_f16_f32, __half, float, float)
FAKE_GEMM(fake_gemm_bf16_bf16, __nv_bfloat16, __nv_bfloat16, float)
FAKE_GEMM(fake_gemm_bf16_f32, __nv_bfloat16, float, float)
