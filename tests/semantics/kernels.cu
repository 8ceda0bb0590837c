// Kernels for the transformation semantics test: the hard cases of slicing and PTB (early
// returns around barriers, barriers in loops and in uniform branches, __syncthreads_count/
// and/or, named barriers, predicated `ret`, `exit`, %ctaid read in a non-inlined function,
// dynamic shared memory, 3-D grids, atomics). Every kernel has the signature (const int* in, int* out, int n), writes only slots
// that belong to it, and computes a result independent of the order in which blocks run, so
// every form must reproduce it.
#define TID (threadIdx.x)
#define GID (blockIdx.x * blockDim.x + threadIdx.x)

extern "C" __global__ void early_return_before_barrier(const int* in, int* out, int n) {
  __shared__ int s[256];
  int live = blockDim.x - 8;
  s[TID] = in[GID % n];
  if (TID >= live) return;
  __syncthreads();
  out[GID] = s[(TID + 1) % live] * 2 + blockIdx.x;
}

extern "C" __global__ void barrier_in_loop(const int* in, int* out, int n) {
  __shared__ int s[256];
  s[TID] = in[GID % n];
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (TID < stride) s[TID] += s[TID + stride];
    __syncthreads();
  }
  if (TID == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void uniform_branch_barriers(const int* in, int* out, int n) {
  __shared__ int s[256];
  int v = in[GID % n];
  if (blockIdx.x % 2 == 0) {
    s[TID] = v * 3;
    __syncthreads();
    out[GID] = s[blockDim.x - 1 - TID];
  } else {
    s[TID] = v - 7;
    __syncthreads();
    int w = s[(TID + 5) % blockDim.x];
    __syncthreads();
    s[TID] = w ^ 0x55;
    __syncthreads();
    out[GID] = s[(TID + 1) % blockDim.x];
  }
}

extern "C" __global__ void sync_predicates(const int* in, int* out, int n) {
  int v = in[GID % n];
  int count = __syncthreads_count(v > 0);
  int all = __syncthreads_and(v != 0);
  int any = __syncthreads_or(v > 900);
  if (TID % 3 == 0) return;
  out[GID] = count * 4 + all * 2 + any;
}

// Threads that returned do not take part in later barrier reductions.
extern "C" __global__ void count_after_early_return(const int* in, int* out, int n) {
  int v = in[GID % n];
  if (TID >= blockDim.x / 2 + blockIdx.x % 4) return;
  int count = __syncthreads_count(v % 3 == 0);
  out[GID] = count;
}

extern "C" __global__ void named_barriers(const int* in, int* out, int n) {
  __shared__ int s[256];
  s[TID] = in[GID % n];
  asm volatile("bar.sync 1;" ::: "memory");
  int a = s[(TID + 1) % blockDim.x];
  asm volatile("barrier.sync 2;" ::: "memory");
  s[TID] = a + 1;
  asm volatile("bar.sync 1;" ::: "memory");
  out[GID] = s[(TID + 2) % blockDim.x];
}

extern "C" __global__ void predicated_ret_then_barrier(const int* in, int* out, int n) {
  __shared__ int s[256];
  int v = in[GID % n];
  s[TID] = v;
  asm volatile("{ .reg .pred p; setp.lt.s32 p, %0, -500; @p ret; }" ::"r"(v) : "memory");
  __syncthreads();
  out[GID] = s[(TID + 3) % blockDim.x] + v;
}

extern "C" __global__ void exit_instruction(const int* in, int* out, int n) {
  int v = in[GID % n];
  out[GID] = -1;
  if (v % 5 == 0) asm volatile("exit;" ::: "memory");
  out[GID] = v + blockIdx.x;
}

// Kept out of line so that %ctaid/%nctaid are read inside a called .func.
__device__ __noinline__ int BlockLinear() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

extern "C" __global__ void ctaid_in_function(const int* in, int* out, int n) {
  int b = BlockLinear();
  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int g = b * blockDim.x * blockDim.y * blockDim.z + t;
  out[g] = in[g % n] + b * 1000;
}

extern "C" __global__ void dynamic_shared(const int* in, int* out, int n) {
  extern __shared__ int dyn[];
  dyn[TID] = in[GID % n];
  __syncthreads();
  out[GID] = dyn[blockDim.x - 1 - TID] + dyn[0];
}

extern "C" __global__ void grid3d(const int* in, int* out, int n) {
  int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  int g = block * blockDim.x + TID;
  out[g] = in[g % n] * (blockIdx.z + 1) + blockIdx.y * 100 + blockIdx.x * 10000 +
           gridDim.x * gridDim.y * gridDim.z;
}

// Counts how often each block ran: 1 each, in every form, also when preempted and resumed.
extern "C" __global__ void count_block_runs(const int* in, int* out, int n) {
  int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  __syncthreads();
  if (TID == 0) atomicAdd(&out[block], 1);
  if (in[block % n] > 0) atomicAdd(&out[block + gridDim.x * gridDim.y * gridDim.z], 1);
}

// Raises the PTB preempt flag (the test passes its device address as `flag`) from inside
// block `stop_block`: a preemption at a known task boundary, without relying on timing.
extern "C" __global__ void raise_flag_in_block(int* flag, int* out, int stop_block) {
  int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (threadIdx.x == 0) {
    atomicAdd(&out[block], 1);
    if (block == stop_block) atomicExch(flag, 1);
  }
}
