// Relocatable device code across translation units (nvcc -rdc=true with rdc_lib.cu): a kernel
// calls a __device__ function and reads a __device__ variable defined in the other unit, the
// host writes and reads those variables by symbol, and a kernel of the other unit launches.
#include <vector>

#include "check.h"

extern __device__ int g_scale;
extern __device__ unsigned int g_calls;
__device__ int Transform(int x);
void LaunchFillFromLib(int* out, int n);

static __device__ __noinline__ int Local(int x) { return x - 7; }

__global__ void Apply(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Transform(in[i]) + Local(0);
}

int main() {
  const int n = 1000;
  std::vector<int> in(n), out(n, 0);
  for (int i = 0; i < n; ++i) in[i] = 3 * i - 500;
  int *din, *dout;
  CHECK_CUDA(cudaMalloc(&din, n * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&dout, n * sizeof(int)));
  CHECK_CUDA(cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));

  int scale = 0;
  CHECK_CUDA(cudaMemcpyFromSymbol(&scale, g_scale, sizeof(scale)));
  EXPECT(scale == 3);  // the initialiser of the other unit
  scale = 5;
  CHECK_CUDA(cudaMemcpyToSymbol(g_scale, &scale, sizeof(scale)));
  Apply<<<(n + 127) / 128, 128>>>(din, dout, n);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) EXPECT(out[i] == (in[i] + 1000) * 5 - 7);
  unsigned int calls = 0;
  CHECK_CUDA(cudaMemcpyFromSymbol(&calls, g_calls, sizeof(calls)));
  EXPECT(calls == static_cast<unsigned int>(n));

  LaunchFillFromLib(dout, n);
  CHECK_CUDA(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) EXPECT(out[i] == i + 1000);
  CHECK_CUDA(cudaFree(din));
  CHECK_CUDA(cudaFree(dout));
  std::printf("rdc: device function, variables and kernel across translation units\n");
  return 0;
}
