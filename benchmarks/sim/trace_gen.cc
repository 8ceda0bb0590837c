// The generators draw each kernel's size and relative weight from a seeded RNG around a few
// archetypes, then scale all block times by one factor, found by bisection on AloneTime, so
// that the job alone takes the target time.
#include "benchmarks/sim/trace_gen.h"

#include <random>

namespace tally::sim {
namespace {

// `interference`: the slowdown of a block that starts on a device otherwise full is
// 1 + interference (`../sim/README.md`). Memory-bound kernels (normalisations, element-wise):
// 0.6, from Villarrubia, Costero, Igual and Olcoz, "A comprehensive evaluation of spatial
// co-execution on GPUs using MPS and MIG technologies" (J. Supercomputing 82(4), 2026;
// arXiv:2604.22430, abstract): co-execution under MPS with memory contention performs about 30%
// worse (read here as against running the jobs one after the other; the abstract names neither
// GPU nor jobs). Two such jobs each holding half the device take 1 + interference / 2 of that
// time in this model, so 1.3 gives 0.6. Compute-bound kernels (matrix multiplications,
// convolutions): no public figure isolates their slowdown, so they keep the default 0.5.
// ../workloads/README.md, "Interference", gives the sources in full.
struct Archetype {
  const char* name;
  uint32_t threads, registers, shared_bytes;
  double interference;
};
constexpr double kMemoryBoundInterference = 0.6;
constexpr Archetype kGemm{"gemm", 256, 128, 32768, TraceKernel::kDefaultInterference};
constexpr Archetype kConv{"conv", 256, 96, 49152, TraceKernel::kDefaultInterference};
constexpr Archetype kNorm{"norm", 128, 40, 4096, kMemoryBoundInterference};
constexpr Archetype kElementwise{"elementwise", 256, 32, 0, kMemoryBoundInterference};

class Builder {
 public:
  Builder(const ModelShape& shape, const DeviceSpec& device, const char* kind)
      : device_(device), rng_(shape.seed) {
    trace_.name = shape.name;
    trace_.kind = kind;
    trace_.source = shape.source;
    trace_.generated_by = shape.generated_by;
    trace_.launch_gap = shape.launch_gap;
  }

  // A kernel of `waves` waves (fractions: part of one) and `weight` (relative time per wave).
  void Add(const Archetype& a, const std::string& name, double waves, double weight) {
    TraceKernel k;
    k.name = name;
    k.block = {a.threads, 1, 1};
    k.registers_per_thread = a.registers;
    k.shared_bytes = a.shared_bytes;
    k.interference = a.interference;
    const uint64_t wave = uint64_t{ResidentBlocksPerSm(device_, k.resources())} * device_.sm_count;
    k.grid = {static_cast<uint32_t>(std::max<double>(1, waves * wave)), 1, 1};
    weights_.push_back(weight * Jitter());
    trace_.kernels.push_back(std::move(k));
  }
  double Uniform(double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng_); }
  int UniformInt(int lo, int hi) { return std::uniform_int_distribution<>(lo, hi)(rng_); }

  JobTrace Finish(Duration target) {
    double lo = 0, hi = 1;
    while (AloneTime(Scaled(hi), device_) < target) hi *= 2;
    for (int i = 0; i < 60; ++i) {
      const double mid = (lo + hi) / 2;
      (AloneTime(Scaled(mid), device_) < target ? lo : hi) = mid;
    }
    return Scaled(hi);
  }

 private:
  double Jitter() { return Uniform(0.7, 1.3); }
  // The trace with block time = weight * scale microseconds.
  JobTrace Scaled(double scale) const {
    JobTrace t = trace_;
    for (size_t i = 0; i < t.kernels.size(); ++i) {
      t.kernels[i].block_time = std::chrono::duration_cast<Duration>(
          std::chrono::duration<double, std::micro>(weights_[i] * scale));
    }
    return t;
  }

  const DeviceSpec& device_;
  std::mt19937_64 rng_;
  JobTrace trace_;
  std::vector<double> weights_;
};

}  // namespace

JobTrace GenerateInference(const ModelShape& shape, const DeviceSpec& device) {
  Builder b(shape, device, "inference");
  for (int l = 0; l < shape.layers; ++l) {
    b.Add(kGemm, "gemm_in", b.Uniform(0.4, 1.0), 3);
    b.Add(kNorm, "norm", b.Uniform(0.05, 0.3), 1);
    b.Add(kGemm, "gemm_out", b.Uniform(0.4, 1.0), 3);
    b.Add(kElementwise, "elementwise", b.Uniform(0.1, 0.5), 1);
  }
  return b.Finish(shape.target);
}

JobTrace GenerateTraining(const ModelShape& shape, const DeviceSpec& device) {
  Builder b(shape, device, "training");
  std::vector<int> waves;
  for (int l = 0; l < shape.layers; ++l) {
    waves.push_back(b.UniformInt(2, 8));
    b.Add(kConv, "conv_fwd", waves.back(), 2);
    b.Add(kNorm, "norm_fwd", b.Uniform(1, 3), 0.5);
    b.Add(kElementwise, "act_fwd", b.Uniform(0.5, 2), 0.3);
  }
  for (int l = shape.layers - 1; l >= 0; --l) {
    b.Add(kElementwise, "act_bwd", b.Uniform(0.5, 2), 0.3);
    b.Add(kNorm, "norm_bwd", b.Uniform(1, 3), 0.6);
    b.Add(kConv, "conv_dgrad", waves[l], 2);
    b.Add(kConv, "conv_wgrad", waves[l], 2);
  }
  for (int i = 0; i < 4; ++i) b.Add(kElementwise, "optimizer", b.Uniform(4, 12), 0.3);
  return b.Finish(shape.target);
}

}  // namespace tally::sim
