// Conformance kernels: calls to non-inlined device functions, special registers, 3-D grids,
// clocks and timers, nanosleep, device printf, exit (references in ../misc_cases.cc).
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

struct Pair {
  int low;
  long long high;
};

__device__ __noinline__ Pair SplitMix(int x, long long y, float scale) {
  Pair p;
  p.low = x * 3 + (int)(scale * 4.0f);
  p.high = y * x - 17;
  return p;
}

__device__ __noinline__ int Collatz(int x) {
  int steps = 0;
  while (x != 1 && steps < 500) {
    x = (x & 1) ? 3 * x + 1 : x / 2;
    ++steps;
  }
  return steps;
}

__device__ __noinline__ int Nested(int x) { return Collatz(x) + SplitMix(x, 3, 0.5f).low; }

// Calls to non-inlined .func: struct results, several parameter types, nested calls, calls in
// divergent branches.
extern "C" __global__ void noinline_calls(const int* in, long long* out) {
  int v = in[GID];
  Pair p = SplitMix(v, (long long)v << 20, 1.25f);
  long long r;
  if (v & 1) {
    r = Collatz(v);
  } else {
    r = Nested(v) * 100;
  }
  out[GID * 3] = p.low;
  out[GID * 3 + 1] = p.high;
  out[GID * 3 + 2] = r;
}

__device__ __noinline__ unsigned LinearBlock() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

// %ctaid/%nctaid read inside a non-inlined function (slicing must rewrite callees too).
extern "C" __global__ void ctaid_in_function(unsigned* out) {
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  unsigned flat = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned block = LinearBlock();
  out[block * threads + flat] = block * 1000 + flat;
}

// Every coordinate special register in a 3-D grid of 3-D blocks, plus %warpid < %nwarpid.
extern "C" __global__ void special_registers_3d(unsigned* out) {
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  unsigned flat = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned warpid, nwarpid;
  asm("mov.u32 %0, %%warpid;" : "=r"(warpid));
  asm("mov.u32 %0, %%nwarpid;" : "=r"(nwarpid));
  unsigned* o = out + (block * threads + flat) * 10;
  o[0] = threadIdx.x;
  o[1] = threadIdx.y;
  o[2] = threadIdx.z;
  o[3] = blockDim.x * 10000 + blockDim.y * 100 + blockDim.z;
  o[4] = blockIdx.x;
  o[5] = blockIdx.y;
  o[6] = blockIdx.z;
  o[7] = gridDim.x * 10000 + gridDim.y * 100 + gridDim.z;
  o[8] = warpid < nwarpid;
  o[9] = threadIdx.z * blockIdx.y + threadIdx.y * gridDim.z;
}

// %clock, %clock64 and %globaltimer never run backwards within a thread.
extern "C" __global__ void clocks_and_timers(const int* in, unsigned* out) {
  unsigned c0 = clock();
  long long c64_0 = clock64();
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  int v = in[GID];
  for (int k = 0; k < 50; ++k) v = v * 1103515245 + 12345;
  unsigned c1 = clock();
  long long c64_1 = clock64();
  unsigned long long t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  out[GID * 4] = (unsigned)v;
  out[GID * 4 + 1] = c1 - c0 < 0x80000000u;  // modular difference: forward
  out[GID * 4 + 2] = c64_1 >= c64_0;
  out[GID * 4 + 3] = t1 >= t0 && t0 > 0;
}

// %smid < %nsmid. Logic that depends on the SM cannot be sliced or made preemptible.
extern "C" __global__ void sm_registers(unsigned* out) {
  unsigned smid, nsmid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(nsmid));
  out[GID] = smid < nsmid ? 1 : 0;
}

// nanosleep between a write and a barrier-ordered read.
extern "C" __global__ void nanosleep_wait(const int* in, int* out) {
  __shared__ int s[64];
  unsigned t = threadIdx.x;
  s[t] = in[GID] * 5;
  __nanosleep(200 + t * 10);
  __syncthreads();
  out[GID] = s[63 - t];
}

// Device printf (vprintf) with integer, floating-point, string and character conversions.
extern "C" __global__ void device_printf(const int* in, int tag) {
  int v = in[GID];
  if (threadIdx.x % 8 == 0) {
    printf("block %u thread %u: v=%d hex=%x f=%.3f s=%s c=%c ll=%lld tag=%05d\n", blockIdx.x,
           threadIdx.x, v, (unsigned)v, v * 0.5, v < 0 ? "neg" : "pos", 'A' + (int)(threadIdx.x / 8),
           (long long)v * 1000000007ll, tag);
  }
}

// exit in some threads (inline PTX), the others keep working and write results.
extern "C" __global__ void exit_instruction(const int* in, int* out) {
  int v = in[GID];
  if (v < 0) asm volatile("exit;");
  out[GID] = v * 2 + 1;
}

// A grid-stride loop over more elements than threads (3-D grid of 1-D blocks).
extern "C" __global__ void grid_stride_3d(const int* in, int* out, int n) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned stride = gridDim.x * gridDim.y * gridDim.z * blockDim.x;
  for (unsigned i = block * blockDim.x + threadIdx.x; i < (unsigned)n; i += stride) {
    out[i] = in[i] * 3 - (int)block;
  }
}

// Blocks that return early (a whole block and partial warps), with work after a barrier.
extern "C" __global__ void early_return_blocks(const int* in, int* out) {
  if (blockIdx.x % 4 == 3) return;
  __shared__ int s[64];
  unsigned t = threadIdx.x;
  s[t] = in[GID];
  __syncthreads();
  if (t % 7 == 6) return;
  out[GID] = s[(t + 1) % 64] + (int)blockIdx.x;
}

__device__ __noinline__ void BlockBarrier() { __syncthreads(); }

// A barrier inside a non-inlined function (PTB cannot route it through its own barrier).
extern "C" __global__ void barrier_in_function(const int* in, int* out) {
  __shared__ int s[64];
  unsigned t = threadIdx.x, mirror = blockDim.x - 1 - t;
  s[t] = in[GID] * 3;
  BlockBarrier();
  int r = s[mirror] + 1;
  BlockBarrier();
  s[t] = r;
  BlockBarrier();
  out[GID] = s[mirror] + r;
}

// %gridid differs between launches: logic that reads it cannot be transformed.
extern "C" __global__ void grid_id(unsigned* out) {
  unsigned long long id;
  asm volatile("mov.u64 %0, %%gridid;" : "=l"(id));
  out[GID] = id > 0 ? 1 : 0;
}

// The last block to finish (found with a fenced atomicInc, as in the CUDA threadFenceReduction
// sample) sums the per-block partial sums.
extern "C" __global__ void last_block_reduce(const int* in, int* partial, unsigned* done,
                                             int* total) {
  __shared__ int s[64];
  __shared__ bool is_last;
  unsigned t = threadIdx.x;
  s[t] = in[GID];
  __syncthreads();
  for (unsigned stride = 32; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) {
    partial[blockIdx.x] = s[0];
    __threadfence();
    unsigned ticket = atomicInc(done, gridDim.x);
    is_last = ticket == gridDim.x - 1;
  }
  __syncthreads();
  if (is_last && t == 0) {
    int sum = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) sum += ((volatile int*)partial)[b];
    *total = sum;
  }
}
