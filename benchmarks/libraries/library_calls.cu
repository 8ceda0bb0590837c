// Benchmark of library calls through Tally's stand-ins, run through tally-run against a
// tally-server: what one call costs the application to post (a tiny cublasSgemm, cudnnAddTensor
// and cudnnConvolutionForward) beside an empty kernel launch of its own (through <<<>>>, and
// through cudaLaunchKernel as the stand-ins launch, the ratios' baseline), and how fast Tally's
// GEMM and convolution kernels run beside a plain kernel of the same work (one thread per output
// element), synchronised, on whatever device the server has.
// Usage: library_calls [calls_per_burst] [bursts] [repetitions]
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

using Clock = std::chrono::steady_clock;

#define CHECK(call)                                                        \
  do {                                                                     \
    if (!(call)) {                                                         \
      std::fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call); \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)
#define CUDA_OK(call) CHECK((call) == cudaSuccess)
#define CUBLAS_OK(call) CHECK((call) == CUBLAS_STATUS_SUCCESS)
#define CUDNN_OK(call) CHECK((call) == CUDNN_STATUS_SUCCESS)

__global__ void Empty() {}

// C (m x n, column-major) = A (m x k) B (k x n): one thread per element of C.
__global__ void PlainGemm(int m, int n, int k, const float* a, const float* b, float* c) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x, col = blockIdx.y;
  if (row >= m) return;
  float sum = 0;
  for (int i = 0; i < k; ++i) sum += a[row + i * m] * b[i + col * k];
  c[row + col * m] = sum;
}

// y (1 x K x H x W) = x (1 x C x H x W) convolved with w (K x C x 3 x 3), padding 1: one thread
// per output element.
__global__ void PlainConvolution(int c_in, int k_out, int h, int w, const float* x,
                                 const float* filter, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= k_out * h * w) return;
  const int col = i % w, row = i / w % h, k = i / (w * h);
  float sum = 0;
  for (int c = 0; c < c_in; ++c) {
    for (int r = 0; r < 3; ++r) {
      for (int s = 0; s < 3; ++s) {
        const int in_row = row - 1 + r, in_col = col - 1 + s;
        if (in_row < 0 || in_row >= h || in_col < 0 || in_col >= w) continue;
        sum += x[(c * h + in_row) * w + in_col] * filter[((k * c_in + c) * 3 + r) * 3 + s];
      }
    }
  }
  y[i] = sum;
}

static double Median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// The median over `bursts` of the time to post `calls` calls, per call, in microseconds; each
// burst is waited for before the next (the request ring never fills).
static double PostingMicros(int calls, int bursts, const std::function<void()>& call) {
  std::vector<double> samples;
  for (int b = 0; b < bursts; ++b) {
    const auto start = Clock::now();
    for (int i = 0; i < calls; ++i) call();
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() /
                      calls);
    CUDA_OK(cudaDeviceSynchronize());
  }
  return Median(samples);
}

