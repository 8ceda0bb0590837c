// GEMM: one 16 x 16 tile of C per block, op(A) and op(B) staged through shared memory in 16-wide
// slices of k, accumulated in f32 (f64 for double). Batches run along the grid's z dimension.
// A plain tile kernel: the tensor-core (mma.sync) tiles are still to come.
#include "libraries/kernels/element.cuh"

namespace tally::libraries::kernels {
namespace {

constexpr int kTile = 16;

template <typename T>
struct Operand {
  const T* data;
  const T* const* array;
  int64_t ld;
  int64_t stride;
  bool transposed;

  __device__ const T* Base(int64_t batch) const {
    return array != nullptr ? array[batch] : data + batch * stride;
  }
  // Element (row, col) of op(X).
  __device__ T At(const T* base, int64_t row, int64_t col) const {
    return transposed ? base[col + row * ld] : base[row + col * ld];
  }
};

template <typename TAB, typename TC, typename Acc>
struct GemmArgs {
  int64_t m, n, k, batch;
  Operand<TAB> a, b;
  Operand<TC> c;
  TC* d;
  TC* const* d_array;
  int64_t ldd, stride_d;
  DeviceScalar<Acc> alpha, beta;
  const TC* bias;
  int64_t bias_stride;
  Activation activation;
};

template <typename Acc>
__device__ Acc Activate(Activation activation, Acc x) {
  switch (activation) {
    case Activation::kRelu:
      return x > Acc(0) ? x : Acc(0);
    case Activation::kGelu: {
      const Acc inner = Acc(0.7978845608028654) * (x + Acc(0.044715) * x * x * x);
      return Acc(0.5) * x * (Acc(1) + tanh(inner));
    }
    case Activation::kNone:
      break;
  }
  return x;
}

template <typename TAB, typename TC, typename Acc>
__global__ void __launch_bounds__(kTile* kTile) GemmTile(GemmArgs<TAB, TC, Acc> g) {
  __shared__ Acc a_tile[kTile][kTile + 1];
  __shared__ Acc b_tile[kTile][kTile + 1];
  const int64_t row = int64_t{blockIdx.x} * kTile + threadIdx.x;
  const int64_t col = int64_t{blockIdx.y} * kTile + threadIdx.y;
  const Acc alpha = g.alpha.Get();
  const Acc beta = g.beta.Get();
  for (int64_t batch = blockIdx.z; batch < g.batch; batch += gridDim.z) {
    Acc sum = 0;
    if (alpha != Acc(0)) {  // BLAS: A and B are not referenced then
      const TAB* a = g.a.Base(batch);
      const TAB* b = g.b.Base(batch);
      for (int64_t p0 = 0; p0 < g.k; p0 += kTile) {
        a_tile[threadIdx.y][threadIdx.x] = row < g.m && p0 + threadIdx.y < g.k
                                               ? ToAcc<Acc>(g.a.At(a, row, p0 + threadIdx.y))
                                               : Acc(0);
        b_tile[threadIdx.y][threadIdx.x] = p0 + threadIdx.x < g.k && col < g.n
                                               ? ToAcc<Acc>(g.b.At(b, p0 + threadIdx.x, col))
                                               : Acc(0);
        __syncthreads();
        for (int q = 0; q < kTile; ++q) sum += a_tile[q][threadIdx.x] * b_tile[threadIdx.y][q];
        __syncthreads();
      }
    }
    if (row < g.m && col < g.n) {
      Acc value = alpha * sum;
      // BLAS: C is not read where beta is 0.
      if (beta != Acc(0)) value += beta * ToAcc<Acc>(g.c.At(g.c.Base(batch), row, col));
      if (g.bias != nullptr) value += ToAcc<Acc>(g.bias[batch * g.bias_stride + row]);
      value = Activate(g.activation, value);
      TC* d = g.d_array != nullptr ? g.d_array[batch] : g.d + batch * g.stride_d;
      d[row + col * g.ldd] = FromAcc<TC>(value);
    }
  }
}

template <typename T>
Operand<T> ToOperand(const MatrixOperand& x) {
  return {static_cast<const T*>(x.data), reinterpret_cast<const T* const*>(x.array), x.ld, x.stride,
          x.transposed};
}

template <typename TAB, typename TC, typename Acc>
cudaError_t Launch(const GemmProblem& p, cudaStream_t stream) {
  GemmArgs<TAB, TC, Acc> args{p.m,
                              p.n,
                              p.k,
                              p.batch,
                              ToOperand<TAB>(p.a),
                              ToOperand<TAB>(p.b),
                              ToOperand<TC>(p.c_in),
                              static_cast<TC*>(p.d_data),
                              reinterpret_cast<TC* const*>(p.d_array),
                              p.ldd,
                              p.stride_d,
                              ToDevice<Acc>(p.alpha),
                              ToDevice<Acc>(p.beta),
                              static_cast<const TC*>(p.bias),
                              p.bias_stride,
                              p.activation};
  const int64_t grid_x = (p.m + kTile - 1) / kTile;
  const int64_t grid_y = (p.n + kTile - 1) / kTile;
  if (grid_x > 0x7fffffff || grid_y > 65535) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned int>(grid_x), static_cast<unsigned int>(grid_y),
                  static_cast<unsigned int>(p.batch < 65535 ? p.batch : 65535));
  return LaunchKernel(GemmTile<TAB, TC, Acc>, grid, dim3(kTile, kTile), stream, args);
}

}  // namespace

cudaError_t LaunchGemm(const GemmProblem& p, cudaStream_t stream) {
  using T = ElementType;
  if (p.ab == T::kF32 && p.c == T::kF32) return Launch<float, float, float>(p, stream);
  if (p.ab == T::kF64 && p.c == T::kF64) return Launch<double, double, double>(p, stream);
  if (p.ab == T::kF16 && p.c == T::kF16) return Launch<__half, __half, float>(p, stream);
  if (p.ab == T::kBF16 && p.c == T::kBF16) {
    return Launch<__nv_bfloat16, __nv_bfloat16, float>(p, stream);
  }
  if (p.ab == T::kF16 && p.c == T::kF32) return Launch<__half, float, float>(p, stream);
  if (p.ab == T::kBF16 && p.c == T::kF32) return Launch<__nv_bfloat16, float, float>(p, stream);
  return cudaErrorNotSupported;
}

}  // namespace tally::libraries::kernels
