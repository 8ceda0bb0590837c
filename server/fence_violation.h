// The word a client's fenced kernels set when one of their accesses strays outside the client's
// memory (ptx_transform/passes/fence_memory.h): page-locked and mapped for the device, so that
// the server reads it with a plain load. Shared by the client's fence and the answers to its
// calls (ContextFaultView), which report the violation as the illegal address it is.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"

namespace tally::server {

class FenceViolation {
 public:
  static absl::StatusOr<std::shared_ptr<FenceViolation>> Create(const DriverApi& api);
  FenceViolation(const FenceViolation&) = delete;
  FenceViolation& operator=(const FenceViolation&) = delete;
  ~FenceViolation();

  // Where the kernels write (FenceParams::violation_flag).
  CUdeviceptr device_address() const { return device_address_; }
  // Whether a kernel has set it; any thread.
  bool Set() const;

 private:
  explicit FenceViolation(const DriverApi& api) : api_(api) {}

  const DriverApi& api_;
  uint32_t* word_ = nullptr;
  CUdeviceptr device_address_ = 0;
};

}  // namespace tally::server
