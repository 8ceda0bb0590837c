// Generators of kernel traces for inference-like jobs (a request: many short kernels of at most
// one wave) and training-like jobs (an iteration: forward, backward and optimizer kernels of
// several waves each), scaled so that the job alone on the device takes a given time: the
// figure a trace is calibrated to (benchmarks/workloads/README.md cites each).
#pragma once

#include <string>

#include "benchmarks/sim/trace.h"

namespace tally::sim {

struct ModelShape {
  std::string name{};
  std::string source{};        // the calibration figure and its citation
  std::string generated_by{};  // the command line
  int layers = 12;
  Duration target{0};  // the request's or iteration's time alone on the device
  Duration launch_gap = std::chrono::microseconds(2);
  uint64_t seed = 1;
};

// Per layer: two matrix multiplications (one wave or less, long blocks), a normalisation and
// an element-wise kernel.
JobTrace GenerateInference(const ModelShape& shape, const DeviceSpec& device);

// Per layer: a convolution or matrix multiplication of 2 to 8 waves, a normalisation and an
// activation forward; the backward pass in reverse (two gradient kernels per convolution);
// an optimizer step of large element-wise kernels.
JobTrace GenerateTraining(const ModelShape& shape, const DeviceSpec& device);

}  // namespace tally::sim
