// Corpus: warp shuffles, votes, match and warp reductions (the latter only on sm_80+).

constexpr unsigned kFullMask = 0xffffffffu;

__device__ float WarpSum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(kFullMask, v, offset);
  return v;
}

__device__ double WarpMaxDouble(double v) {
  for (int mask = 16; mask > 0; mask /= 2) v = fmax(v, __shfl_xor_sync(kFullMask, v, mask));
  return v;
}

__global__ void Shuffles(const float* in, const double* din, float* out, double* dout, int* scan) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  float s = WarpSum(in[i]);
  double m = WarpMaxDouble(din[i]);
  // Inclusive prefix sum with shfl.up.
  int x = lane + 1;
  for (int d = 1; d < 32; d *= 2) {
    int y = __shfl_up_sync(kFullMask, x, d);
    if (lane >= d) x += y;
  }
  scan[i] = x;
  // Broadcast from lane 3 of each 8-lane segment (width argument).
  float b = __shfl_sync(kFullMask, in[i], 3, 8);
  if (lane == 0) {
    out[i / 32] = s + b;
    dout[i / 32] = m;
  }
}

__global__ void Votes(const int* in, unsigned* ballots, int* flags) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  unsigned active = __activemask();
  unsigned ballot = __ballot_sync(kFullMask, v > 0);
  int any = __any_sync(kFullMask, v < 0);
  int all = __all_sync(kFullMask, v != 0);
  unsigned peers = __match_any_sync(kFullMask, v);
  int pred = 0;
  unsigned same = __match_all_sync(kFullMask, v & 1, &pred);
  __syncwarp();
  // Only half of the warp takes part in this vote.
  unsigned low = 0;
  if ((threadIdx.x & 31) < 16) low = __ballot_sync(0x0000ffffu, v > 10);
  if ((threadIdx.x & 31) == 0) {
    ballots[i / 32] = ballot ^ active ^ low;
    flags[i / 32] = any | (all << 1) | (pred << 2) | (__popc(peers) << 3) | (same ? 1 << 9 : 0);
  }
}

// Warp-wide reductions are native instructions (redux.sync) from sm_80; a shuffle fallback
// keeps the same result elsewhere.
__global__ void WarpReduce(const unsigned* in, unsigned* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = in[i];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned sum = __reduce_add_sync(kFullMask, v);
  unsigned lo = __reduce_min_sync(kFullMask, v);
  unsigned hi = __reduce_max_sync(kFullMask, v);
  unsigned ors = __reduce_or_sync(kFullMask, v);
#else
  unsigned sum = v, lo = v, hi = v, ors = v;
  for (int mask = 16; mask > 0; mask /= 2) {
    sum += __shfl_xor_sync(kFullMask, sum, mask);
    lo = min(lo, __shfl_xor_sync(kFullMask, lo, mask));
    hi = max(hi, __shfl_xor_sync(kFullMask, hi, mask));
    ors |= __shfl_xor_sync(kFullMask, ors, mask);
  }
#endif
  if ((threadIdx.x & 31) == 0) {
    out[4 * (i / 32) + 0] = sum;
    out[4 * (i / 32) + 1] = lo;
    out[4 * (i / 32) + 2] = hi;
    out[4 * (i / 32) + 3] = ors;
  }
}
