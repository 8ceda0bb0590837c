// The two jobs of the priority tests and benchmark, each checking its own results:
//   priority_jobs train  — best-effort: long kernels of many blocks, back to back
//   priority_jobs serve  — latency-critical: requests of a few short kernels at random moments
//   priority_jobs occupancy — prints "blocks_per_sm N sms M": how many of the kernel's blocks
//                         (with --shared-kb) an SM holds at once, and the device's SMs
// Every kernel records, on the device clock (%globaltimer, one clock for all clients of a
// server), when its first block started and its last block ended, so that a test can tell
// which kernel overtook which. Options:
//   --kernels N       kernels (train) or requests (serve) to run
//   --blocks B        blocks per kernel (64 threads each)
//   --work W          loop steps per thread: how long a block computes
//   --per-request K   serve: kernels per request (default 1)
//   --shared-kb K     K KiB of dynamic shared memory per block (default 0), reserved, not used:
//                     it limits how many blocks an SM holds at once (beyond 48 KiB opted in
//                     with cudaFuncSetAttribute)
//   --max-gap-ms G    serve: a random pause of up to G ms before each request (seeded)
//   --arrivals FILE   serve: follow an arrival trace instead, one request per line at that
//                     time in ms from the start (after the handshake); --kernels is ignored.
//                     Requests are served one at a time: a request that arrives while another
//                     runs waits, and its latency counts from its arrival
//   --duration-ms D   train: repeat rounds of --kernels kernels (each round synchronised)
//                     until D ms have passed; the timeline then spans every round of a kernel
//   --throughput FILE one line: kernels (train) or requests (serve) completed per second
//   --timeline FILE   one line per kernel: "<start ns> <end ns>" (device clock)
//   --latencies FILE  serve: one line per request: its latency in microseconds, from before
//                     its first launch (with --arrivals: from its arrival) to the end of its
//                     synchronisation (queueing included)
//   --handshake       print READY once connected and wait for a line on stdin before working;
//                     print FINISHED at the end and wait for a line again before exiting
// At the end `train` prints "kernels/s <rate>" and `serve` "p50_us <x> p99_us <y>".
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

namespace {

constexpr unsigned kThreads = 64;

__device__ unsigned long long GlobalTimer() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// A linear congruential generator stepped `work` times from each thread's own seed.
__host__ __device__ unsigned Steps(unsigned seed, unsigned work) {
  unsigned value = seed;
  for (unsigned i = 0; i < work; ++i) value = value * 1664525u + 1013904223u;
  return value;
}

__global__ void Work(unsigned* out, unsigned work, unsigned salt, unsigned long long* span) {
  if (threadIdx.x == 0) atomicMin(&span[0], GlobalTimer());
  const unsigned index = blockIdx.x * blockDim.x + threadIdx.x;
  out[index] = Steps(index ^ salt, work);
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(&span[1], GlobalTimer());
}

struct Options {
  std::string mode;
  unsigned kernels = 4;
  unsigned blocks = 64;
  unsigned work = 1000;
  unsigned per_request = 1;
  unsigned shared_kb = 0;
  double max_gap_ms = 0;
  std::optional<std::vector<double>> arrival_ms;  // from --arrivals
  double duration_ms = 0;
  std::string throughput;
  std::string timeline;
  std::string latencies;
  bool handshake = false;
};

std::vector<double> ReadArrivals(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) {
    std::fprintf(stderr, "cannot read the arrivals %s\n", path.c_str());
    std::exit(2);
  }
  std::vector<double> times;
  for (double ms; std::fscanf(file, "%lf", &ms) == 1;) times.push_back(ms);
  std::fclose(file);
  return times;
}

