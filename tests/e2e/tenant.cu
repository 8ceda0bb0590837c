// One tenant of a shared server, for the isolation tests: what it does is its first argument.
//   runaway            launches a kernel of many blocks that never ends, says READY, and waits
//                      for it (the test kills it)
//   compute [ROUNDS]   computes and checks results ROUNDS times (default 3); frees nothing
//                      (cudaFree may wait for other clients' kernels, as the device's does)
//   flood              posts kernel launches without end, never synchronising; says READY
//                      after the first 10000 (the test kills it)
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "check.h"

namespace {

// Spins until *flag becomes non-zero, which nothing ever writes.
__global__ void Spin(volatile int* flag) {
  while (*flag == 0) {
  }
}

__global__ void Affine(const int* in, int* out, int n, int a, int b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * in[i] + b;
}

// One round of work whose every result is checked: out = a * in + b over n elements.
void ComputeRound(int* in, int* out, int n, int round) {
  std::vector<int> host(n);
  for (int i = 0; i < n; ++i) host[i] = i * 7 + round;
  CHECK_CUDA(cudaMemcpy(in, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  Affine<<<(n + 127) / 128, 128>>>(in, out, n, round + 2, 11);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(host.data(), out, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) EXPECT(host[i] == (round + 2) * (i * 7 + round) + 11);
}

int Compute(int rounds) {
  constexpr int kN = 10000;
  int *in, *out;
  CHECK_CUDA(cudaMalloc(&in, kN * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&out, kN * sizeof(int)));
  for (int round = 0; round < rounds; ++round) ComputeRound(in, out, kN, round);
  std::printf("COMPUTED\n");
  return 0;
}

__global__ void Tick(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
}

int Flood() {
  int* counter;
  CHECK_CUDA(cudaMalloc(&counter, sizeof(int)));
  for (long i = 0;; ++i) {
    Tick<<<1, 32>>>(counter);
    if (i == 10000) {
      CHECK_CUDA(cudaGetLastError());
      std::printf("READY\n");
      std::fflush(stdout);
    }
  }
}

int Runaway() {
  int* flag;
  CHECK_CUDA(cudaMalloc(&flag, sizeof(int)));
  CHECK_CUDA(cudaMemset(flag, 0, sizeof(int)));
  Spin<<<4096, 64>>>(flag);
  CHECK_CUDA(cudaGetLastError());
  std::printf("READY\n");
  std::fflush(stdout);
  CHECK_CUDA(cudaDeviceSynchronize());
  return 1;  // never reached: the test kills us
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc >= 2 ? argv[1] : "";
  if (mode == "runaway") return Runaway();
  if (mode == "compute") return Compute(argc >= 3 ? std::atoi(argv[2]) : 3);
  if (mode == "flood") return Flood();
  std::fprintf(stderr, "usage: tenant runaway | compute [ROUNDS] | flood\n");
  return 2;
}
