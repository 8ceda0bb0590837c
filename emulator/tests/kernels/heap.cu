// Kernels for device-side malloc/free.
#include <cstdint>

// Every thread allocates `count` ints, fills them, sums them and frees them.
extern "C" __global__ void heap_scratch(int count, long long* sums, int* failures) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  int* buffer = static_cast<int*>(malloc(count * sizeof(int)));
  if (buffer == nullptr) {
    atomicAdd(failures, 1);
    return;
  }
  for (int i = 0; i < count; ++i) buffer[i] = static_cast<int>(t) * 1000 + i;
  long long sum = 0;
  for (int i = 0; i < count; ++i) sum += buffer[i];
  sums[t] = sum;
  free(buffer);
}

// Allocates one block per thread and leaves it for a later launch (heap memory outlives launches).
extern "C" __global__ void heap_keep(int** slots, int bytes) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  int* p = static_cast<int*>(malloc(bytes));
  if (p != nullptr) p[0] = static_cast<int>(t) + 7;
  slots[t] = p;
}

extern "C" __global__ void heap_release(int** slots, int* values) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  values[t] = slots[t] != nullptr ? slots[t][0] : -1;
  free(slots[t]);
}

// Reads one int past the end of a fresh 16-byte block.
extern "C" __global__ void heap_overrun(int* out) {
  int* p = static_cast<int*>(malloc(16));
  out[0] = p[4];
  free(p);
}

// Frees a pointer malloc did not return.
extern "C" __global__ void heap_bad_free(int* data) { free(data + 1); }
