// The kernels of the test's stand-in for NVIDIA's cuBLAS (fake_cublas.cc): a plain GEMM per
// combination of storage and accumulation types, D = alpha * op(A) * op(B) + beta * C in place,
// column major, batched by strides; beta == 0 never reads C.
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

template <typename In, typename Out, typename Acc>
__device__ void Gemm(int ta, int tb, int m, int n, int k, const Acc* alpha_at, Acc alpha,
                     const In* a, int lda, long long stride_a, const In* b, int ldb,
                     long long stride_b, const Acc* beta_at, Acc beta, Out* c, int ldc,
                     long long stride_c) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  a += blockIdx.z * stride_a;
  b += blockIdx.z * stride_b;
  c += blockIdx.z * stride_c;
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
  Out& out = c[col * static_cast<long long>(ldc) + row];
  const Acc before = beta == Acc(0) ? Acc(0) : beta * Load<Acc>(out);
  out = Store<Out>(alpha * sum + before);
}

#define FAKE_GEMM(name, In, Out, Acc)                                                           \
  extern "C" __global__ void name(int ta, int tb, int m, int n, int k, const Acc* alpha_at,     \
                                  Acc alpha, const In* a, int lda, long long stride_a,          \
                                  const In* b, int ldb, long long stride_b, const Acc* beta_at, \
                                  Acc beta, Out* c, int ldc, long long stride_c) {              \
    Gemm<In, Out, Acc>(ta, tb, m, n, k, alpha_at, alpha, a, lda, stride_a, b, ldb, stride_b,    \
                       beta_at, beta, c, ldc, stride_c);                                        \
  }
FAKE_GEMM(fake_gemm_f32_f32, float, float, float)
FAKE_GEMM(fake_gemm_f64_f64, double, double, double)
FAKE_GEMM(fake_gemm_f16_f16, __half, __half, float)
FAKE_GEMM(fake_gemm_f16_f32, __half, float, float)
FAKE_GEMM(fake_gemm_bf16_bf16, __nv_bfloat16, __nv_bfloat16, float)
FAKE_GEMM(fake_gemm_bf16_f32, __nv_bfloat16, float, float)