Options Parse(int argc, char** argv) {
  Options options;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s train|serve [options] (see the source)\n", argv[0]);
    std::exit(2);
  }
  options.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--kernels") options.kernels = std::stoul(value());
    else if (arg == "--blocks") options.blocks = std::stoul(value());
    else if (arg == "--work") options.work = std::stoul(value());
    else if (arg == "--per-request") options.per_request = std::stoul(value());
    else if (arg == "--shared-kb")
      options.shared_kb = std::stoul(value());
    else if (arg == "--max-gap-ms") options.max_gap_ms = std::stod(value());
    else if (arg == "--arrivals") options.arrival_ms = ReadArrivals(value());
    else if (arg == "--duration-ms") options.duration_ms = std::stod(value());
    else if (arg == "--throughput") options.throughput = value();
    else if (arg == "--timeline") options.timeline = value();
    else if (arg == "--latencies") options.latencies = value();
    else if (arg == "--handshake") options.handshake = true;
    else {
      std::fprintf(stderr, "unknown option %s\n", arg.c_str());
      std::exit(2);
    }
  }
  if (options.mode != "train" && options.mode != "serve" && options.mode != "occupancy") {
    std::fprintf(stderr, "the mode is train, serve or occupancy, not %s\n", options.mode.c_str());
    std::exit(2);
  }
  if (options.arrival_ms) options.kernels = options.arrival_ms->size();
  return options;
}

void Handshake(const Options& options, const char* say) {
  if (!options.handshake) return;
  std::printf("%s\n", say);
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
}

// Checks a sample of a kernel's results against the host's computation.
void CheckResults(const std::vector<unsigned>& out, unsigned work, unsigned salt) {
  const size_t stride = std::max<size_t>(1, out.size() / 97);
  for (size_t index = 0; index < out.size(); index += stride) {
    const unsigned expected = Steps(static_cast<unsigned>(index) ^ salt, work);
    if (out[index] != expected) {
      std::fprintf(stderr, "kernel %u: element %zu is %u, expected %u\n", salt, index, out[index],
                   expected);
      std::exit(1);
    }
  }
}

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(p * (values.size() - 1) + 0.5);
  return values[rank];
}

// What the kernels write to: a slot of `elements` results and a span per kernel.
struct Device {
  unsigned* out;
  unsigned long long* spans;
  cudaStream_t stream;
  size_t elements;
};

size_t SharedBytes(const Options& options) { return size_t{options.shared_kb} * 1024; }

// Lets Work launch with --shared-kb: above 48 KiB a kernel must opt in (CUDA C++ Programming
// Guide, "Shared Memory").
void AllowSharedMemory(const Options& options) {
  if (options.shared_kb == 0) return;
  CHECK_CUDA(cudaFuncSetAttribute(Work, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(SharedBytes(options))));
}

void PrintOccupancy(const Options& options) {
  int per_sm = 0, sms = 0;
  CHECK_CUDA(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Work, kThreads, SharedBytes(options)));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("blocks_per_sm %d sms %d\n", per_sm, sms);
}

void Launch(const Options& options, const Device& device, unsigned k) {
  Work<<<options.blocks, kThreads, SharedBytes(options), device.stream>>>(
      device.out + k * device.elements, options.work, k, device.spans + 2 * k);
  CHECK_CUDA(cudaGetLastError());
}

// Requests one at a time, each at its arrival (--arrivals) or after a random pause; returns
// each request's latency.
std::vector<double> Serve(const Options& options, const Device& device,
                          std::chrono::steady_clock::time_point start) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> gap(0, options.max_gap_ms);
  std::vector<double> latencies_us;
  for (unsigned request = 0; request < options.kernels; ++request) {
    auto sent = std::chrono::steady_clock::now();
    if (options.arrival_ms) {
      sent = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double, std::milli>((*options.arrival_ms)[request]));
      std::this_thread::sleep_until(sent);
    } else if (options.max_gap_ms > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(gap(rng)));
      sent = std::chrono::steady_clock::now();
    }
    for (unsigned i = 0; i < options.per_request; ++i) {
      Launch(options, device, request * options.per_request + i);
    }
    CHECK_CUDA(cudaStreamSynchronize(device.stream));
    latencies_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - sent)
            .count());
  }
  return latencies_us;
}

