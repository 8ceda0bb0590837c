// The library half of the rdc program (built with rdc_main.cu, nvcc -rdc=true): a device
// function, device variables and a kernel that the other translation unit uses.
#include "check.h"

__device__ int g_scale = 3;       // set by the host through the other unit's extern declaration
__device__ unsigned int g_calls;  // counted by Transform, read back by the host

// File-local in both units, with different bodies: each unit must call its own.
static __device__ __noinline__ int Local(int x) { return x + 1000; }

__device__ int Transform(int x) {
  atomicAdd(&g_calls, 1u);
  return Local(x) * g_scale;
}

__global__ void FillFromLib(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Local(i);
}

void LaunchFillFromLib(int* out, int n) {
  FillFromLib<<<(n + 63) / 64, 64>>>(out, n);
  CHECK_CUDA(cudaGetLastError());
}