// The median time of one synchronised run of `work`, in milliseconds.
static double RunMillis(int repetitions, const std::function<void()>& work) {
  std::vector<double> samples;
  work();  // warm: the first launch of a kernel may wait for its module
  CUDA_OK(cudaDeviceSynchronize());
  for (int r = 0; r < repetitions; ++r) {
    const auto start = Clock::now();
    work();
    CUDA_OK(cudaDeviceSynchronize());
    samples.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return Median(samples);
}

static float* DeviceFloats(size_t n) {
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>((i * 7 % 17) / 8.0 - 1.0);
  float* device = nullptr;
  CUDA_OK(cudaMalloc(&device, n * sizeof(float)));
  CUDA_OK(cudaMemcpy(device, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return device;
}

static cudnnTensorDescriptor_t Tensor(int n, int c, int h, int w) {
  cudnnTensorDescriptor_t desc;
  CUDNN_OK(cudnnCreateTensorDescriptor(&desc));
  CUDNN_OK(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  return desc;
}

struct Convolution {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
};

// A 3 x 3 convolution with padding 1 of 1 x C x H x W into 1 x K x H x W.
static Convolution MakeConvolution(int c, int k, int h, int w) {
  Convolution d{Tensor(1, c, h, w), Tensor(1, k, h, w), nullptr, nullptr};
  CUDNN_OK(cudnnCreateFilterDescriptor(&d.w));
  CUDNN_OK(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, 3, 3));
  CUDNN_OK(cudnnCreateConvolutionDescriptor(&d.conv));
  CUDNN_OK(cudnnSetConvolution2dDescriptor(d.conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT));
  return d;
}

static void Forward(cudnnHandle_t dnn, const Convolution& d, const float* x, const float* w,
                    float* y) {
  const float one = 1, zero = 0;
  CUDNN_OK(cudnnConvolutionForward(dnn, &one, d.x, x, d.w, w, d.conv,
                                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero,
                                   d.y, y));
}

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int bursts = argc > 2 ? std::atoi(argv[2]) : 10;
  const int repetitions = argc > 3 ? std::atoi(argv[3]) : 5;
  cublasHandle_t blas;
  cudnnHandle_t dnn;
  CUBLAS_OK(cublasCreate(&blas));
  CUDNN_OK(cudnnCreate(&dnn));
  const float one = 1, zero = 0;

  // Posting: the smallest call of each kind.
  float* scalar = DeviceFloats(16);
  cudnnTensorDescriptor_t unit = Tensor(1, 1, 1, 1);
  const Convolution tiny = MakeConvolution(1, 1, 3, 3);
  float* tiny_data = DeviceFloats(9);
  // Warm up first: the first bursts a program posts are slower (the request ring's pages are
  // touched for the first time, the server's loop wakes), whatever is posted.
  PostingMicros(calls, bursts, [] { Empty<<<1, 1>>>(); });
  std::printf("posting one call (median of %d bursts of %d), us:\n", bursts, calls);
  std::printf("  %-44s %8.3f\n", "empty kernel <<<1,1>>>",
              PostingMicros(calls, bursts, [] { Empty<<<1, 1>>>(); }));
  // What the stand-ins call: the baseline of the ratios.
  const double empty = PostingMicros(calls, bursts, [] {
    CUDA_OK(cudaLaunchKernel(reinterpret_cast<const void*>(Empty), 1, 1, nullptr, 0, nullptr));
  });
  std::printf("  %-44s %8.3f\n", "empty kernel, cudaLaunchKernel (baseline)", empty);
  const double gemm = PostingMicros(calls, bursts, [&] {
    CUBLAS_OK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, scalar, 1, scalar + 1,
                          1, &zero, scalar + 2, 1));
  });
  std::printf("  %-44s %8.3f  (%.2fx)\n", "cublasSgemm 1x1x1", gemm, gemm / empty);
  const double add = PostingMicros(calls, bursts, [&] {
    CUDNN_OK(cudnnAddTensor(dnn, &one, unit, scalar, &one, unit, scalar + 3));
  });
  std::printf("  %-44s %8.3f  (%.2fx)\n", "cudnnAddTensor 1x1x1x1", add, add / empty);
  const double conv = PostingMicros(calls, bursts, [&] {
    Forward(dnn, tiny, tiny_data, tiny_data, scalar + 4);
  });
  std::printf("  %-44s %8.3f  (%.2fx)\n", "cudnnConvolutionForward 1x1x3x3", conv, conv / empty);

  // Throughput: Tally's kernels beside a plain kernel of the same work.
  const int n = 64;
  float *a = DeviceFloats(n * n), *b = DeviceFloats(n * n), *c = DeviceFloats(n * n);
  std::printf("one synchronised run (median of %d), ms:\n", repetitions);
  const double plain_gemm = RunMillis(repetitions, [&] {
    PlainGemm<<<dim3((n + 63) / 64, n), 64>>>(n, n, n, a, b, c);
  });
  const double tally_gemm = RunMillis(repetitions, [&] {
    CUBLAS_OK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
  });
  std::printf("  %-44s %8.3f\n", "plain GEMM kernel 64x64x64", plain_gemm);
  std::printf("  %-44s %8.3f  (%.2fx)\n", "cublasSgemm 64x64x64 (Tally's GEMM)", tally_gemm,
              tally_gemm / plain_gemm);
  const int channels = 8, side = 16;
  const Convolution layer = MakeConvolution(channels, channels, side, side);
  float* x = DeviceFloats(channels * side * side);
  float* w = DeviceFloats(channels * channels * 9);
  float* y = DeviceFloats(channels * side * side);
  const int outputs = channels * side * side;
  const double plain_conv = RunMillis(repetitions, [&] {
    PlainConvolution<<<(outputs + 255) / 256, 256>>>(channels, channels, side, side, x, w, y);
  });
  const double tally_conv = RunMillis(repetitions, [&] { Forward(dnn, layer, x, w, y); });
  std::printf("  %-44s %8.3f\n", "plain convolution kernel 8x16x16, 3x3", plain_conv);
  std::printf("  %-44s %8.3f  (%.2fx)\n", "cudnnConvolutionForward (Tally's kernel)", tally_conv,
              tally_conv / plain_conv);
  CUDNN_OK(cudnnDestroy(dnn));
  CUBLAS_OK(cublasDestroy(blas));
  return 0;
}
