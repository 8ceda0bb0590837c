// Kernels that may wait for other blocks through device functions nvcc does not inline, and
// kernels whose device functions only read or update memory other blocks write. Compiled with
// `nvcc -ptx` at build time for ptx_spin_waits_test and the tally-ptx report test.
struct Pair {
  int first;
  int second;
};

__device__ __noinline__ int read_flag(volatile int* flag) { return *flag; }
__device__ __noinline__ int read_twice(volatile int* flag) {
  return read_flag(flag) | read_flag(flag + 1);
}
__device__ __noinline__ void read_into(volatile int* flag, int* out) { *out = *flag; }
__device__ __noinline__ Pair read_pair(volatile int* flag) { return {1, *flag}; }
__device__ __noinline__ void wait_for(volatile int* flag) {
  while (*flag == 0) {
  }
}
__device__ __noinline__ void exit_if_set(volatile int* flag) {
  if (*flag != 0) asm volatile("exit;");
}
// Mutual recursion (nvcc turns plain tail recursion into a loop).
__device__ __noinline__ int ping(volatile int* flag, int n);
__device__ __noinline__ int pong(volatile int* flag, int n) {
  return *flag == 0 ? ping(flag, n + 1) : n;
}
__device__ __noinline__ int ping(volatile int* flag, int n) { return 2 * pong(flag, n) + 1; }
__device__ __noinline__ int sum_partials(volatile const int* partial, int n) {
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += partial[i];
  return sum;
}
__device__ __noinline__ void count(int* bins, int value) { atomicAdd(&bins[value & 7], 1); }

// Wait for another block.
extern "C" __global__ void returned_flag(volatile int* flag, int* out) {
  while (read_flag(flag) == 0) {
  }
  out[blockIdx.x] = 1;
}
extern "C" __global__ void nested_callees(volatile int* flag, int* out) {
  while (read_twice(flag) == 0) {
  }
  out[blockIdx.x] = 1;
}
extern "C" __global__ void out_parameter(volatile int* flag, int* out) {
  int seen;
  do {
    read_into(flag, &seen);
  } while (seen == 0);
  out[blockIdx.x] = seen;
}
extern "C" __global__ void returned_struct(volatile int* flag, int* out) {
  while (read_pair(flag).second == 0) {
  }
  out[blockIdx.x] = 1;
}
extern "C" __global__ void loop_in_callee(volatile int* flag, int* out) {
  wait_for(flag);
  out[blockIdx.x] = 1;
}
extern "C" __global__ void exit_in_callee(volatile int* flag, int* out) {
  for (int i = 0;; ++i) {
    out[blockIdx.x] = i;
    exit_if_set(flag);
  }
}
extern "C" __global__ void recursion(volatile int* flag, int* out) {
  out[blockIdx.x] = ping(flag, 0);
}

// Read or update memory other blocks write, without waiting for it.
extern "C" __global__ void sums_partials(volatile const int* partial, int* out, int n) {
  int total = 0;
  for (int i = 0; i < n; ++i) total += sum_partials(partial, i);
  out[blockIdx.x] = total;
}
extern "C" __global__ void counts_histogram(const int* values, int* bins, int n) {
  for (int i = 0; i < n; ++i) count(bins, values[i]);
}
