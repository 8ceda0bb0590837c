// One tenant of a shared server, for the isolation tests: what it does is its first argument.
//   runaway            launches a kernel of many blocks that never ends, says READY, and waits
//                      for it (the test kills it)
//   compute [ROUNDS]   computes and checks results ROUNDS times (default 3); frees nothing
//                      (cudaFree may wait for other clients' kernels, as the device's does)
//   flood              posts kernel launches without end, never synchronising; says READY
//                      after the first 10000 (the test kills it)
//   quota MIB [RAISED] checks that the device looks MIB MiB large and that 16 MiB allocations
//                      succeed up to exactly that and fail beyond with cudaErrorMemoryAllocation;
//                      says FULL; with RAISED, waits for a line on stdin (the test raises the
//                      limit meanwhile) and checks the same up to RAISED MiB, then says RAISED
//                      and waits for another line
//   fault KIND         computes correctly, then runs a kernel that faults with KIND
//                      (illegal-address, misaligned, trap, assert, divergent-barrier,
//                      stack-overflow): checks that the error is the one CUDA gives (for a
//                      divergent barrier, which hangs a GPU, the emulated GPU's launch
//                      failure), at the launch's synchronisation and at
//                      every later call (sticky); says FAULTED
//   bystander          computes, says READY, then for each line on stdin checks that its calls
//                      fail with cudaErrorDevicesUnavailable (another client faulted the
//                      context they shared, or the server disconnected it since) and says LOST;
//                      ends after the line "exit"
//   owner FILE         fills a buffer, writes its device pointer to FILE and on the next line
//                      that of a string (kSecret), says READY, waits for a line on stdin, then
//                      says INTACT if the buffer is unchanged, else CHANGED
//   intruder FILE      reads another client's device pointer from FILE and launches a kernel
//                      that reads and overwrites it: says REFUSED if the launch fails with
//                      cudaErrorIllegalAddress, REACHED if it ran and read the other's data
//   overrun FILE       the same through its own buffer: a kernel indexes past the end of it as
//                      far as the other client's buffer (the distance from FILE's pointer); says
//                      REFUSED or REACHED as the intruder does
//   printer FILE       a kernel prints the other client's string (FILE's second pointer) with
//                      printf's %s: says REFUSED if it fails with cudaErrorIllegalAddress,
//                      REACHED if it ran (what it printed is for the test to read)
#include <unistd.h>

#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
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

constexpr size_t kMiB = size_t{1} << 20;

// Allocates 16 MiB blocks until `total_mib` MiB are allocated (each must succeed), then checks
// that one more fails as out of memory and that cudaMemGetInfo shows the quota full.
void FillQuota(size_t total_mib, std::vector<void*>& blocks) {
  size_t free_bytes = 0, total_bytes = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  EXPECT(total_bytes == total_mib * kMiB);
  while (blocks.size() * 16 < total_mib) {
    void* block = nullptr;
    CHECK_CUDA(cudaMalloc(&block, 16 * kMiB));
    blocks.push_back(block);
  }
  void* beyond = nullptr;
  EXPECT(cudaMalloc(&beyond, 16 * kMiB) == cudaErrorMemoryAllocation);
  EXPECT(cudaGetLastError() == cudaErrorMemoryAllocation);  // not sticky: cleared once read
  EXPECT(cudaMalloc(&beyond, 1) == cudaErrorMemoryAllocation);
  cudaGetLastError();
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  EXPECT(free_bytes == 0);
}

