// Two jobs whose GPU work is cuBLAS GEMMs (Tally's own kernels under tally-run), for the test of
// a best-effort job's library kernels preempted by a latency-critical one:
//   gemm_jobs train N   — N GEMMs of 256 x 256 x 64 back to back (many blocks each)
//   gemm_jobs serve N   — N requests of one 16 x 16 x 16 GEMM, each synchronised, after a
//                         random pause of up to 40 ms
// Each job checks every result it reads back against a CPU reference. Both print READY once
// connected and wait for a line on stdin before working, then print FINISHED and wait for a
// line again before exiting (so that a test can read the server's counters in between).
#include <cublas_v2.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "blas_check.h"

namespace {

void Handshake(const char* say) {
  std::printf("%s\n", say);
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
}

// C = A B for column-major A (m x k) and B (k x n), on the CPU.
std::vector<double> Reference(int m, int n, int k, const std::vector<float>& a,
                              const std::vector<float>& b) {
  std::vector<double> c(static_cast<size_t>(m) * n);
  for (int col = 0; col < n; ++col) {
    for (int row = 0; row < m; ++row) {
      double sum = 0;
      for (int i = 0; i < k; ++i) sum += double{a[row + i * m]} * b[i + col * k];
      c[row + col * m] = sum;
    }
  }
  return c;
}

// `count` GEMMs of one shape into C; `before` runs ahead of each, `after` once C is back.
template <typename Before>
void Gemms(cublasHandle_t handle, int m, int n, int k, int count, Before before,
           bool synchronise_each) {
  const std::vector<float> a = Values<float>(static_cast<size_t>(m) * k, 1);
  const std::vector<float> b = Values<float>(static_cast<size_t>(k) * n, 2);
  const std::vector<double> want = Reference(m, n, k, a, b);
  float* da = ToDevice(a);
  float* db = ToDevice(b);
  float* dc = ToDevice(std::vector<float>(static_cast<size_t>(m) * n, NAN));
  const float one = 1, zero = 0;
  for (int i = 0; i < count; ++i) {
    before();
    CHECK_CUBLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, m, db, k, &zero,
                             dc, m));
    if (!synchronise_each && i + 1 < count) continue;
    const std::vector<double> got = Widen(ToHost(dc, want.size()));
    for (size_t e = 0; e < want.size(); ++e) ExpectNear(got[e], want[e], 1e-5, "GEMM", e);
  }
  CHECK_CUDA(cudaFree(da));
  CHECK_CUDA(cudaFree(db));
  CHECK_CUDA(cudaFree(dc));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "train" && mode != "serve") {
    std::fprintf(stderr, "usage: %s train|serve COUNT\n", argv[0]);
    return 2;
  }
  const int count = std::atoi(argv[2]);
  cublasHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasCreate(&handle));
  Handshake("READY");
  if (mode == "train") {
    Gemms(handle, 256, 256, 64, count, [] {}, false);
  } else {
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> gap_ms(0, 40);
    Gemms(handle, 16, 16, 16, count,
          [&] { std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms(rng))); }, true);
  }
  std::printf("%s: %d GEMMs correct\n", mode.c_str(), count);
  Handshake("FINISHED");
  CHECK_CUBLAS(cublasDestroy(handle));
  return 0;
}
