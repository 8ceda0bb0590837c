// Per-kernel parameter records that ptxas stores in a cubin's `.nv.info.<kernel>` sections;
// they let us check parameter layouts computed from PTX against what nvcc itself produced.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tally::ptx {

struct CubinParam {
  uint32_t ordinal = 0;  // position in the kernel's parameter list
  uint32_t offset = 0;   // byte offset in the parameter buffer
  uint32_t size = 0;     // bytes
  friend bool operator==(const CubinParam&, const CubinParam&) = default;
};

struct CubinKernelInfo {
  std::string name;                // mangled, from the section name
  std::vector<CubinParam> params;  // from EIATTR_KPARAM_INFO, sorted by ordinal
  // EIATTR_PARAM_CBANK: where the parameters live in constant bank 0, and their total size.
  std::optional<uint32_t> param_cbank_offset;
  std::optional<uint32_t> param_cbank_size;
  std::optional<uint32_t> cbank_param_size;  // EIATTR_CBANK_PARAM_SIZE
};

// The kernels of a cubin (an ELF64 image, e.g. a FatbinEntry's payload) that have a
// `.nv.info.<kernel>` section, in section order. Malformed records are an error.
absl::StatusOr<std::vector<CubinKernelInfo>> ReadCubinKernelInfo(std::span<const uint8_t> cubin);

}  // namespace tally::ptx
