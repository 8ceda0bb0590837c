// Benchmark: the emulated GPU's speed on vector add, a shared-memory tiled matmul and a
// warp-shuffle reduction (benchmarks/emu/emu_kernels.cu), as lane-instructions per second
// (counted exactly by libtally_emu.so, see cuda_abi/driver_extensions.h) and as the ratio of the
// emulator's time to the same computation written as a plain C++ loop, timed in the same run.
// The driver is loaded as tally-server loads it (server/backend). Every result is verified
// against the C++ loop's, bit for bit (the inputs are small integers, so float sums are exact).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cuda_abi/driver_extensions.h"
#include "server/backend/backend.h"

namespace {

using Clock = std::chrono::steady_clock;
using tally::server::Backend;

constexpr const char kUsage[] =
    "Usage: emu_speed [--vec-n N] [--matmul-n N] [--reduce-n N] [--runs N] [--tenant T]\n"
    "Runs vec_add on N floats (default 4194304), an N x N tiled matmul (default 256, a multiple\n"
    "of 16) and a shuffle reduction of N unsigned ints in blocks of 256 (default 4194304) on\n"
    "the emulated GPU and as plain C++ loops, each `runs` times (default 3), verifies the\n"
    "results and prints medians. TALLY_EMU_SM_COUNT=1 runs the emulator on one host thread.\n"
    "--tenant T (non-zero) runs everything on a stream of tenant T with the tenant's memory, as\n"
    "tally-server runs a client's work: every access is then checked against the tenant's\n"
    "allocations (cuda_abi/driver_extensions.h).\n";

void Die(const std::string& message) {
  std::fprintf(stderr, "emu_speed: %s\n", message.c_str());
  std::exit(1);
}

#define CU_CHECK(call)                                                             \
  do {                                                                             \
    CUresult result_ = (call);                                                     \
    if (result_ != CUDA_SUCCESS) Die(#call " failed: " + std::to_string(result_)); \
  } while (0)

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Emulator {
  Backend backend;
  CUmodule module = nullptr;
  PFN_tallyEmuLaneInstructions lane_instructions = nullptr;
  CUstream stream = nullptr;  // the tenant's, or the NULL stream
  uint64_t tenant = 0;

  const tally::server::DriverApi& api() const { return backend.api(); }

  CUdeviceptr Upload(const void* data, size_t bytes) const {
    CUdeviceptr device = 0;
    CU_CHECK(api().cuMemAlloc(&device, bytes));
    if (tenant != 0) CU_CHECK(backend.extensions().mem_set_tenant(device, tenant));
    CU_CHECK(api().cuMemcpyHtoDAsync(device, data, bytes, stream));
    CU_CHECK(api().cuStreamSynchronize(stream));
    return device;
  }
  template <typename T>
  std::vector<T> Download(CUdeviceptr device, size_t count) const {
    std::vector<T> host(count);
    CU_CHECK(api().cuMemcpyDtoHAsync(host.data(), device, count * sizeof(T), stream));
    CU_CHECK(api().cuStreamSynchronize(stream));
    return host;
  }
};

Emulator LoadEmulator() {
  tally::server::BackendOptions options;
  options.emulate = true;
  options.emulator_library = TALLY_EMU_LIBRARY_PATH;
  auto backend = Backend::Load(options);
  if (!backend.ok()) Die(std::string(backend.status().message()));
  Emulator emu{*std::move(backend)};
  if (absl::Status current = emu.backend.MakeCurrent(); !current.ok()) {
    Die(std::string(current.message()));
  }
  std::ifstream in(TALLY_EMU_BENCH_PTX);
  if (!in) Die("cannot read " TALLY_EMU_BENCH_PTX);
  std::stringstream ptx;
  ptx << in.rdbuf();
  std::string text = ptx.str();
  CU_CHECK(emu.api().cuModuleLoadData(&emu.module, text.c_str()));
  // The same library the backend opened: RTLD_NOLOAD only takes another reference.
  void* library = dlopen(TALLY_EMU_LIBRARY_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) Die("libtally_emu.so is not loaded");
  emu.lane_instructions =
      reinterpret_cast<PFN_tallyEmuLaneInstructions>(dlsym(library, "tallyEmuLaneInstructions"));
  if (emu.lane_instructions == nullptr) Die("libtally_emu.so lacks tallyEmuLaneInstructions");
  return emu;
}

struct Launch {
  const char* kernel;
  unsigned grid_x, grid_y, block_x, block_y;
  std::vector<void*> args;
};

struct Figures {
  double emu_wall = 0, emu_cpu = 0, cpp_wall = 0, cpp_cpu = 0;
  unsigned long long lane_instructions = 0;  // of one run
};

// Runs the launch and the C++ loop `runs` times each; medians, and the lane-instructions of
// one launch (every run must execute the same number).
Figures Measure(const Emulator& emu, Launch launch, const std::function<void()>& cpp_loop,
                int runs) {
  CUfunction function = nullptr;
  CU_CHECK(emu.api().cuModuleGetFunction(&function, emu.module, launch.kernel));
  std::vector<double> emu_wall, emu_cpu, cpp_wall, cpp_cpu;
  Figures figures;
  for (int run = 0; run < runs; ++run) {
    unsigned long long count0 = emu.lane_instructions();
    double cpu0 = ProcessCpuSeconds();
    Clock::time_point t0 = Clock::now();
    CU_CHECK(emu.api().cuLaunchKernel(function, launch.grid_x, launch.grid_y, 1, launch.block_x,
                                      launch.block_y, 1, 0, emu.stream, launch.args.data(),
                                      nullptr));
    CU_CHECK(emu.api().cuStreamSynchronize(emu.stream));
    Clock::time_point t1 = Clock::now();
    emu_cpu.push_back(ProcessCpuSeconds() - cpu0);
    emu_wall.push_back(std::chrono::duration<double>(t1 - t0).count());
    unsigned long long count = emu.lane_instructions() - count0;
    if (run > 0 && count != figures.lane_instructions) {
      Die(std::string(launch.kernel) + ": lane-instruction count differs between runs");
    }
    figures.lane_instructions = count;

    cpu0 = ProcessCpuSeconds();
    t0 = Clock::now();
    cpp_loop();
    cpp_wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    cpp_cpu.push_back(ProcessCpuSeconds() - cpu0);
  }
  figures.emu_wall = Median(emu_wall);
  figures.emu_cpu = Median(emu_cpu);
  figures.cpp_wall = Median(cpp_wall);
  figures.cpp_cpu = Median(cpp_cpu);
  return figures;
}

void Report(const char* name, const Figures& f) {
  std::printf("%-15s %12.3f %10.1f %10.1f %10.3f %10.4f %9.0fx %9.0fx\n", name,
              static_cast<double>(f.lane_instructions) / 1e6,
              f.lane_instructions / f.emu_wall / 1e6, f.lane_instructions / f.emu_cpu / 1e6,
              f.emu_wall * 1e3, f.cpp_wall * 1e3, f.emu_wall / f.cpp_wall,
              f.emu_cpu / f.cpp_cpu);
}

template <typename T>
void Verify(const char* name, const std::vector<T>& emulated, const std::vector<T>& expected) {
  if (std::memcmp(emulated.data(), expected.data(), expected.size() * sizeof(T)) != 0) {
    Die(std::string(name) + ": the emulator's result differs from the C++ loop's");
  }
}

// Small integer values: every sum below is exact in float, so results compare bit for bit.
std::vector<float> SmallIntegers(size_t n, unsigned seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + seed) % 5);
  return v;
}

