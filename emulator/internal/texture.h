// CUDA arrays, texture objects and surface objects as the emulator stores them. Array contents
// live in host memory owned by the array (kernels reach them only through textures, surfaces
// and copies), and a texture or surface keeps its array alive, so a destroyed array can never
// be read through a stale object. Linear and pitch2D textures point into device memory and are
// bounds-checked at every fetch.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/internal/handle_table.h"

namespace tally::emu {

// Bytes of one channel of `format`; 0 for formats the emulator does not support.
uint32_t ChannelBytes(CUarray_format format);
// INVALID_VALUE unless `format` is supported and `channels` is 1, 2 or 4.
absl::Status CheckFormat(CUarray_format format, unsigned channels);

struct CudaArray {
  CUDA_ARRAY3D_DESCRIPTOR desc{};  // Height/Depth 0 for fewer dimensions, as created
  uint32_t element_bytes = 0;
  uint64_t width = 1, height = 1, depth = 1;  // at least 1 in every dimension
  uint64_t owner = 0;                         // context id
  std::vector<uint8_t> storage;               // rows of width * element_bytes, packed
  uint64_t pitch() const { return width * element_bytes; }
  uint64_t slice() const { return pitch() * height; }
};

// What a fetch needs, resolved at creation.
struct Sampler {
  std::shared_ptr<CudaArray> array;  // keeps array memory alive; null for device memory
  uint64_t base = 0;                 // host address of element (0,0,0)
  bool device_memory = false;        // linear/pitch2D: check each fetch against allocations
  bool linear_resource = false;      // tex1Dfetch semantics: out-of-range reads give zeros
  CUarray_format format = CU_AD_FORMAT_FLOAT;
  uint32_t channels = 1, element_bytes = 4;
  uint64_t size[3] = {1, 1, 1};  // elements per dimension
  uint64_t pitch = 0, slice = 0;
  bool returns_float = true;  // float/half formats, or 8/16-bit integers read normalized
  bool normalized_coords = false;
  bool linear_filter = false;
  CUaddress_mode address_mode[3] = {};
  float border[4] = {};
};

struct TextureObject {
  uint64_t owner = 0;
  CUDA_RESOURCE_DESC resource{};
  CUDA_TEXTURE_DESC texture{};  // zero for surfaces
  bool surface = false;
  Sampler sampler;
};

using ArrayTable = HandleTable<CudaArray, CUarray, 6, CUDA_ERROR_INVALID_HANDLE>;
// Texture and surface objects share one table; their 64-bit handles are the table's handles.
using TextureTable = HandleTable<TextureObject, void*, 7, CUDA_ERROR_INVALID_VALUE>;

}  // namespace tally::emu
