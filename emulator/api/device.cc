// Exports the device queries: cuDeviceGet/GetCount/GetName/GetAttribute/TotalMem/GetUuid.
#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "emulator/exec/occupancy.h"
#include "emulator/internal/entry.h"

using tally::emu::CheckOut;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::Run;

namespace tally::emu {
namespace {

// Every attribute of the installed cuda.h has an answer: a CUDA release that adds one fails to
// build here until device_attributes.def says what the emulated device answers.
constexpr CUdevice_attribute kAnswered[] = {
#define TALLY_DEVICE_ATTRIBUTE(name, value) name,
#include "emulator/device_attributes.def"
};
constexpr bool Answers(CUdevice_attribute attribute) {
  for (CUdevice_attribute answered : kAnswered) {
    if (answered == attribute) return true;
  }
  return false;
}
#define TALLY_CU_DEVICE_ATTRIBUTE(name, value)                     \
  static_assert(Answers(CU_DEVICE_ATTRIBUTE_##name),               \
                "emulator/device_attributes.def has no value for " \
                "CU_DEVICE_ATTRIBUTE_" #name);
#include "cuda_abi/device_attributes.def"

absl::StatusOr<int> DeviceAttribute(const DeviceConfig& config, CUdevice_attribute attribute) {
  switch (attribute) {
#define TALLY_DEVICE_ATTRIBUTE(name, value) \
  case name:                                \
    return static_cast<int>(value);
#include "emulator/device_attributes.def"
    default:
      return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown device attribute");
  }
}

}  // namespace
}  // namespace tally::emu

extern "C" {

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(device));
    TALLY_RETURN_IF_ERROR(driver.CheckDevice(ordinal));
    *device = ordinal;
    return absl::OkStatus();
  });
}

CUresult cuDeviceGetCount(int* count) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(count));
    *count = driver.config().device_count;
    return absl::OkStatus();
  });
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(name));
    if (len <= 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "len must be positive");
    TALLY_RETURN_IF_ERROR(driver.CheckDevice(dev));
    const std::string& device_name = driver.config().name;
    size_t n = std::min(device_name.size(), static_cast<size_t>(len - 1));
    std::memcpy(name, device_name.data(), n);
    name[n] = '\0';
    return absl::OkStatus();
  });
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(pi));
    TALLY_RETURN_IF_ERROR(driver.CheckDevice(dev));
    TALLY_ASSIGN_OR_RETURN(*pi, tally::emu::DeviceAttribute(driver.config(), attrib));
    return absl::OkStatus();
  });
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(bytes));
    TALLY_RETURN_IF_ERROR(driver.CheckDevice(dev));
    *bytes = driver.memory().capacity();
    return absl::OkStatus();
  });
}

// A stable UUID derived from the device name, so that tools that key caches by UUID see the
// same device across runs with the same configuration; ordinals after 0 (TALLY_EMU_DEVICE_COUNT)
// mix their ordinal in, so that each has a UUID of its own.
CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(uuid));
    TALLY_RETURN_IF_ERROR(driver.CheckDevice(dev));
    uint64_t hash[2] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};  // FNV-1a, two seeds
    const auto mix = [&hash](unsigned char c) {
      for (uint64_t& h : hash) h = (h ^ c) * 0x100000001b3ull;
    };
    for (unsigned char c : driver.config().name) mix(c);
    if (dev > 0) {
      mix('#');
      for (unsigned char c : std::to_string(dev)) mix(c);
    }
    std::memcpy(uuid->bytes, hash, sizeof(uuid->bytes));
    return absl::OkStatus();
  });
}

}  // extern "C"
