// Built with --default-stream per-thread: the NULL stream is each host thread's own per-thread
// default stream (CUDA Runtime API, "Per-thread default stream"), so the program calls the
// _ptsz/_ptds exports. Checked by ordering facts, never by timing:
//  - a kernel spins on thread A's stream until a flag is set; threads B and C meanwhile run and
//    finish copies and kernels on their own NULL streams (and query them ready), which would
//    never complete if the threads shared one stream (the program fails at its deadline);
//  - the per-thread streams are distinct from each other and from cudaStreamLegacy (ids), and
//    are blocking streams: legacy-stream work waits for A's spinning kernel (not ready until the
//    flag is set from a non-blocking stream, which nothing waits for).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "check.h"

__global__ void SpinUntilSet(const volatile int* flag, int* done) {
  while (*flag == 0) {
  }
  *done = 1;
}

__global__ void Scale(int* data, int n, int factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

constexpr int kN = 512;

// The calling thread's per-thread stream id, checked to be what the NULL stream names too.
unsigned long long OwnStreamId() {
  unsigned long long per_thread = 0, null_stream = 0;
  unsigned int flags = 99;
  CHECK_CUDA(cudaStreamGetId(cudaStreamPerThread, &per_thread));
  CHECK_CUDA(cudaStreamGetId(0, &null_stream));
  CHECK_CUDA(cudaStreamGetFlags(cudaStreamPerThread, &flags));
  EXPECT(per_thread == null_stream);
  EXPECT(flags == cudaStreamDefault);  // not a non-blocking stream
  return per_thread;
}

// Copies, a kernel and copies back on the NULL (per-thread) stream, with the sync forms. (No
// cudaMalloc/cudaFree here: they may synchronise the whole device.)
void Work(int* device, int factor, unsigned long long* id) {
  *id = OwnStreamId();
  std::vector<int> host(kN);
  for (int i = 0; i < kN; ++i) host[i] = i;
  CHECK_CUDA(cudaMemcpy(device, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice));
  Scale<<<(kN + 127) / 128, 128>>>(device, kN, factor);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(host.data(), device, kN * sizeof(int), cudaMemcpyDeviceToHost, 0));
  CHECK_CUDA(cudaStreamSynchronize(0));
  EXPECT(cudaStreamQuery(0) == cudaSuccess);
  EXPECT(cudaStreamQuery(cudaStreamPerThread) == cudaSuccess);
  for (int i = 0; i < kN; ++i) EXPECT(host[i] == i * factor);
  CHECK_CUDA(cudaMemset(device, 0, kN * sizeof(int)));
  CHECK_CUDA(cudaMemcpy(host.data(), device, kN * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kN; ++i) EXPECT(host[i] == 0);
}

int main() {
  int* flag;
  int* done;
  int* buffers;
  int* scratch;
  CHECK_CUDA(cudaMalloc(&buffers, 2 * kN * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&scratch, sizeof(int)));
  cudaStream_t setter;
  CHECK_CUDA(cudaStreamCreateWithFlags(&setter, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc(&flag, sizeof(int)));
  CHECK_CUDA(cudaMalloc(&done, sizeof(int)));
  CHECK_CUDA(cudaMemset(flag, 0, sizeof(int)));
  CHECK_CUDA(cudaMemset(done, 0, sizeof(int)));
  CHECK_CUDA(cudaDeviceSynchronize());

  std::atomic<bool> spinning{false};
  std::atomic<int> finished{0};
  unsigned long long ids[3] = {};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    ids[0] = OwnStreamId();
    SpinUntilSet<<<1, 1>>>(flag, done);
    EXPECT(cudaStreamQuery(0) == cudaErrorNotReady);  // the flag is set only later
    spinning = true;
    CHECK_CUDA(cudaStreamSynchronize(0));
    ++finished;
  });
  while (!spinning) std::this_thread::yield();
  std::thread b([&] {
    Work(buffers, 3, &ids[1]);
    ++finished;
  });
  std::thread c([&] {
    Work(buffers + kN, 5, &ids[2]);
    ++finished;
  });

  // A stall shows as no progress: give up after a generous bound.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (finished.load() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (finished.load() < 2) {
    std::fprintf(stderr, "per_thread_stream: threads B and C waited for thread A's stream\n");
    std::fflush(stderr);
    _exit(1);
  }
  b.join();
  c.join();
  EXPECT(finished.load() == 2);  // A's kernel still spins

  // Legacy-stream work waits for A's per-thread stream.
  CHECK_CUDA(cudaMemsetAsync(scratch, 0, sizeof(int), cudaStreamLegacy));
  EXPECT(cudaStreamQuery(cudaStreamLegacy) == cudaErrorNotReady);

  const int one = 1;
  CHECK_CUDA(cudaMemcpyAsync(flag, &one, sizeof(int), cudaMemcpyHostToDevice, setter));
  CHECK_CUDA(cudaStreamSynchronize(setter));
  CHECK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
  threads[0].join();
  int spun_through = 0;
  CHECK_CUDA(cudaMemcpy(&spun_through, done, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(spun_through == 1);

  unsigned long long legacy = 0;
  CHECK_CUDA(cudaStreamGetId(cudaStreamLegacy, &legacy));
  const std::set<unsigned long long> distinct = {ids[0], ids[1], ids[2], legacy, OwnStreamId()};
  EXPECT(distinct.size() == 5);
  EXPECT(cudaStreamDestroy(cudaStreamPerThread) == cudaErrorInvalidResourceHandle);
  CHECK_CUDA(cudaStreamDestroy(setter));
  std::printf("per_thread_stream: three threads' NULL streams ran independently\n");
  return 0;
}
