// Blocking waits must not stall the client's other threads: a kernel spins until a flag in
// device memory is set, and threads wait for it with cudaStreamSynchronize, cudaEventSynchronize
// and cudaDeviceSynchronize while another thread completes many small calls and only then sets
// the flag. If any wait held up the other thread's calls (in the shim or in the server), the flag
// would never be set: the program then fails at its deadline instead of hanging.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "check.h"

__global__ void SpinUntilSet(const volatile int* flag, int* done) {
  while (*flag == 0) {
  }
  *done = 1;
}

__global__ void AddIndex(int* data, int n, int round) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += i * round;
}

constexpr int kRounds = 40;
constexpr int kN = 256;

// Many small calls on a non-blocking stream (which no spinning work may delay), each checked;
// then the flag that ends the spin.
void Worker(int* flag, std::atomic<int>* rounds_done) {
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int* device;
  CHECK_CUDA(cudaMalloc(&device, kN * sizeof(int)));
  std::vector<int> host(kN);
  for (int round = 1; round <= kRounds; ++round) {
    for (int i = 0; i < kN; ++i) host[i] = round;
    CHECK_CUDA(cudaMemcpyAsync(device, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice,
                               stream));
    AddIndex<<<(kN + 127) / 128, 128, 0, stream>>>(device, kN, round);
    CHECK_CUDA(cudaMemcpyAsync(host.data(), device, kN * sizeof(int), cudaMemcpyDeviceToHost,
                               stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (int i = 0; i < kN; ++i) EXPECT(host[i] == round + i * round);
    rounds_done->store(round);
  }
  const int one = 1;
  CHECK_CUDA(cudaMemcpyAsync(flag, &one, sizeof(int), cudaMemcpyHostToDevice, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaStreamDestroy(stream));
}

int main() {
  int* flag;
  int* done;
  CHECK_CUDA(cudaMalloc(&flag, sizeof(int)));
  CHECK_CUDA(cudaMalloc(&done, sizeof(int)));
  CHECK_CUDA(cudaMemset(flag, 0, sizeof(int)));
  CHECK_CUDA(cudaMemset(done, 0, sizeof(int)));
  CHECK_CUDA(cudaDeviceSynchronize());

  cudaStream_t spinning;
  CHECK_CUDA(cudaStreamCreateWithFlags(&spinning, cudaStreamNonBlocking));
  cudaEvent_t spun;
  CHECK_CUDA(cudaEventCreate(&spun));
  SpinUntilSet<<<1, 1, 0, spinning>>>(flag, done);
  CHECK_CUDA(cudaEventRecord(spun, spinning));

  std::atomic<int> waits_done{0};
  std::atomic<int> rounds_done{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    CHECK_CUDA(cudaStreamSynchronize(spinning));
    ++waits_done;
  });
  threads.emplace_back([&] {
    CHECK_CUDA(cudaEventSynchronize(spun));
    ++waits_done;
  });
  threads.emplace_back([&] {
    CHECK_CUDA(cudaDeviceSynchronize());
    ++waits_done;
  });
  threads.emplace_back(Worker, flag, &rounds_done);

  // A stall shows as no progress: give up after a generous bound and say where it stuck.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (waits_done.load() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (waits_done.load() < 3) {
    std::fprintf(stderr, "blocking_waits: stalled: %d of 3 waits returned, %d of %d rounds done\n",
                 waits_done.load(), rounds_done.load(), kRounds);
    std::fflush(stderr);
    _exit(1);
  }
  for (std::thread& thread : threads) thread.join();
  int spun_through = 0;
  CHECK_CUDA(cudaMemcpy(&spun_through, done, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(spun_through == 1);
  EXPECT(rounds_done.load() == kRounds);
  std::printf("blocking_waits: 3 waits returned after %d rounds of other work\n", kRounds);
  return 0;
}
