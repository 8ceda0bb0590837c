// Kernels at their largest dynamic shared memory: 48 KiB less their static shared memory (the
// most a launch may take without opting in), and, opted in with cudaFuncSetAttribute, everything
// a block can have on the device. Every byte of it is written and read back through the results,
// so a launch given less would fail or compute something else. A transformed form has static
// shared memory of its own: the server must give it what the launch needs, or run the original.
// With --hold the program says DONE after its checks and waits for a line on stdin before it
// exits (so that a test can read its counters from tally-ctl status).
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "check.h"

constexpr int kBlocks = 6;
constexpr int kThreads = 256;
constexpr int kStaticInts = 256;  // 1 KiB of static shared memory in WithStatic

// Each block fills its `count` floats of dynamic shared memory, then each thread reads the
// float `threadIdx.x` places from the end and adds the block's first float.
__device__ float FillAndRead(float* buffer, int count) {
  for (int i = threadIdx.x; i < count; i += blockDim.x) buffer[i] = 0.5f * i + blockIdx.x;
  __syncthreads();
  return buffer[count - 1 - threadIdx.x] + buffer[0];
}

__global__ void DynamicOnly(float* out, int count) {
  extern __shared__ float buffer[];
  out[blockIdx.x * blockDim.x + threadIdx.x] = FillAndRead(buffer, count);
}

__global__ void WithStatic(float* out, int count) {
  extern __shared__ float buffer[];
  __shared__ int tile[kStaticInts];
  tile[threadIdx.x] = static_cast<int>(threadIdx.x) * 3;
  const float value = FillAndRead(buffer, count);  // its barrier also orders `tile`
  out[blockIdx.x * blockDim.x + threadIdx.x] = value + tile[kStaticInts - 1 - threadIdx.x];
}

float Expected(int block, int thread, int count) {
  return 0.5f * (count - 1 - thread) + block + block;  // buffer[count - 1 - thread] + buffer[0]
}

// Launches `kernel` with `bytes` of dynamic shared memory and checks every output.
template <typename Kernel>
void RunAndCheck(const char* name, Kernel kernel, int bytes, bool with_static) {
  const int n = kBlocks * kThreads;
  const int count = bytes / static_cast<int>(sizeof(float));
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, n * sizeof(float)));
  CHECK_CUDA(cudaMemset(out, 0, n * sizeof(float)));
  kernel<<<kBlocks, kThreads, bytes>>>(out, count);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<float> host(n);
  CHECK_CUDA(cudaMemcpy(host.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int block = 0; block < kBlocks; ++block) {
    for (int thread = 0; thread < kThreads; ++thread) {
      float expected = Expected(block, thread, count);
      if (with_static) expected += static_cast<float>((kStaticInts - 1 - thread) * 3);
      EXPECT(host[block * kThreads + thread] == expected);
    }
  }
  CHECK_CUDA(cudaFree(out));
  std::printf("dynamic_shared: %s with %d bytes of dynamic shared memory correct\n", name, bytes);
}

int main(int argc, char** argv) {
  const bool hold = argc > 1 && std::strcmp(argv[1], "--hold") == 0;
  cudaFuncAttributes attributes{};
  CHECK_CUDA(cudaFuncGetAttributes(&attributes, WithStatic));
  EXPECT(attributes.sharedSizeBytes == kStaticInts * sizeof(int));
  // The largest sizes without opting in (CUDA C++ Programming Guide, "Shared Memory").
  constexpr int kWithoutOptIn = 48 * 1024;
  RunAndCheck("DynamicOnly", DynamicOnly, kWithoutOptIn, false);
  RunAndCheck("WithStatic", WithStatic,
              kWithoutOptIn - static_cast<int>(attributes.sharedSizeBytes), true);
  // Opted in to everything a block can have: a transformed form with static shared memory of
  // its own cannot have that much, so it runs in its original form.
  int optin = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  const int whole = optin - static_cast<int>(attributes.sharedSizeBytes);
  CHECK_CUDA(cudaFuncSetAttribute(WithStatic, cudaFuncAttributeMaxDynamicSharedMemorySize, whole));
  RunAndCheck("WithStatic opted in", WithStatic, whole, true);
  if (hold) {
    std::printf("DONE\n");
    std::fflush(stdout);
    std::string line;
    std::getline(std::cin, line);
  }
  return 0;
}
