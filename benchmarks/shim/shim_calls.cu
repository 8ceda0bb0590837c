// Benchmark of the client shim's hot paths, run through tally-run against a tally-server:
// the round trip of a synchronous call (cudaStreamQuery), beside a Unix-socket ping-pong
// between two processes measured in the same run, and the rate at which empty kernel launches
// are posted (a burst that fits the request ring, then the long run), through the runtime's
// <<<>>> and through the driver's cuLaunchKernel (a CUfunction of cuModuleLoadData, which the
// shim checks against those it handed out); then copy throughput from and
// to pageable memory (staged through the bulk area) and page-locked memory (copied in place by the
// server). Usage: shim_calls [round_trips] [launches] [copy_mib]
#include <cuda.h>
#include <cuda_runtime.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

using Clock = std::chrono::steady_clock;

__global__ void Empty() {}

static double Micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// About 80 bytes per empty launch in the 1 MiB request ring: 5,000 leave room to spare.
constexpr int kBurstLaunches = 5000;

static double ThreadCpuMicros() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void Report(const char* what, std::vector<double>& samples) {
  std::sort(samples.begin(), samples.end());
  std::printf("%-34s median %8.3f us   p99 %8.3f us\n", what, samples[samples.size() / 2],
              samples[samples.size() * 99 / 100]);
}

static void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);  // best effort: one core still gives figures
}

// 8-byte ping-pong with a forked echo process over a Unix socket pair.
static void SocketBaseline(int round_trips) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return;
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);  // so that the parent's close is seen as end of file
    PinTo(1);
    uint64_t v;
    while (read(fds[1], &v, sizeof v) == sizeof v) {
      if (write(fds[1], &v, sizeof v) != sizeof v) break;
    }
    _exit(0);
  }
  close(fds[1]);
  std::vector<double> samples;
  for (uint64_t i = 0; i < static_cast<uint64_t>(round_trips); ++i) {
    uint64_t v = i;
    auto t0 = Clock::now();
    if (write(fds[0], &v, sizeof v) != sizeof v || read(fds[0], &v, sizeof v) != sizeof v) break;
    samples.push_back(Micros(Clock::now() - t0));
  }
  close(fds[0]);
  waitpid(child, nullptr, 0);
  if (!samples.empty()) Report("Unix socket round trip (baseline)", samples);
}

// `repeats` copies of `bytes` each way between `host` and `device`, in GB/s.
static void CopyThroughput(const char* what, void* host, void* device, size_t bytes, int repeats) {
  double seconds[2] = {0, 0};
  for (int direction = 0; direction < 2; ++direction) {
    auto t0 = Clock::now();
    for (int i = 0; i < repeats; ++i) {
      cudaError_t e = direction == 0 ? cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice)
                                     : cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
      if (e != cudaSuccess) {
        std::fprintf(stderr, "shim_calls: copy failed: %s\n", cudaGetErrorString(e));
        return;
      }
    }
    seconds[direction] = Micros(Clock::now() - t0) / 1e6;
  }
  const double gigabytes = static_cast<double>(bytes) * repeats / 1e9;
  std::printf("%-34s to device %6.2f GB/s   to host %6.2f GB/s\n", what, gigabytes / seconds[0],
              gigabytes / seconds[1]);
}

// An empty kernel for the driver API's launches.
constexpr char kEmptyPtx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry empty() { ret; }\n";

// Posting rate of `launch`: a burst that fits the request ring measures the shim's posting
// alone; the long run is paced by the server once the ring is full. The CPU time is the posting
// thread's. An untimed burst first resolves the kernel (a round trip and the module's upload)
// and touches the ring.
template <typename Launch>
static bool PostingRate(const char* what, int launches, Launch launch) {
  const int burst = std::min(launches, kBurstLaunches);
  const int counts[] = {burst, burst, launches};
  for (int run = 0; run < 3; ++run) {
    const double cpu0 = ThreadCpuMicros();
    auto t0 = Clock::now();
    for (int i = 0; i < counts[run]; ++i) launch();
    const double posted = Micros(Clock::now() - t0);
    const double cpu = ThreadCpuMicros() - cpu0;
    cudaError_t e = cudaDeviceSynchronize();
    if (run > 0) {
      std::printf("%-34s %8.3f M/s (%d launches in %.1f ms, CPU %.3f us/launch)\n",
                  run == 1 ? (std::string(what) + ", burst").c_str() : what, counts[run] / posted,
                  counts[run], posted / 1000, cpu / counts[run]);
    }
    if (e != cudaSuccess) {
      std::fprintf(stderr, "shim_calls: %s\n", cudaGetErrorString(e));
      return false;
    }
  }
  return true;
}

int main(int argc, char** argv) {
  int round_trips = argc > 1 ? std::atoi(argv[1]) : 20000;
  int launches = argc > 2 ? std::atoi(argv[2]) : 200000;
  int copy_mib = argc > 3 ? std::atoi(argv[3]) : 64;
  if (round_trips < 1 || launches < 1 || copy_mib < 1) {
    std::fprintf(stderr, "usage: shim_calls [round_trips] [launches] [copy_mib]\n");
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  PinTo(0);
  SocketBaseline(round_trips);

  if (cudaStreamQuery(0) != cudaSuccess) {
    std::fprintf(stderr, "shim_calls: no device: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  std::vector<double> samples;
  for (int i = 0; i < round_trips; ++i) {
    auto t0 = Clock::now();
    cudaError_t e = cudaStreamQuery(0);
    samples.push_back(Micros(Clock::now() - t0));
    if (e != cudaSuccess && e != cudaErrorNotReady) return 1;
  }
  Report("cudaStreamQuery round trip", samples);

  if (!PostingRate("empty launches posted", launches, [] { Empty<<<1, 1>>>(); })) return 1;
  CUmodule module = nullptr;
  CUfunction empty = nullptr;
  if (cuModuleLoadData(&module, kEmptyPtx) != CUDA_SUCCESS ||
      cuModuleGetFunction(&empty, module, "empty") != CUDA_SUCCESS) {
    std::fprintf(stderr, "shim_calls: cannot load the driver API's kernel\n");
    return 1;
  }
  const bool driver_posted = PostingRate("cuLaunchKernel posted", launches, [empty] {
    cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
  });
  if (!driver_posted) return 1;

  const size_t bytes = size_t{4} << 20;
  const int repeats = copy_mib / 4 > 0 ? copy_mib / 4 : 1;
  std::vector<char> pageable(bytes, 1);
  void* pinned = nullptr;
  void* device = nullptr;
  if (cudaMallocHost(&pinned, bytes) != cudaSuccess || cudaMalloc(&device, bytes) != cudaSuccess) {
    std::fprintf(stderr, "shim_calls: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  std::fill_n(static_cast<char*>(pinned), bytes, 1);
  CopyThroughput("4 MiB cudaMemcpy, pageable", pageable.data(), device, bytes, repeats);
  CopyThroughput("4 MiB cudaMemcpy, page-locked", pinned, device, bytes, repeats);
  return 0;
}
