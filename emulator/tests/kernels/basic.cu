// Kernels for the emulator's execution tests (compiled to PTX at build time). Each has a CPU
// reference in kernel_test.cc.
#include <cassert>
#include <cstdio>

extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Shared-memory tree reduction with a barrier in a loop.
extern "C" __global__ void block_sum(const int* in, int* out, int n) {
  __shared__ int s[256];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// 3-D grids and blocks: every thread writes its linear id and coordinates.
extern "C" __global__ void coords(unsigned* out) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  unsigned id = block * threads + thread;
  out[id] = (threadIdx.x << 24) | (threadIdx.y << 16) | (blockIdx.z << 8) | blockIdx.y;
}

// Divergent loops of different trip counts in one warp.
extern "C" __global__ void collatz(const unsigned* in, unsigned* steps) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[i], n = 0;
  while (x != 1) {
    x = (x & 1) ? 3 * x + 1 : x / 2;
    ++n;
  }
  steps[i] = n;
}

// Integer instruction mix.
extern "C" __global__ void int_ops(const int* a, const int* b, int* out) {
  int i = threadIdx.x;
  int x = a[i], y = b[i];
  unsigned ux = x, uy = y;
  int* o = out + i * 16;
  o[0] = x * y;
  o[1] = __mulhi(x, y);
  o[2] = y != 0 ? x / y : 0;
  o[3] = y != 0 ? x % y : 0;
  o[4] = uy != 0 ? ux / uy : 0;
  o[5] = x >> (y & 31);
  o[6] = ux >> (uy & 31);
  o[7] = x << (y & 15);
  o[8] = __popc(ux);
  o[9] = __clz(x);
  o[10] = __brev(ux);
  o[11] = min(x, y) + max(ux, uy);
  o[12] = abs(x) ^ (x & y) ^ (x | ~y);
  o[13] = (int)((long long)x * (long long)y >> 7);
  o[14] = (ux >> 3) & 0x1f;  // bfe
  o[15] = (short)x + (signed char)y;
}

// Floating-point instruction mix (results compared with a tolerance).
extern "C" __global__ void float_ops(const float* a, const float* b, float* out, double* dout,
                                     int* iout) {
  int i = threadIdx.x;
  float x = a[i], y = b[i];
  float* o = out + i * 8;
  o[0] = x * y + x;
  o[1] = x / y;
  o[2] = sqrtf(fabsf(x));
  o[3] = fmaf(x, y, -1.5f);
  o[4] = fminf(x, y) - fmaxf(x, y);
  o[5] = (float)(int)(x * 100.0f);
  o[6] = expf(x * 0.1f);
  o[7] = x < y ? x : -y;
  double dx = x, dy = y;
  dout[i * 2] = dx * dy + sqrt(fabs(dx));
  dout[i * 2 + 1] = dx / (dy + 0.5);
  iout[i * 2] = __float2int_rn(x * 3.3f);
  iout[i * 2 + 1] = (int)(unsigned char)(int)y;
}

extern "C" __global__ void atomics(const int* values, int* counters, float* fsum, unsigned* wrap,
                                   int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = values[i];
  atomicAdd(&counters[v & 7], 1);
  atomicMax(&counters[8], v);
  atomicMin(&counters[9], v);
  atomicAdd(fsum, 0.5f);
  atomicInc(wrap, 9u);
  int old = counters[10];
  while (true) {
    int seen = atomicCAS(&counters[10], old, old + 2);
    if (seen == old) break;
    old = seen;
  }
}

// Warp intrinsics: shuffle reduction, ballot, any/all.
extern "C" __global__ void warp_ops(const int* in, int* out) {
  int lane = threadIdx.x & 31;
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  int sum = v;
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  unsigned ballot = __ballot_sync(0xffffffffu, v & 1);
  int any = __any_sync(0xffffffffu, v > 90);
  int all = __all_sync(0xffffffffu, v >= 0);
  int from0 = __shfl_sync(0xffffffffu, v, 0);
  int up = __shfl_up_sync(0xffffffffu, v, 1);
  int x = __shfl_xor_sync(0xffffffffu, v, 5);
  int* o = out + (blockIdx.x * blockDim.x + threadIdx.x) * 6;
  o[0] = lane == 0 ? sum : 0;
  o[1] = ballot;
  o[2] = any * 2 + all;
  o[3] = from0;
  o[4] = up;
  o[5] = x;
}

// Dynamic shared memory and a per-thread local array indexed at run time.
extern "C" __global__ void reverse_dynamic(const int* in, int* out, int n) {
  extern __shared__ int buffer[];
  int t = threadIdx.x;
  int local[16];
  for (int k = 0; k < 16; ++k) local[k] = in[t] * k;
  buffer[t] = local[in[t] & 15];
  __syncthreads();
  out[t] = buffer[n - 1 - t];
}

