// Host functions (cudaLaunchHostFunc, cudaStreamAddCallback) run in this process, on a thread
// other than the caller's, in stream order: after the stream's earlier work, and the stream's
// later work waits until they return. Two streams interleave kernels, copies and callbacks; an
// event orders one callback after the other stream's. A gated callback holds its stream until
// the main thread has seen that the work queued behind it has not run.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

__global__ void AddValue(int* data, int n, int value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += value;
}

__global__ void SetMarker(int* marker, int value) { *marker = value; }

std::mutex log_mutex;
std::vector<std::string> order;
pthread_t main_thread;
std::atomic<bool> on_main_thread{false};

void Log(const char* name) {
  if (pthread_equal(pthread_self(), main_thread)) on_main_thread = true;
  std::lock_guard lock(log_mutex);
  order.push_back(name);
}

void CUDART_CB LogHostFunc(void* name) { Log(static_cast<const char*>(name)); }

struct CallbackCheck {
  const char* name;
  cudaStream_t expected_stream;
  std::atomic<bool> stream_ok{false};
  std::atomic<bool> status_ok{false};
};

void CUDART_CB LogCallback(cudaStream_t stream, cudaError_t status, void* data) {
  auto* check = static_cast<CallbackCheck*>(data);
  check->stream_ok = stream == check->expected_stream;
  check->status_ok = status == cudaSuccess;
  Log(check->name);
}

// Holds its stream until `released` (or a deadline, which the main thread reports).
std::atomic<bool> released{false};
std::atomic<bool> gate_entered{false};
std::atomic<bool> gate_timed_out{false};
void CUDART_CB Gate(void*) {
  gate_entered = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!released && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  gate_timed_out = !released;
  Log("gate");
}

size_t Position(const char* name) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] == name) return i;
  }
  std::fprintf(stderr, "host_callbacks: %s never ran\n", name);
  std::exit(1);
}

int main() {
  main_thread = pthread_self();
  constexpr int n = 1000;
  std::vector<int> host_a(n, 1), host_b(n, 100);
  int *a, *b, *marker;
  CHECK_CUDA(cudaMalloc(&a, n * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&b, n * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&marker, sizeof(int)));
  cudaStream_t s1, s2, observer;
  CHECK_CUDA(cudaStreamCreate(&s1));                                    // blocking
  CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));    // non-blocking
  CHECK_CUDA(cudaStreamCreateWithFlags(&observer, cudaStreamNonBlocking));
  cudaEvent_t a2_done;
  CHECK_CUDA(cudaEventCreateWithFlags(&a2_done, cudaEventDisableTiming));
  CallbackCheck a3{"a3", s1}, b3{"b3", s2};

  const int blocks = (n + 127) / 128;
  CHECK_CUDA(cudaMemcpyAsync(a, host_a.data(), n * sizeof(int), cudaMemcpyHostToDevice, s1));
  CHECK_CUDA(cudaMemcpyAsync(b, host_b.data(), n * sizeof(int), cudaMemcpyHostToDevice, s2));
  CHECK_CUDA(cudaLaunchHostFunc(s1, LogHostFunc, const_cast<char*>("a1")));
  CHECK_CUDA(cudaLaunchHostFunc(s2, LogHostFunc, const_cast<char*>("b1")));
  AddValue<<<blocks, 128, 0, s1>>>(a, n, 2);
  AddValue<<<blocks, 128, 0, s2>>>(b, n, 20);
  CHECK_CUDA(cudaLaunchHostFunc(s1, LogHostFunc, const_cast<char*>("a2")));
  CHECK_CUDA(cudaEventRecord(a2_done, s1));
  CHECK_CUDA(cudaLaunchHostFunc(s2, LogHostFunc, const_cast<char*>("b2")));
  CHECK_CUDA(cudaStreamWaitEvent(s2, a2_done, 0));  // b3 after a2
  CHECK_CUDA(cudaMemcpyAsync(b, a, n * sizeof(int), cudaMemcpyDeviceToDevice, s2));
  CHECK_CUDA(cudaStreamAddCallback(s2, LogCallback, &b3, 0));
  CHECK_CUDA(cudaStreamAddCallback(s1, LogCallback, &a3, 0));

  // The gate: the marker is 1 before it; the kernel behind it may set 2 only once it returns.
  SetMarker<<<1, 1, 0, s1>>>(marker, 1);
  CHECK_CUDA(cudaLaunchHostFunc(s1, Gate, nullptr));  // returns at once, the gate runs later
  SetMarker<<<1, 1, 0, s1>>>(marker, 2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!gate_entered && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT(gate_entered);
  int seen = 0;
  CHECK_CUDA(cudaMemcpyAsync(&seen, marker, sizeof(int), cudaMemcpyDeviceToHost, observer));
  CHECK_CUDA(cudaStreamSynchronize(observer));
  EXPECT(seen == 1);  // the stream waits in the gate
  released = true;
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT(!gate_timed_out);
  CHECK_CUDA(cudaMemcpy(&seen, marker, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(seen == 2);

  CHECK_CUDA(cudaMemcpy(host_a.data(), a, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(host_b.data(), b, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) EXPECT(host_a[i] == 3 && host_b[i] == 3);

  std::lock_guard lock(log_mutex);
  EXPECT(order.size() == 7);
  EXPECT(Position("a1") < Position("a2") && Position("a2") < Position("a3"));
  EXPECT(Position("a3") < Position("gate"));
  EXPECT(Position("b1") < Position("b2") && Position("b2") < Position("b3"));
  EXPECT(Position("a2") < Position("b3"));
  EXPECT(!on_main_thread);
  EXPECT(a3.stream_ok && a3.status_ok && b3.stream_ok && b3.status_ok);
  CHECK_CUDA(cudaStreamDestroy(s1));
  CHECK_CUDA(cudaStreamDestroy(s2));
  CHECK_CUDA(cudaStreamDestroy(observer));
  std::printf("host_callbacks: 7 host functions ran in stream order\n");
  return 0;
}
