// Running NVIDIA's ptxas on a PTX text, to check that what we print is accepted.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"

namespace tally::ptx {

// ptxas to use: $TALLY_PTXAS, else $TALLY_CUDA_ROOT/bin/ptxas, else /usr/local/cuda/bin/ptxas,
// else `ptxas` on PATH; nullopt when none is executable.
std::optional<std::string> FindPtxas();

// Assembles `ptx` for `arch` (e.g. "sm_80") and discards the cubin. An error carries ptxas's
// own messages.
absl::Status RunPtxas(const std::string& ptxas, const std::string& ptx, const std::string& arch);

}  // namespace tally::ptx