void VecAdd(const Emulator& emu, int n, int runs) {
  std::vector<float> a = SmallIntegers(n, 1), b = SmallIntegers(n, 3), c(n);
  CUdeviceptr da = emu.Upload(a.data(), n * sizeof(float));
  CUdeviceptr db = emu.Upload(b.data(), n * sizeof(float));
  CUdeviceptr dc = emu.Upload(c.data(), n * sizeof(float));
  Figures f = Measure(
      emu, {"vec_add", (n + 255u) / 256u, 1, 256, 1, {&da, &db, &dc, &n}},
      [&] {
        for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
      },
      runs);
  Verify("vec_add", emu.Download<float>(dc, n), c);
  Report("vec_add", f);
  for (CUdeviceptr p : {da, db, dc}) emu.api().cuMemFree(p);
}

void Matmul(const Emulator& emu, int n, int runs) {
  if (n <= 0 || n % 16 != 0) Die("--matmul-n must be a positive multiple of 16");
  size_t count = size_t(n) * n;
  std::vector<float> a = SmallIntegers(count, 1), b = SmallIntegers(count, 2), c(count);
  CUdeviceptr da = emu.Upload(a.data(), count * sizeof(float));
  CUdeviceptr db = emu.Upload(b.data(), count * sizeof(float));
  CUdeviceptr dc = emu.Upload(c.data(), count * sizeof(float));
  unsigned tiles = n / 16;
  Figures f = Measure(
      emu, {"matmul_tiled", tiles, tiles, 16, 16, {&da, &db, &dc, &n}},
      [&] {
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < n; ++j) {
            float sum = 0.0f;
            for (int k = 0; k < n; ++k) sum += a[i * n + k] * b[k * n + j];
            c[i * n + j] = sum;
          }
        }
      },
      runs);
  Verify("matmul_tiled", emu.Download<float>(dc, count), c);
  Report("matmul_tiled", f);
  for (CUdeviceptr p : {da, db, dc}) emu.api().cuMemFree(p);
}

