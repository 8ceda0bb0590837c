// Kernel-test helpers: build-time PTX files and synchronous launches.
#include "emulator/tests/kernel_util.h"

#include <fstream>
#include <sstream>

namespace tally::emu::testing {

std::string ReadKernelFile(const std::string& name) {
  std::ifstream file(std::string(TALLY_EMU_KERNEL_DIR) + "/" + name, std::ios::binary);
  REQUIRE(file.good());
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

void EnsureContext() {
  REQUIRE(Emu().cuInit(0) == CUDA_SUCCESS);
  CUcontext current = nullptr;
  REQUIRE(Emu().cuCtxGetCurrent(&current) == CUDA_SUCCESS);
  if (current == nullptr) InitPrimaryContext();
}

CUmodule BasicModule() {
  static CUmodule module = [] {
    EnsureContext();
    std::string ptx = ReadKernelFile("basic.ptx");
    CUmodule loaded = nullptr;
    REQUIRE(Emu().cuModuleLoadData(&loaded, ptx.c_str()) == CUDA_SUCCESS);
    return loaded;
  }();
  return module;
}

CUfunction BasicKernel(const char* name) {
  CUfunction function = nullptr;
  INFO(name);
  REQUIRE(Emu().cuModuleGetFunction(&function, BasicModule(), name) == CUDA_SUCCESS);
  return function;
}

CUfunction KernelFrom(const char* file, const char* kernel) {
  EnsureContext();
  std::string ptx = ReadKernelFile(std::string(file) + ".ptx");
  CUmodule module = nullptr;
  REQUIRE(Emu().cuModuleLoadData(&module, ptx.c_str()) == CUDA_SUCCESS);
  CUfunction function = nullptr;
  INFO(kernel);
  REQUIRE(Emu().cuModuleGetFunction(&function, module, kernel) == CUDA_SUCCESS);
  return function;
}

ScratchContext::ScratchContext(const std::string& ptx_file) {
  BasicModule();
  REQUIRE(Emu().cuCtxCreate_v2(&context_, 0, 0) == CUDA_SUCCESS);
  std::string ptx = ReadKernelFile(ptx_file);
  REQUIRE(Emu().cuModuleLoadData(&module_, ptx.c_str()) == CUDA_SUCCESS);
}

ScratchContext::~ScratchContext() { Emu().cuCtxDestroy_v2(context_); }

CUfunction ScratchContext::Kernel(const char* name) {
  CUfunction function = nullptr;
  REQUIRE(Emu().cuModuleGetFunction(&function, module_, name) == CUDA_SUCCESS);
  return function;
}

CUresult LaunchAndWait(CUfunction function, unsigned grid_x, unsigned block_x,
                       std::vector<void*> args, unsigned shared, unsigned grid_y, unsigned grid_z,
                       unsigned block_y, unsigned block_z) {
  CUresult result = Emu().cuLaunchKernel(function, grid_x, grid_y, grid_z, block_x, block_y,
                                         block_z, shared, nullptr, args.data(), nullptr);
  if (result != CUDA_SUCCESS) return result;
  return Emu().cuCtxSynchronize();
}

}  // namespace tally::emu::testing