int Quota(size_t total_mib, size_t raised_mib) {
  cudaDeviceProp properties{};
  CHECK_CUDA(cudaGetDeviceProperties(&properties, 0));
  EXPECT(properties.totalGlobalMem == total_mib * kMiB);
  size_t free_bytes = 0, total_bytes = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  EXPECT(free_bytes == total_bytes);
  std::vector<void*> blocks;
  FillQuota(total_mib, blocks);
  // Freeing makes room again.
  CHECK_CUDA(cudaFree(blocks.back()));
  blocks.pop_back();
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  EXPECT(free_bytes == 16 * kMiB);
  FillQuota(total_mib, blocks);
  std::printf("FULL\n");
  std::fflush(stdout);
  if (raised_mib == 0) return 0;
  char line[64];
  if (std::fgets(line, sizeof(line), stdin) == nullptr) return 1;
  FillQuota(raised_mib, blocks);
  std::printf("RAISED\n");
  std::fflush(stdout);
  // Connected (holding its memory) until the test has looked at the status.
  return std::fgets(line, sizeof(line), stdin) != nullptr ? 0 : 1;
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

// The faults a kernel can make, each with the error CUDA reports for it.
__global__ void IllegalAddress(int* out) { out[threadIdx.x] = *reinterpret_cast<int*>(64); }

__global__ void Misaligned(int* out) {
  out[threadIdx.x] = *reinterpret_cast<int*>(reinterpret_cast<char*>(out) + 1);
}

__global__ void Trap(int* out) {
  out[threadIdx.x] = 1;
  __trap();
}

__global__ void Assert(int* out) {
  out[threadIdx.x] = 1;
  assert(out[0] == 2);
}

// The block's two warps wait at different barriers, each for all 64 threads: neither can ever
// complete (a GPU hangs; the emulated GPU fails the launch). The explicit thread count keeps the
// kernel in its original form: Tally's PTB form synchronises every barrier of a kernel without
// counts through one barrier of its own, which would release both warps (undefined behaviour
// either way, CUDA C++ Programming Guide, "Synchronization Functions").
__global__ void DivergentBarrier(int* out) {
  if (threadIdx.x < 32) {
    out[threadIdx.x] = 1;
    asm volatile("bar.sync 0, 64;");
  } else {
    asm volatile("bar.sync 1, 64;");
  }
}

// Recursion that cannot be bounded at compile time and outgrows the thread's stack.
__device__ int Deep(int depth, int* out) {
  volatile int frame[64];
  frame[depth % 64] = depth;
  return depth <= 0 ? out[0] : Deep(depth - 1, out) + frame[depth % 64];
}

__global__ void StackOverflow(int* out, int depth) { out[threadIdx.x] = Deep(depth, out); }

struct Fault {
  cudaError_t expected;
  void (*launch)(int* out);
};

const std::map<std::string, Fault>& Faults() {
  static const std::map<std::string, Fault> faults = {
      {"illegal-address", {cudaErrorIllegalAddress, [](int* out) { IllegalAddress<<<1, 32>>>(out); }}},
      {"misaligned", {cudaErrorMisalignedAddress, [](int* out) { Misaligned<<<1, 32>>>(out); }}},
      {"trap", {cudaErrorLaunchFailure, [](int* out) { Trap<<<1, 32>>>(out); }}},
      {"assert", {cudaErrorAssert, [](int* out) { Assert<<<1, 32>>>(out); }}},
      {"divergent-barrier",
       {cudaErrorLaunchFailure, [](int* out) { DivergentBarrier<<<1, 64>>>(out); }}},
      {"stack-overflow",
       {cudaErrorLaunchFailure, [](int* out) { StackOverflow<<<1, 32>>>(out, 1 << 20); }}},
  };
  return faults;
}

int FaultWith(const std::string& kind) {
  const auto found = Faults().find(kind);
  if (found == Faults().end()) return 2;
  const cudaError_t expected = found->second.expected;
  Compute(1);  // the program works until its fault
  int* out;
  CHECK_CUDA(cudaMalloc(&out, 32 * sizeof(int)));
  found->second.launch(out);
  CHECK_CUDA(cudaGetLastError());  // the launch itself is fine: the kernel faults
  const cudaError_t synced = cudaDeviceSynchronize();
  if (synced != expected) {
    std::fprintf(stderr, "%s: cudaDeviceSynchronize gave %s, not %s\n", kind.c_str(),
                 cudaGetErrorName(synced), cudaGetErrorName(expected));
    return 1;
  }
  // Sticky, as in CUDA: every later call that reaches the device fails with it.
  int host = 0;
  EXPECT(cudaMemcpy(&host, out, sizeof(host), cudaMemcpyDeviceToHost) == expected);
  void* more = nullptr;
  EXPECT(cudaMalloc(&more, 256) == expected);
  EXPECT(cudaStreamSynchronize(nullptr) == expected);
  std::printf("FAULTED\n");
  return 0;
}

int Bystander() {
  constexpr int kN = 1000;
  int *in, *out;
  CHECK_CUDA(cudaMalloc(&in, kN * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&out, kN * sizeof(int)));
  ComputeRound(in, out, kN, 0);
  std::printf("READY\n");
  std::fflush(stdout);
  char line[64];
  while (std::fgets(line, sizeof(line), stdin) != nullptr) {
    int host = 0;
    EXPECT(cudaMemcpy(&host, out, sizeof(host), cudaMemcpyDeviceToHost) ==
           cudaErrorDevicesUnavailable);
    void* more = nullptr;
    EXPECT(cudaMalloc(&more, 256) == cudaErrorDevicesUnavailable);
    EXPECT(cudaDeviceSynchronize() == cudaErrorDevicesUnavailable);
    std::printf("LOST\n");
    std::fflush(stdout);
    if (std::string(line) == "exit\n") return 0;
  }
  return 1;
}

constexpr int kOwned = 4096;
constexpr char kSecret[] = "the owner's secret";

int Owner(const char* file) {
  int* data;
  CHECK_CUDA(cudaMalloc(&data, kOwned * sizeof(int)));
  std::vector<int> host(kOwned);
  for (int i = 0; i < kOwned; ++i) host[i] = i * 3 + 1;
  CHECK_CUDA(cudaMemcpy(data, host.data(), kOwned * sizeof(int), cudaMemcpyHostToDevice));
  char* secret;
  CHECK_CUDA(cudaMalloc(&secret, sizeof(kSecret)));
  CHECK_CUDA(cudaMemcpy(secret, kSecret, sizeof(kSecret), cudaMemcpyHostToDevice));
  std::ofstream(file) << reinterpret_cast<uintptr_t>(data) << "\n"
                      << reinterpret_cast<uintptr_t>(secret) << "\n";
  std::printf("READY\n");
  std::fflush(stdout);
  char line[64];
  if (std::fgets(line, sizeof(line), stdin) == nullptr) return 1;
  std::vector<int> after(kOwned);
  CHECK_CUDA(cudaMemcpy(after.data(), data, kOwned * sizeof(int), cudaMemcpyDeviceToHost));
  std::printf(after == host ? "INTACT\n" : "CHANGED\n");
  return 0;
}

// Reads in[i] and overwrites it.
__global__ void Steal(int* in, int* loot, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    loot[i] = in[i];
    in[i] = -1;
  }
}

