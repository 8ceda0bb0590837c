// GEMM, batches along the grid's z dimension, op(A) and op(B) staged through shared memory in
// 16-wide slices of k (so any transpose, leading dimension and alignment is one case):
// - f16 and bf16 A and B: tensor cores (the wmma API, m16n16k16 with f32 accumulation), one
//   32 x 32 tile of C per block of four warps;
// - f32 and f64: one 16 x 16 tile of C per block, accumulated in f32 (f64 for double), a plain
//   tile kernel (TF32 tensor-core tiles are still to come).
#include <mma.h>

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

// D(row, col) = act(alpha sum + beta C(row, col) + bias(row)); C is not read where beta is 0
// (BLAS).
template <typename TAB, typename TC, typename Acc>
__device__ void StoreResult(const GemmArgs<TAB, TC, Acc>& g, int64_t batch, int64_t row,
                            int64_t col, Acc sum, Acc alpha, Acc beta) {
  Acc value = alpha * sum;
  if (beta != Acc(0)) value += beta * ToAcc<Acc>(g.c.At(g.c.Base(batch), row, col));
  if (g.bias != nullptr) value += ToAcc<Acc>(g.bias[batch * g.bias_stride + row]);
  value = Activate(g.activation, value);
  TC* d = g.d_array != nullptr ? g.d_array[batch] : g.d + batch * g.stride_d;
  d[row + col * g.ldd] = FromAcc<TC>(value);
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
    if (row < g.m && col < g.n) StoreResult(g, batch, row, col, sum, alpha, beta);
  }
}

// Tensor-core tiles: four warps, each one 16 x 16 quarter of a 32 x 32 tile of C. Each 16-wide
// slice of k is staged in shared memory as bf16/f16 (zeros beyond the matrices' edges), so the
// fragments load from aligned rows whatever A's and B's layout.
constexpr int kWmmaTile = 32;
constexpr int kWmmaK = 16;
constexpr int kWmmaThreads = 128;

template <typename TAB, typename TC>
__global__ void __launch_bounds__(kWmmaThreads) GemmWmma(GemmArgs<TAB, TC, float> g) {
  namespace wmma = nvcuda::wmma;
  __shared__ __align__(32) TAB a_tile[kWmmaTile][kWmmaK];  // row-major: [row][k]
  __shared__ __align__(32) TAB b_tile[kWmmaK][kWmmaTile];  // row-major: [k][col]
  __shared__ __align__(32) float c_tile[kWmmaTile][kWmmaTile];
  const int warp = threadIdx.x / 32;
  const int warp_row = warp / 2 * 16, warp_col = warp % 2 * 16;
  const int64_t row0 = int64_t{blockIdx.x} * kWmmaTile, col0 = int64_t{blockIdx.y} * kWmmaTile;
  const float alpha = g.alpha.Get();
  const float beta = g.beta.Get();
  const TAB zero = FromAcc<TAB>(0.0f);
  for (int64_t batch = blockIdx.z; batch < g.batch; batch += gridDim.z) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    if (alpha != 0.0f) {  // BLAS: A and B are not referenced then
      const TAB* a = g.a.Base(batch);
      const TAB* b = g.b.Base(batch);
      for (int64_t p0 = 0; p0 < g.k; p0 += kWmmaK) {
        for (int i = threadIdx.x; i < kWmmaTile * kWmmaK; i += kWmmaThreads) {
          const int r = i / kWmmaK, q = i % kWmmaK;  // A: row r, k q
          a_tile[r][q] =
              row0 + r < g.m && p0 + q < g.k ? g.a.At(a, row0 + r, p0 + q) : zero;
          const int bq = i / kWmmaTile, c = i % kWmmaTile;  // B: k bq, column c
          b_tile[bq][c] =
              p0 + bq < g.k && col0 + c < g.n ? g.b.At(b, p0 + bq, col0 + c) : zero;
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, TAB, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, TAB, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, &a_tile[warp_row][0], kWmmaK);
        wmma::load_matrix_sync(fb, &b_tile[0][warp_col], kWmmaTile);
        wmma::mma_sync(acc, fa, fb, acc);
        __syncthreads();
      }
    }
    wmma::store_matrix_sync(&c_tile[warp_row][warp_col], acc, kWmmaTile, wmma::mem_row_major);
    __syncthreads();
    for (int i = threadIdx.x; i < kWmmaTile * kWmmaTile; i += kWmmaThreads) {
      const int r = i % kWmmaTile, c = i / kWmmaTile;  // neighbouring threads: neighbouring rows
      if (row0 + r < g.m && col0 + c < g.n) {
        StoreResult(g, batch, row0 + r, col0 + c, c_tile[r][c], alpha, beta);
      }
    }
    __syncthreads();  // c_tile is written again by the next batch entry
  }
}

template <typename T>
Operand<T> ToOperand(const MatrixOperand& x) {
  return {static_cast<const T*>(x.data), reinterpret_cast<const T* const*>(x.array), x.ld, x.stride,
          x.transposed};
}

template <typename TAB, typename TC, typename Acc>
GemmArgs<TAB, TC, Acc> ArgsOf(const GemmProblem& p) {
  return {p.m,
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
}

// The grid of `tile` x `tile` tiles of C, one batch entry per z (the kernels loop over more).
bool GridOf(const GemmProblem& p, int64_t tile, dim3* grid) {
  const int64_t grid_x = (p.m + tile - 1) / tile;
  const int64_t grid_y = (p.n + tile - 1) / tile;
  if (grid_x > 0x7fffffff || grid_y > 65535) return false;
  *grid = dim3(static_cast<unsigned int>(grid_x), static_cast<unsigned int>(grid_y),
               static_cast<unsigned int>(p.batch < 65535 ? p.batch : 65535));
  return true;
}

template <typename TAB, typename TC, typename Acc>
cudaError_t Launch(const GemmProblem& p, cudaStream_t stream) {
  dim3 grid;
  if (!GridOf(p, kTile, &grid)) return cudaErrorInvalidConfiguration;
  return LaunchKernel(GemmTile<TAB, TC, Acc>, grid, dim3(kTile, kTile), stream,
                      ArgsOf<TAB, TC, Acc>(p));
}

template <typename TAB, typename TC>
cudaError_t LaunchTensorCores(const GemmProblem& p, cudaStream_t stream) {
  dim3 grid;
  if (!GridOf(p, kWmmaTile, &grid)) return cudaErrorInvalidConfiguration;
  return LaunchKernel(GemmWmma<TAB, TC>, grid, dim3(kWmmaThreads), stream,
                      ArgsOf<TAB, TC, float>(p));
}

}  // namespace

cudaError_t LaunchGemm(const GemmProblem& p, cudaStream_t stream) {
  using T = ElementType;
  if (p.ab == T::kF32 && p.c == T::kF32) return Launch<float, float, float>(p, stream);
  if (p.ab == T::kF64 && p.c == T::kF64) return Launch<double, double, double>(p, stream);
  if (p.ab == T::kF16 && p.c == T::kF16) return LaunchTensorCores<__half, __half>(p, stream);
  if (p.ab == T::kBF16 && p.c == T::kBF16) {
    return LaunchTensorCores<__nv_bfloat16, __nv_bfloat16>(p, stream);
  }
  if (p.ab == T::kF16 && p.c == T::kF32) return LaunchTensorCores<__half, float>(p, stream);
  if (p.ab == T::kBF16 && p.c == T::kF32) return LaunchTensorCores<__nv_bfloat16, float>(p, stream);
  return cudaErrorNotSupported;
}

}  // namespace tally::libraries::kernels
