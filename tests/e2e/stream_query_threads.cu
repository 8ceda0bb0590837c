// Several host threads, each with its own stream: right after cudaStreamSynchronize(s) returned,
// cudaStreamQuery(s) is cudaSuccess, and right after cudaEventSynchronize(e), cudaEventQuery(e)
// is (CUDA Runtime API: a query reports whether all work *of that stream*, or before that
// record, has completed), however busy the other threads keep their own streams.
#include <atomic>
#include <thread>
#include <vector>

#include "check.h"

__global__ void AddRound(int* data, int n, int round) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += round;
}

std::atomic<int> failures{0};

void Work(int id, int rounds) {
  const int n = 256;
  cudaStream_t stream;
  cudaEvent_t event;
  int* device = nullptr;
  int* host = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  CHECK_CUDA(cudaMalloc(&device, n * sizeof(int)));
  CHECK_CUDA(cudaMallocHost(&host, n * sizeof(int)));
  CHECK_CUDA(cudaMemsetAsync(device, 0, n * sizeof(int), stream));
  int expected = 0;
  for (int round = 1; round <= rounds; ++round) {
    AddRound<<<(n + 127) / 128, 128, 0, stream>>>(device, n, round + id);
    expected += round + id;
    CHECK_CUDA(cudaMemcpyAsync(host, device, n * sizeof(int), cudaMemcpyDeviceToHost, stream));
    // Every other round waits on the stream, the others on an event recorded after the copy.
    const bool on_stream = round % 2 == 0;
    if (on_stream) {
      CHECK_CUDA(cudaStreamSynchronize(stream));
    } else {
      CHECK_CUDA(cudaEventRecord(event, stream));
      CHECK_CUDA(cudaEventSynchronize(event));
    }
    const cudaError_t query = on_stream ? cudaStreamQuery(stream) : cudaEventQuery(event);
    if (query != cudaSuccess) {
      std::fprintf(stderr, "thread %d round %d: %s after synchronising: %s\n", id, round,
                   on_stream ? "cudaStreamQuery" : "cudaEventQuery", cudaGetErrorName(query));
      ++failures;
    }
    for (int i = 0; i < n; ++i) {
      if (host[i] != expected) {
        std::fprintf(stderr, "thread %d round %d: element %d is %d, expected %d\n", id, round, i,
                     host[i], expected);
        ++failures;
        break;
      }
    }
  }
  CHECK_CUDA(cudaFreeHost(host));
  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaEventDestroy(event));
  CHECK_CUDA(cudaStreamDestroy(stream));
}

int main() {
  constexpr int kThreads = 6;
  constexpr int kRounds = 300;
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) threads.emplace_back(Work, id, kRounds);
  for (std::thread& thread : threads) thread.join();
  EXPECT(failures.load() == 0);
  std::printf("stream_query_threads: %d threads x %d rounds, every query after a wait succeeded\n",
              kThreads, kRounds);
  return 0;
}
