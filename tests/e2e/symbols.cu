// __constant__ and __device__ variables (also in a namespace) written and read by the host with
// cudaMemcpyToSymbol/FromSymbol and used by a kernel; cudaGetSymbolAddress/Size agree.
#include "check.h"

__constant__ int coefficients[4];
__device__ int total;
namespace scope {
__device__ float offset;
}

__global__ void Combine(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = coefficients[i % 4] * in[i] + static_cast<int>(scope::offset);
  if (i == 0) total = n;
}

int main() {
  const int n = 64;
  const int host_coefficients[4] = {1, 2, 3, 4};
  CHECK_CUDA(cudaMemcpyToSymbol(coefficients, host_coefficients, sizeof(host_coefficients)));
  const float offset = 100.0f;
  CHECK_CUDA(cudaMemcpyToSymbol(scope::offset, &offset, sizeof(offset)));
  int host[n];
  for (int i = 0; i < n; ++i) host[i] = i;
  int *in, *out;
  CHECK_CUDA(cudaMalloc(&in, sizeof(host)));
  CHECK_CUDA(cudaMalloc(&out, sizeof(host)));
  CHECK_CUDA(cudaMemcpy(in, host, sizeof(host), cudaMemcpyHostToDevice));
  Combine<<<1, n>>>(in, out, n);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) EXPECT(host[i] == host_coefficients[i % 4] * i + 100);
  int device_total = 0;
  CHECK_CUDA(cudaMemcpyFromSymbol(&device_total, total, sizeof(int)));
  EXPECT(device_total == n);

  void* address = nullptr;
  size_t size = 0;
  CHECK_CUDA(cudaGetSymbolAddress(&address, coefficients));
  CHECK_CUDA(cudaGetSymbolSize(&size, coefficients));
  EXPECT(address != nullptr && size == sizeof(host_coefficients));
  // The symbol's address is device memory: a plain copy from it works too.
  int back[4];
  CHECK_CUDA(cudaMemcpy(back, address, sizeof(back), cudaMemcpyDeviceToHost));
  EXPECT(back[3] == 4);
  EXPECT(cudaMemcpyToSymbol(coefficients, host_coefficients, sizeof(host_coefficients), 4) ==
         cudaErrorInvalidValue);
  cudaGetLastError();
  CHECK_CUDA(cudaFree(in));
  CHECK_CUDA(cudaFree(out));
  std::printf("symbols: constant and device variables reachable from host and kernel\n");
  return 0;
}
