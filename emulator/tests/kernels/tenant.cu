// Kernels for the server-facing extensions (cuda_abi/driver_extensions.h): cancellation of a stream's work,
// tenants.

// Each block counts itself, then waits until *flag becomes non-zero: a grid of more blocks than
// the emulated GPU holds at once keeps its later blocks unstarted until the test cancels it.
extern "C" __global__ void count_then_wait(unsigned* counter, volatile int* flag) {
  if (threadIdx.x == 0) atomicAdd(counter, 1u);
  while (*flag == 0) {
  }
}

// Copies *from to *to (one load, one store).
extern "C" __global__ void copy_word(const unsigned* from, unsigned* to) { *to = *from; }

// Each thread prints one line.
extern "C" __global__ void say(int value) { printf("thread %d says %d\n", threadIdx.x, value); }