// Reads and overwrites mine[distance + i]: past the end of `mine` when distance is large.
__global__ void Overrun(int* mine, long long distance, int* loot, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    loot[i] = mine[distance + i];
    mine[distance + i] = -1;
  }
}

// Prints `text`, which may be another client's.
__global__ void PrintString(const char* text) { printf("printed: [%s]\n", text); }

// Another client's device pointer, from the file its owner wrote: its buffer (line 0) or its
// string (line 1).
template <typename T>
T* ForeignPointer(const char* file, int line = 0) {
  std::ifstream in(file);
  uintptr_t address = 0;
  for (int i = 0; i <= line; ++i) in >> address;
  EXPECT(in && address != 0);
  return reinterpret_cast<T*>(address);
}

// After a kernel that went for another client's memory: REFUSED if CUDA reported an illegal
// address, REACHED if it ran and `loot` (where there is one) holds the owner's data.
int Report(const int* loot) {
  const cudaError_t synced = cudaDeviceSynchronize();
  if (synced == cudaErrorIllegalAddress) {
    std::printf("REFUSED\n");
    return 0;
  }
  if (synced != cudaSuccess) {
    std::fprintf(stderr, "the kernel on another client's memory gave %s\n",
                 cudaGetErrorName(synced));
    return 1;
  }
  if (loot == nullptr) {
    std::printf("REACHED\n");
    return 0;
  }
  std::vector<int> host(kOwned);
  CHECK_CUDA(cudaMemcpy(host.data(), loot, kOwned * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kOwned; ++i) EXPECT(host[i] == i * 3 + 1);  // Owner's data
  std::printf("REACHED\n");
  return 0;
}

int Intruder(const char* file) {
  int* foreign = ForeignPointer<int>(file);
  int* loot;
  CHECK_CUDA(cudaMalloc(&loot, kOwned * sizeof(int)));
  // Copies are checked by the server against the client's own allocations.
  std::vector<int> host(kOwned, -1);
  EXPECT(cudaMemcpy(foreign, host.data(), sizeof(int), cudaMemcpyHostToDevice) ==
         cudaErrorInvalidValue);
  cudaGetLastError();
  Steal<<<kOwned / 128, 128>>>(foreign, loot, kOwned);
  CHECK_CUDA(cudaGetLastError());
  return Report(loot);
}

int Overrunner(const char* file) {
  const int* foreign = ForeignPointer<int>(file);
  int* mine;
  int* loot;
  CHECK_CUDA(cudaMalloc(&mine, 1024 * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&loot, kOwned * sizeof(int)));
  const long long distance = foreign - mine;
  Overrun<<<kOwned / 128, 128>>>(mine, distance, loot, kOwned);
  CHECK_CUDA(cudaGetLastError());
  return Report(loot);
}

int Printer(const char* file) {
  PrintString<<<1, 1>>>(ForeignPointer<const char>(file, 1));
  CHECK_CUDA(cudaGetLastError());
  return Report(nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc >= 2 ? argv[1] : "";
  if (mode == "runaway") return Runaway();
  if (mode == "compute") return Compute(argc >= 3 ? std::atoi(argv[2]) : 3);
  if (mode == "flood") return Flood();
  if (mode == "quota" && argc >= 3) {
    const size_t raised = argc >= 4 ? std::strtoul(argv[3], nullptr, 10) : 0;
    return Quota(std::strtoul(argv[2], nullptr, 10), raised);
  }
  if (mode == "fault" && argc >= 3) return FaultWith(argv[2]);
  if (mode == "bystander") return Bystander();
  if (mode == "owner" && argc >= 3) return Owner(argv[2]);
  if (mode == "intruder" && argc >= 3) return Intruder(argv[2]);
  if (mode == "overrun" && argc >= 3) return Overrunner(argv[2]);
  if (mode == "printer" && argc >= 3) return Printer(argv[2]);
  std::fprintf(stderr,
               "usage: tenant runaway | compute [ROUNDS] | flood | quota MIB [RAISED] | "
               "fault KIND | bystander | owner FILE | intruder FILE | overrun FILE | "
               "printer FILE\n");
  return 2;
}
