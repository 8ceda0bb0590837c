// Kernels for the server-facing extensions (tally_emu_ext.h): cancellation of a stream's work,
// tenants.

// Each block counts itself once it has worked for `iterations` steps (slow enough that a grid
// of many blocks is still running when the test cancels it).
extern "C" __global__ void count_blocks(unsigned* counter, int iterations) {
  unsigned x = threadIdx.x;
  for (int k = 0; k < iterations; ++k) x = x * 1664525u + 1013904223u;
  if (threadIdx.x == 0) atomicAdd(counter, 1u + (x & 0u));
}

// Never ends unless *flag becomes non-zero.
extern "C" __global__ void spin_until(volatile int* flag) {
  while (*flag == 0) {
  }
}

// Copies *from to *to (one load, one store).
extern "C" __global__ void copy_word(const unsigned* from, unsigned* to) { *to = *from; }

// Each thread prints one line.
extern "C" __global__ void say(int value) { printf("thread %d says %d\n", threadIdx.x, value); }