// Rounds of --kernels kernels back to back: one round, or rounds until --duration-ms has
// passed. Returns the kernels completed.
unsigned Train(const Options& options, const Device& device,
               std::chrono::steady_clock::time_point start) {
  const auto until = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double, std::milli>(options.duration_ms));
  unsigned completed = 0;
  do {
    for (unsigned k = 0; k < options.kernels; ++k) Launch(options, device, k);
    CHECK_CUDA(cudaStreamSynchronize(device.stream));
    completed += options.kernels;
  } while (std::chrono::steady_clock::now() < until);
  return completed;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = Parse(argc, argv);
  AllowSharedMemory(options);
  if (options.mode == "occupancy") {
    PrintOccupancy(options);
    return 0;
  }
  const bool serve = options.mode == "serve";
  // At least one slot: an arrival trace may hold no request.
  const unsigned launches = std::max(1u, options.kernels * (serve ? options.per_request : 1));
  const size_t elements = size_t{options.blocks} * kThreads;
  unsigned* out;
  unsigned long long* spans;
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMalloc(&out, elements * sizeof(unsigned) * launches));
  CHECK_CUDA(cudaMalloc(&spans, 2 * sizeof(unsigned long long) * launches));
  std::vector<unsigned long long> initial(2 * launches);
  for (unsigned k = 0; k < launches; ++k) initial[2 * k] = ~0ull;
  CHECK_CUDA(cudaMemcpy(spans, initial.data(), initial.size() * sizeof(initial[0]),
                        cudaMemcpyHostToDevice));
  Handshake(options, "READY");

  const auto start = std::chrono::steady_clock::now();
  const Device device{out, spans, stream, elements};
  std::vector<double> latencies_us;
  unsigned completed = 0;
  if (serve) {
    latencies_us = Serve(options, device, start);
    completed = latencies_us.size();
  } else {
    completed = Train(options, device, start);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!options.throughput.empty()) {
    FILE* file = std::fopen(options.throughput.c_str(), "w");
    EXPECT(file != nullptr);
    std::fprintf(file, "%.6f\n", completed / seconds);
    std::fclose(file);
  }

  // The slots written: every one, unless an arrival trace held no request.
  const unsigned written = serve ? completed * options.per_request : options.kernels;
  std::vector<unsigned> host(elements);
  for (unsigned k = 0; k < written; ++k) {
    CHECK_CUDA(cudaMemcpy(host.data(), out + k * elements, elements * sizeof(unsigned),
                          cudaMemcpyDeviceToHost));
    CheckResults(host, options.work, k);
  }
  std::vector<unsigned long long> times(2 * launches);
  CHECK_CUDA(cudaMemcpy(times.data(), spans, times.size() * sizeof(times[0]),
                        cudaMemcpyDeviceToHost));
  if (!options.timeline.empty()) {
    FILE* file = std::fopen(options.timeline.c_str(), "w");
    EXPECT(file != nullptr);
    for (unsigned k = 0; k < written; ++k) {
      EXPECT(times[2 * k] <= times[2 * k + 1]);
      std::fprintf(file, "%llu %llu\n", times[2 * k], times[2 * k + 1]);
    }
    std::fclose(file);
  }
  if (serve) {
    if (!options.latencies.empty()) {
      FILE* file = std::fopen(options.latencies.c_str(), "w");
      EXPECT(file != nullptr);
      for (double latency : latencies_us) std::fprintf(file, "%.1f\n", latency);
      std::fclose(file);
    }
    if (!latencies_us.empty()) {
      std::printf("p50_us %.1f p99_us %.1f\n", Percentile(latencies_us, 0.5),
                  Percentile(latencies_us, 0.99));
    }
  } else {
    std::printf("kernels/s %.4f\n", completed / seconds);
  }
  std::fflush(stdout);
  Handshake(options, "FINISHED");
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaFree(spans));
  CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}
