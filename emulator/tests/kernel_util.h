// Helpers for tests that run kernels on the emulator: loading the build-time PTX, moving data
// and launching synchronously.
#pragma once

#include <string>
#include <vector>

#include "emulator/tests/emu_library.h"

namespace tally::emu::testing {

std::string ReadKernelFile(const std::string& name);  // from TALLY_EMU_KERNEL_DIR

// cuInit, and the primary context made current unless the thread already has a context.
void EnsureContext();

// The module of kernels/basic.cu, loaded once into the primary context.
CUmodule BasicModule();
CUfunction BasicKernel(const char* name);

// Kernel `kernel` of the module built from kernels/<file>.cu, loaded into the current context
// (the primary one unless the thread has another) on every call.
CUfunction KernelFrom(const char* file, const char* kernel);

template <typename T>
CUdeviceptr Upload(const std::vector<T>& host) {
  EnsureContext();
  CUdeviceptr device = 0;
  REQUIRE(Emu().cuMemAlloc_v2(&device, host.size() * sizeof(T)) == CUDA_SUCCESS);
  REQUIRE(Emu().cuMemcpyHtoD_v2(device, host.data(), host.size() * sizeof(T)) == CUDA_SUCCESS);
  return device;
}

template <typename T>
std::vector<T> Download(CUdeviceptr device, size_t count) {
  std::vector<T> host(count);
  REQUIRE(Emu().cuMemcpyDtoH_v2(host.data(), device, count * sizeof(T)) == CUDA_SUCCESS);
  return host;
}

template <typename T>
CUdeviceptr Zeros(size_t count) {
  return Upload(std::vector<T>(count, T{}));
}

// A context of its own (made current; the previous one is current again afterwards) with the
// module `ptx_file` loaded: for launches whose sticky errors must not reach other tests.
class ScratchContext {
 public:
  explicit ScratchContext(const std::string& ptx_file = "basic.ptx");
  ~ScratchContext();
  CUfunction Kernel(const char* name);

 private:
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
};

// cuLaunchKernel with kernelParams, then cuCtxSynchronize; returns the first error.
CUresult LaunchAndWait(CUfunction function, unsigned grid_x, unsigned block_x,
                       std::vector<void*> args, unsigned shared = 0, unsigned grid_y = 1,
                       unsigned grid_z = 1, unsigned block_y = 1, unsigned block_z = 1);

}  // namespace tally::emu::testing