void Reduce(const Emulator& emu, int n, int runs) {
  constexpr int kBlock = 256;
  if (n <= 0 || n % kBlock != 0) Die("--reduce-n must be a positive multiple of 256");
  int blocks = n / kBlock;
  std::vector<unsigned> in(n), sums(blocks);
  for (int i = 0; i < n; ++i) in[i] = static_cast<unsigned>(i) * 2654435761u;
  CUdeviceptr din = emu.Upload(in.data(), n * sizeof(unsigned));
  CUdeviceptr dout = emu.Upload(sums.data(), blocks * sizeof(unsigned));
  Figures f = Measure(
      emu, {"shuffle_reduce", unsigned(blocks), 1, kBlock, 1, {&din, &dout}},
      [&] {
        for (int block = 0; block < blocks; ++block) {
          unsigned sum = 0;
          for (int i = 0; i < kBlock; ++i) sum += in[block * kBlock + i];
          sums[block] = sum;
        }
      },
      runs);
  Verify("shuffle_reduce", emu.Download<unsigned>(dout, blocks), sums);
  Report("shuffle_reduce", f);
  for (CUdeviceptr p : {din, dout}) emu.api().cuMemFree(p);
}

}  // namespace

int main(int argc, char** argv) {
  int vec_n = 1 << 22, matmul_n = 256, reduce_n = 1 << 22, runs = 3, tenant = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    int* target = arg == "--vec-n"      ? &vec_n
                  : arg == "--matmul-n" ? &matmul_n
                  : arg == "--reduce-n" ? &reduce_n
                  : arg == "--runs"     ? &runs
                  : arg == "--tenant"   ? &tenant
                                        : nullptr;
    if (target == nullptr || i + 1 == argc) {
      std::fputs(kUsage, stderr);
      return arg == "--help" ? 0 : 2;
    }
    *target = std::atoi(argv[++i]);
  }
  if (vec_n <= 0 || runs <= 0 || tenant < 0) Die("sizes and runs must be positive");
  Emulator emu = LoadEmulator();
  if (tenant != 0) {
    if (emu.backend.extensions().stream_set_tenant == nullptr) Die("the tenants are off");
    emu.tenant = static_cast<uint64_t>(tenant);
    CU_CHECK(emu.api().cuStreamCreateWithPriority(&emu.stream, CU_STREAM_NON_BLOCKING, 0));
    CU_CHECK(emu.backend.extensions().stream_set_tenant(emu.stream, emu.tenant));
  }
  int sm_count = 0;
  CU_CHECK(emu.api().cuDeviceGetAttribute(&sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                          emu.backend.device()));
  unsigned cores = std::thread::hardware_concurrency();
  std::printf("emulated GPU: %d SMs on %u host threads (%u cores); medians of %d runs; %s\n",
              sm_count, std::min<unsigned>(sm_count, cores), cores, runs,
              tenant != 0 ? "a tenant's stream and memory" : "no tenant");
  // Wall time also counts the time other processes held the cores; CPU time (of every thread
  // of the process) counts the work done: on an idle machine, with one host thread, they agree.
  std::printf("%-15s %12s %10s %10s %10s %10s %10s %10s\n", "kernel", "M lane-inst", "M/s wall",
              "M/s CPU", "emu ms", "C++ ms", "wall x", "CPU x");
  VecAdd(emu, vec_n, runs);
  Matmul(emu, matmul_n, runs);
  Reduce(emu, reduce_n, runs);
  return 0;
}
