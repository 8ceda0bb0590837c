// Corpus (clang): shared-memory reduction, warp shuffles and votes, and atomics written with
// clang's NVPTX builtins.
#include "nvptx_shim.h"

constexpr unsigned kFullMask = 0xffffffffu;

__device__ float WarpSum(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __nvvm_shfl_sync_down_f32(kFullMask, v, offset, 0x1f);
  return v;
}

__global__ void BlockSum(const float* in, float* out, unsigned n) {
  __shared__ float partial[32];
  unsigned i = GlobalX();
  float v = i < n ? in[i] : 0.0f;
  v = WarpSum(v);
  if (ThreadX() % 32 == 0) partial[ThreadX() / 32] = v;
  __syncthreads();
  if (ThreadX() < 32) {
    v = ThreadX() < BlockDimX() / 32 ? partial[ThreadX()] : 0.0f;
    v = WarpSum(v);
    if (ThreadX() == 0) __nvvm_atom_add_gen_f(out, v);
  }
}

__global__ void InclusiveScan(const int* in, int* out, unsigned* ballots) {
  unsigned lane = ThreadX() % 32;
  int x = in[GlobalX()];
  for (int d = 1; d < 32; d *= 2) {
    int y = __nvvm_shfl_sync_up_i32(kFullMask, x, d, 0);
    if (static_cast<int>(lane) >= d) x += y;
  }
  out[GlobalX()] = x;
  unsigned positive = __nvvm_vote_ballot_sync(kFullMask, x > 0);
  bool any_big = __nvvm_vote_any_sync(kFullMask, x > 1000);
  if (lane == 0) ballots[GlobalX() / 32] = positive ^ (any_big ? 1u : 0u);
}

__global__ void Atomics(int* counters, unsigned long long* wide, int value) {
  __nvvm_atom_add_gen_i(&counters[0], value);
  __nvvm_atom_max_gen_i(&counters[1], value + static_cast<int>(ThreadX()));
  __nvvm_atom_min_gen_i(&counters[2], value - static_cast<int>(ThreadX()));
  __nvvm_atom_cas_gen_i(&counters[3], 0, static_cast<int>(ThreadX()));
  __nvvm_atom_xchg_gen_i(&counters[4], value);
  __atomic_fetch_or(&counters[5], 1 << (ThreadX() % 31), __ATOMIC_RELAXED);
  __nvvm_atom_add_gen_ll(reinterpret_cast<long long*>(wide), 1);
  __nvvm_membar_gl();
}
