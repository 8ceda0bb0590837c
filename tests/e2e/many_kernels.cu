// A module of many kernels (Store<I> for I below kKernels, each storing I) of which the program
// launches one, twice, and checks what it stored. Through Tally only that kernel's transformed
// forms are made (tests/e2e/scenarios/lazy_forms.sh reads the server's counters).
#include <array>
#include <cstdio>
#include <utility>

#include "check.h"

template <int I>
__global__ void Store(int* out) {
  *out = I;
}

constexpr int kKernels = 300;
constexpr int kLaunched = 7;

// Taking every instance's address makes nvcc put each kernel in the module.
template <int... I>
constexpr std::array<void (*)(int*), sizeof...(I)> AllKernels(std::integer_sequence<int, I...>) {
  return {&Store<I>...};
}
const auto kAllKernels = AllKernels(std::make_integer_sequence<int, kKernels>{});

int main() {
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, sizeof(int)));
  for (int round = 0; round < 2; ++round) {
    CHECK_CUDA(cudaMemset(out, 0xff, sizeof(int)));
    Store<kLaunched><<<1, 1>>>(out);
    CHECK_CUDA(cudaGetLastError());
    int stored = -1;
    CHECK_CUDA(cudaMemcpy(&stored, out, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(stored == kLaunched);
  }
  CHECK_CUDA(cudaFree(out));
  std::printf("many_kernels: kernel %d of %zu ran twice, correctly\n", kLaunched,
              kAllKernels.size());
  return 0;
}
