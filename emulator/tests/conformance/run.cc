// Conformance case runs: argument upload/download, stdout capture, the original launch.
#include "emulator/tests/conformance/run.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tally::emu::conformance {

using emu::testing::Emu;

DeviceArgs::DeviceArgs(const std::vector<Arg>& args) : args_(args), buffers_(args.size(), 0) {
  for (size_t i = 0; i < args_.size(); ++i) {
    if (!args_[i].is_buffer) continue;
    // At least one byte, so that an empty buffer still has an address of its own.
    EMU_OK(Emu().cuMemAlloc_v2(&buffers_[i], std::max<size_t>(args_[i].bytes.size(), 1)));
    if (!args_[i].bytes.empty()) {
      EMU_OK(Emu().cuMemcpyHtoD_v2(buffers_[i], args_[i].bytes.data(), args_[i].bytes.size()));
    }
  }
}

DeviceArgs::~DeviceArgs() {
  for (CUdeviceptr buffer : buffers_) {
    if (buffer != 0) Emu().cuMemFree_v2(buffer);
  }
}

std::vector<void*> DeviceArgs::Params() {
  std::vector<void*> params;
  for (size_t i = 0; i < args_.size(); ++i) {
    params.push_back(args_[i].is_buffer ? static_cast<void*>(&buffers_[i])
                                        : static_cast<void*>(args_[i].bytes.data()));
  }
  return params;
}

Outputs DeviceArgs::Collect(std::vector<std::string> printed) const {
  std::vector<std::vector<uint8_t>> bytes;
  for (size_t i = 0; i < args_.size(); ++i) {
    bytes.push_back(args_[i].bytes);
    if (args_[i].is_buffer && !bytes.back().empty()) {
      EMU_OK(Emu().cuMemcpyDtoH_v2(bytes.back().data(), buffers_[i], bytes.back().size()));
    }
  }
  return Outputs{Values(std::move(bytes)), std::move(printed)};
}

std::vector<std::string> CapturePrinted(const std::function<CUresult()>& launch,
                                        CUresult* result) {
  char path[] = "/tmp/tally_conformance_stdout_XXXXXX";
  int file = mkstemp(path);
  REQUIRE(file >= 0);
  std::fflush(stdout);
  int saved = dup(1);
  REQUIRE(saved >= 0);
  dup2(file, 1);
  *result = launch();
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(file);
  std::ifstream captured(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(captured, line);) lines.push_back(line);
  unlink(path);
  return lines;
}

std::string ReadModule(const std::string& producer, const std::string& module) {
  std::ifstream file(ModulePath(producer, module), std::ios::binary);
  INFO(ModulePath(producer, module));
  REQUIRE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

Outputs RunOriginal(CUmodule module, const Case& c) {
  CUfunction function = nullptr;
  INFO("kernel " << c.kernel);
  EMU_OK(Emu().cuModuleGetFunction(&function, module, c.kernel));
  DeviceArgs args(c.args());
  std::vector<void*> params = args.Params();
  CUresult result = CUDA_SUCCESS;
  std::vector<std::string> printed = CapturePrinted(
      [&] {
        CUresult launched =
            c.cooperative
                ? Emu().cuLaunchCooperativeKernel(function, c.grid.x, c.grid.y, c.grid.z,
                                                  c.block.x, c.block.y, c.block.z,
                                                  c.dynamic_shared, nullptr, params.data())
                : Emu().cuLaunchKernel(function, c.grid.x, c.grid.y, c.grid.z, c.block.x,
                                       c.block.y, c.block.z, c.dynamic_shared, nullptr,
                                       params.data(), nullptr);
        return launched != CUDA_SUCCESS ? launched : Emu().cuCtxSynchronize();
      },
      &result);
  EMU_OK(result);
  return args.Collect(std::move(printed));
}

std::string Verify(const Case& c, const Outputs& outputs) {
  Expect expect;
  c.reference(Values([&] {
                std::vector<std::vector<uint8_t>> initial;
                for (const Arg& arg : c.args()) initial.push_back(arg.bytes);
                return initial;
              }()),
              expect);
  return expect.Check(outputs);
}

}  // namespace tally::emu::conformance
