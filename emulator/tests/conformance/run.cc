// Conformance case runs: argument upload/download, stdout capture, the original launch.
#include "emulator/tests/conformance/run.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tally::emu::conformance {

using emu::testing::CopyArray;
using emu::testing::Emu;

namespace {

static_assert(static_cast<int>(AddressMode::kWrap) == CU_TR_ADDRESS_MODE_WRAP &&
              static_cast<int>(AddressMode::kClamp) == CU_TR_ADDRESS_MODE_CLAMP &&
              static_cast<int>(AddressMode::kMirror) == CU_TR_ADDRESS_MODE_MIRROR &&
              static_cast<int>(AddressMode::kBorder) == CU_TR_ADDRESS_MODE_BORDER);

}  // namespace

DeviceArgs::DeviceArgs(const std::vector<Arg>& args) : args_(args), slots_(args.size()) {
  for (size_t i = 0; i < args_.size(); ++i) {
    const Arg& arg = args_[i];
    Slot& slot = slots_[i];
    if (arg.image) {
      const Image& image = *arg.image;
      REQUIRE(arg.bytes.size() == size_t{image.width} * image.height * sizeof(float));
      CUDA_ARRAY3D_DESCRIPTOR array{};
      array.Width = image.width;
      array.Height = image.height;
      array.Format = CU_AD_FORMAT_FLOAT;
      array.NumChannels = 1;
      array.Flags = image.surface ? CUDA_ARRAY3D_SURFACE_LDST : 0;
      EMU_OK(Emu().cuArray3DCreate_v2(&slot.array, &array));
      // Copied into the array: only read.
      void* texels = const_cast<uint8_t*>(arg.bytes.data());
      EMU_OK(CopyArray(slot.array, texels, size_t{image.width} * sizeof(float), image.height, 1,
                       /*to_array=*/true));
      CUDA_RESOURCE_DESC resource{};
      resource.resType = CU_RESOURCE_TYPE_ARRAY;
      resource.res.array.hArray = slot.array;
      if (image.surface) {
        EMU_OK(Emu().cuSurfObjectCreate(&slot.object, &resource));
        continue;
      }
      CUDA_TEXTURE_DESC texture{};
      for (auto& mode : texture.addressMode) {
        mode = static_cast<CUaddress_mode>(image.sampler.address);
      }
      texture.filterMode =
          image.sampler.linear ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
      texture.flags = image.sampler.normalized ? CU_TRSF_NORMALIZED_COORDINATES : 0;
      for (float& channel : texture.borderColor) channel = image.sampler.border;
      EMU_OK(Emu().cuTexObjectCreate(&slot.object, &resource, &texture, nullptr));
    } else if (arg.is_buffer) {
      // At least one byte, so that an empty buffer still has an address of its own.
      EMU_OK(Emu().cuMemAlloc_v2(&slot.buffer, std::max<size_t>(arg.bytes.size(), 1)));
      if (!arg.bytes.empty()) {
        EMU_OK(Emu().cuMemcpyHtoD_v2(slot.buffer, arg.bytes.data(), arg.bytes.size()));
      }
    }
  }
}

DeviceArgs::~DeviceArgs() {
  for (size_t i = 0; i < args_.size(); ++i) {
    const Slot& slot = slots_[i];
    if (slot.buffer != 0) Emu().cuMemFree_v2(slot.buffer);
    if (slot.object != 0) {
      if (args_[i].image->surface) {
        Emu().cuSurfObjectDestroy(slot.object);
      } else {
        Emu().cuTexObjectDestroy(slot.object);
      }
    }
    if (slot.array != nullptr) Emu().cuArrayDestroy(slot.array);
  }
}

std::vector<void*> DeviceArgs::Params() {
  std::vector<void*> params;
  for (size_t i = 0; i < args_.size(); ++i) {
    params.push_back(args_[i].image      ? static_cast<void*>(&slots_[i].object)
                     : args_[i].is_buffer ? static_cast<void*>(&slots_[i].buffer)
                                          : static_cast<void*>(args_[i].bytes.data()));
  }
  return params;
}

Outputs DeviceArgs::Collect(std::vector<std::string> printed) const {
  std::vector<std::vector<uint8_t>> bytes;
  for (size_t i = 0; i < args_.size(); ++i) {
    bytes.push_back(args_[i].bytes);
    if (args_[i].image && args_[i].image->surface) {
      const Image& image = *args_[i].image;
      EMU_OK(CopyArray(slots_[i].array, bytes.back().data(), size_t{image.width} * sizeof(float),
                       image.height, 1, /*to_array=*/false));
    } else if (args_[i].is_buffer && !bytes.back().empty()) {
      EMU_OK(Emu().cuMemcpyDtoH_v2(bytes.back().data(), slots_[i].buffer, bytes.back().size()));
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
