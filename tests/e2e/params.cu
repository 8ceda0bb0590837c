// Kernel parameters of mixed sizes and alignments, a struct by value and a 2-D grid, launched
// with <<<>>> on a stream and with cudaLaunchKernel: the shim must pack them with the layout
// the server reads from the PTX.
#include "check.h"

struct Triple {
  int tag;
  double values[3];
};

__global__ void Mixed(char c, double d, Triple t, short s, long long* out) {
  const int block = blockIdx.y * gridDim.x + blockIdx.x;
  if (threadIdx.x == 0) {
    out[block] =
        c + static_cast<long long>(d) + t.tag + static_cast<long long>(t.values[2]) + s + block;
  }
}

int main() {
  long long* out;
  const dim3 grid(3, 2);
  CHECK_CUDA(cudaMalloc(&out, 6 * sizeof(long long)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  const Triple t{100, {0.0, 0.0, 20000.0}};
  Mixed<<<grid, 32, 0, stream>>>(char(3), 40.0, t, short(-500), out);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  long long host[6];
  CHECK_CUDA(cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost));
  for (int b = 0; b < 6; ++b) EXPECT(host[b] == 3 + 40 + 100 + 20000 - 500 + b);

  char c = 1;
  double d = 2.0;
  Triple t2{3, {0.0, 0.0, 4.0}};
  short s = 5;
  void* args[] = {&c, &d, &t2, &s, &out};
  CHECK_CUDA(
      cudaLaunchKernel(reinterpret_cast<const void*>(Mixed), grid, dim3(32), args, 0, nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost));
  for (int b = 0; b < 6; ++b) EXPECT(host[b] == 1 + 2 + 3 + 4 + 5 + b);
  // Kernel attributes and occupancy come from the server's module.
  cudaFuncAttributes attributes;
  CHECK_CUDA(cudaFuncGetAttributes(&attributes, Mixed));
  EXPECT(attributes.maxThreadsPerBlock > 0);
  CHECK_CUDA(cudaFuncSetAttribute(Mixed, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024));
  CHECK_CUDA(cudaFuncGetAttributes(&attributes, Mixed));
  EXPECT(attributes.maxDynamicSharedSizeBytes == 1024);
  int blocks = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Mixed, 32, 0));
  EXPECT(blocks > 0);

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(out));
  std::printf("params: packed arguments arrived intact\n");
  return 0;
}
