// Shared by the end-to-end programs that check a library's results (cublas_calls, cublaslt_calls,
// cudnn_calls, cudnn_graphs): deterministic inputs, copies to and from the device, and comparison
// with a CPU reference in double.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.h"

// Values in [-1, 1] that are multiples of 1/8: exact in every type the programs use (bf16 too),
// so that sums stay exact enough.
template <typename T>
std::vector<T> Values(size_t n, int seed) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(((i * 7 + seed * 13) % 17) / 8.0 - 1.0);
  return v;
}

template <typename T>
T* ToDevice(const std::vector<T>& host) {
  T* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, host.size() * sizeof(T) + 1));
  CHECK_CUDA(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return device;
}

template <typename T>
std::vector<T> ToHost(const T* device, size_t n) {
  std::vector<T> host(n);
  CHECK_CUDA(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

template <typename T>
std::vector<double> Widen(const std::vector<T>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<double>(static_cast<float>(v[i]));
  return out;
}
template <>
inline std::vector<double> Widen(const std::vector<double>& v) {
  return v;
}

inline void ExpectNear(double got, double want, double tolerance, const char* what, size_t index) {
  if (!(std::fabs(got - want) <= tolerance * (1 + std::fabs(want)))) {
    std::fprintf(stderr, "%s: element %zu is %.8g, not %.8g\n", what, index, got, want);
    std::exit(1);
  }
}
