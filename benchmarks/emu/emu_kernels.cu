// The emulator speed benchmark's kernels (benchmarks/emu_speed.cc), compiled to PTX by nvcc at
// build time. Each has a plain C++ twin in emu_speed.cc that computes the same thing.

extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// C = A * B for n x n row-major matrices, n a multiple of kTile, blocks of kTile x kTile.
constexpr int kTile = 16;
extern "C" __global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[kTile][kTile];
  __shared__ float tb[kTile][kTile];
  int row = blockIdx.y * kTile + threadIdx.y;
  int col = blockIdx.x * kTile + threadIdx.x;
  float sum = 0.0f;
  for (int t = 0; t < n; t += kTile) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < kTile; ++k) sum += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = sum;
}

// out[block] = sum of the block's slice of `in` (blockDim.x elements per block, a multiple of
// 32): each warp reduces with shfl.down, warp sums meet in shared memory.
extern "C" __global__ void shuffle_reduce(const unsigned* in, unsigned* out) {
  __shared__ unsigned warp_sums[32];
  unsigned v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? warp_sums[lane] : 0;
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) out[blockIdx.x] = v;
  }
}
