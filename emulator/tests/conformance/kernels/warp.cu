// Conformance kernels: warp intrinsics (shfl.sync in every mode and width, vote.sync,
// redux.sync, activemask, lane masks), also with partial masks in divergent code (references
// in ../warp_cases.cc).
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

// shfl.sync idx/up/down/bfly on 32-bit values with segment widths 32, 16 and 8.
extern "C" __global__ void shfl_modes(const int* in, int* out) {
  int v = in[GID];
  unsigned lane = threadIdx.x & 31;
  int* o = out + GID * 12;
  const unsigned full = 0xffffffffu;
  o[0] = __shfl_sync(full, v, (lane * 7) & 31);
  o[1] = __shfl_up_sync(full, v, 3);
  o[2] = __shfl_down_sync(full, v, 5);
  o[3] = __shfl_xor_sync(full, v, 9);
  o[4] = __shfl_sync(full, v, lane + 3, 16);
  o[5] = __shfl_up_sync(full, v, 2, 16);
  o[6] = __shfl_down_sync(full, v, 6, 16);
  o[7] = __shfl_xor_sync(full, v, 5, 16);
  o[8] = __shfl_sync(full, v, 1, 8);
  o[9] = __shfl_up_sync(full, v, 1, 8);
  o[10] = __shfl_down_sync(full, v, 7, 8);
  o[11] = __shfl_xor_sync(full, v, 4, 8);
}

// Shuffles of float, double and 64-bit integers (64-bit values take two shfl.sync each).
extern "C" __global__ void shfl_types(const float* f, const double* d, const long long* w,
                                      float* fout, double* dout, long long* wout) {
  unsigned i = GID, lane = threadIdx.x & 31;
  const unsigned full = 0xffffffffu;
  fout[i] = __shfl_sync(full, f[i], 31 - lane);
  dout[i] = __shfl_xor_sync(full, d[i], 16);
  wout[i] = __shfl_down_sync(full, w[i], 1);
}

// Shuffles, votes and syncs under partial masks: only the lanes of one branch take part.
extern "C" __global__ void shfl_partial(const int* in, int* out) {
  int v = in[GID];
  unsigned lane = threadIdx.x & 31;
  int r;
  if (lane < 16) {
    r = __shfl_xor_sync(0x0000ffffu, v, 1) + __shfl_down_sync(0x0000ffffu, v, 2, 16);
  } else if (lane & 1) {
    r = __shfl_sync(0xaaaa0000u, v, 17) * 2;  // the odd upper lanes read lane 17
  } else {
    r = (int)__ballot_sync(0x55550000u, v > 0);
  }
  out[GID] = r;
}

// vote.sync all/any/ballot/uni and activemask, in converged and divergent code.
extern "C" __global__ void vote_ops(const int* in, unsigned* out) {
  int v = in[GID];
  unsigned lane = threadIdx.x & 31;
  const unsigned full = 0xffffffffu;
  unsigned* o = out + GID * 7;
  o[0] = __all_sync(full, v > -900);
  o[1] = __any_sync(full, v > 990);
  o[2] = __ballot_sync(full, v & 1);
  o[3] = __activemask();
  o[4] = __uni_sync(full, v > 2000);
  if (v & 2) {
    o[5] = __activemask();
    o[6] = __ballot_sync(__activemask(), v & 4);
  } else {
    o[5] = __popc(__activemask()) + 1000u;
    o[6] = __all_sync(__activemask(), lane < 31);
  }
}

// redux.sync add/min/max (signed and unsigned) and/or/xor.
extern "C" __global__ void redux_ops(const int* in, int* out) {
#if __CUDA_ARCH__ >= 800
  int v = in[GID];
  const unsigned full = 0xffffffffu;
  int* o = out + GID * 8;
  o[0] = __reduce_add_sync(full, v);
  o[1] = __reduce_min_sync(full, v);
  o[2] = __reduce_max_sync(full, v);
  o[3] = (int)__reduce_min_sync(full, (unsigned)v);
  o[4] = (int)__reduce_max_sync(full, (unsigned)v);
  o[5] = (int)__reduce_and_sync(full, (unsigned)v | 0x10000u);
  o[6] = (int)__reduce_or_sync(full, (unsigned)v & 0xff);
  o[7] = (int)__reduce_xor_sync(full, (unsigned)v);
#endif
}

// A shuffle reduction and an inclusive scan (shfl.down, shfl.up with predicate output).
extern "C" __global__ void warp_reduce_scan(const int* in, int* out) {
  int v = in[GID];
  unsigned lane = threadIdx.x & 31;
  int sum = v;
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  sum = __shfl_sync(0xffffffffu, sum, 0);
  int scan = v;
  for (int offset = 1; offset < 32; offset *= 2) {
    int up = __shfl_up_sync(0xffffffffu, scan, offset);
    if (lane >= (unsigned)offset) scan += up;
  }
  out[GID * 2] = sum;
  out[GID * 2 + 1] = scan;
}

// %laneid and the %lanemask_* registers.
extern "C" __global__ void lane_registers(unsigned* out) {
  unsigned lane, eq, lt, le, gt, ge;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  asm("mov.u32 %0, %%lanemask_eq;" : "=r"(eq));
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
  asm("mov.u32 %0, %%lanemask_le;" : "=r"(le));
  asm("mov.u32 %0, %%lanemask_gt;" : "=r"(gt));
  asm("mov.u32 %0, %%lanemask_ge;" : "=r"(ge));
  unsigned flat = threadIdx.x + blockDim.x * threadIdx.y;
  unsigned* o = out + (blockIdx.x * blockDim.x * blockDim.y + flat) * 6;
  o[0] = lane;
  o[1] = eq;
  o[2] = lt;
  o[3] = le;
  o[4] = gt;
  o[5] = ge;
}