__device__ int device_counter;
__constant__ int lookup[4];

extern "C" __global__ void globals(int* out) {
  atomicAdd(&device_counter, 1);
  out[threadIdx.x] = lookup[threadIdx.x & 3];
}

// Faults.
extern "C" __global__ void out_of_bounds(int* data, int n) { data[threadIdx.x * n] = 1; }

extern "C" __global__ void divergent_barrier() {
  if (threadIdx.x < 32) {
    asm volatile("bar.sync 1;");
  } else {
    asm volatile("bar.sync 0;");
  }
}

extern "C" __global__ void traps(int* flag) {
  if (*flag) asm volatile("trap;");
}

// Arithmetic loop for the speed measurement.
extern "C" __global__ void spin(unsigned* out, int iterations) {
  unsigned x = threadIdx.x, y = blockIdx.x;
  for (int k = 0; k < iterations; ++k) {
    x = x * 1664525u + 1013904223u;
    y ^= x >> 7;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x + y;
}

// Calls: nvcc keeps __noinline__ functions as .func with call sequences through .param space.
__device__ __noinline__ int triple_plus(int x, int add) { return 3 * x + add; }
__device__ __noinline__ void store_pair(int* out, int a, int b) {
  out[0] = a;
  out[1] = b;
}

extern "C" __global__ void calls(const int* in, int* out, float* fout) {
  int t = threadIdx.x;
  int x = in[t];
  int y = (x & 1) ? triple_plus(x, t) : x / 2;  // divergent call
  store_pair(out + 2 * t, y, triple_plus(y, 1));
  fout[t] = sin((double)x) > 0 ? 1.0f : -1.0f;
}

// bfind, isspacep, redux.sync, prefetch and abs of the most negative value.
extern "C" __global__ void misc_ops(const int* in, int* out) {
  __shared__ int s[32];
  int lane = threadIdx.x;
  int v = in[lane];
  unsigned position, shift;
  asm("bfind.u32 %0, %1;" : "=r"(position) : "r"(v));
  asm("bfind.shiftamt.s32 %0, %1;" : "=r"(shift) : "r"(v));
  asm volatile("prefetch.global.L2 [%0];" ::"l"(in + lane));
  s[lane] = v;
  int* o = out + lane * 8;
  o[0] = position;
  o[1] = shift;
  o[2] = __isShared(&s[lane]) * 4 + __isGlobal(in) * 2 + __isShared(in);
  o[3] = __reduce_add_sync(0xffffffffu, v);
  o[4] = __reduce_min_sync(0xffffffffu, v);
  o[5] = __reduce_max_sync(0xffffffffu, (unsigned)v);
  o[6] = __reduce_xor_sync(0xffffffffu, (unsigned)v);
  o[7] = abs(v);
}

// __syncthreads_count/and/or are bar.red.
extern "C" __global__ void barrier_reductions(const int* in, int* out) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  int count = __syncthreads_count(v > 50);
  int all = __syncthreads_and(v >= 0);
  int any = __syncthreads_or(v > 95);
  if (threadIdx.x == 0) {
    out[blockIdx.x * 3] = count;
    out[blockIdx.x * 3 + 1] = all;
    out[blockIdx.x * 3 + 2] = any;
  }
}

// Device printf and assert.
extern "C" __global__ void prints(int value) {
  if (threadIdx.x < 2) {
    printf("thread %d: %d %5.2f %s %lld %x|%c\n", threadIdx.x, value, 1.5, "str", -5ll, 255u, 'z');
  }
}

extern "C" __global__ void asserts(const int* data) { assert(data[threadIdx.x] != 3); }

// Divergent control flow: data-dependent break/continue in nested loops, an early return,
// warp intrinsics inside divergent branches, and a barrier after the divergence.
extern "C" __global__ void control_flow(const int* in, int* out) {
  __shared__ int total;
  int t = threadIdx.x, lane = t & 31;
  if (t == 0) total = 0;
  __syncthreads();
  int v = in[t], acc = 0;
  for (int i = 0; i < 20; ++i) {
    if ((v + i) % 7 == 0) continue;
    for (int j = 0; j < i; ++j) {
      if (j * v % 5 == 4) break;
      acc += (i ^ j) + v;
    }
    if (acc > 5000 + v * 3) break;
  }
  unsigned mask = 0;
  int shuffled = 0;
  if (lane < 10) {
    mask = __activemask();
  } else if ((lane & 1) && lane >= 13) {
    shuffled = __shfl_sync(0xaaaaa000u, v, lane ^ 2);  // among the odd lanes >= 13
  }
  atomicAdd(&total, acc & 0xff);
  __syncthreads();
  out[t * 4] = acc;
  out[t * 4 + 1] = mask;
  out[t * 4 + 2] = shuffled;
  if (v % 3 == 0) return;  // early exit: the barrier above already completed
  out[t * 4 + 3] = total;
}
