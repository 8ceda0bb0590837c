// Exports cuTexObjectCreate/Destroy/GetResourceDesc/GetTextureDesc and cuSurfObjectCreate/
// Destroy/GetResourceDesc. The resource is resolved into a Sampler at creation (exec/
// texture_ops.cc reads through it); resource views, mipmaps and sRGB are not supported.
#include "emulator/internal/texture.h"

#include <cuda.h>
#include <fmt/format.h>

#include "emulator/internal/entry.h"

using tally::emu::CheckOut;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::Run;
using tally::emu::TextureObject;

namespace tally::emu {
namespace {

// CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT and _TEXTURE_PITCH_ALIGNMENT.
constexpr uint64_t kTextureAlignment = 512, kPitchAlignment = 32;

absl::Status ResolveResource(Driver& driver, const CUDA_RESOURCE_DESC& resource, Sampler& sampler) {
  if (resource.flags != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "resource flags must be 0");
  auto device_range = [&](CUdeviceptr pointer, CUarray_format format, unsigned channels,
                          uint64_t alignment) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckFormat(format, channels));
    if (pointer % alignment != 0) {
      return CudaError(CUDA_ERROR_INVALID_VALUE,
                       fmt::format("device pointer not aligned to {} bytes", alignment));
    }
    sampler.base = pointer;
    sampler.device_memory = true;
    sampler.format = format;
    sampler.channels = channels;
    sampler.element_bytes = ChannelBytes(format) * channels;
    return absl::OkStatus();
  };
  switch (resource.resType) {
    case CU_RESOURCE_TYPE_ARRAY: {
      TALLY_ASSIGN_OR_RETURN(sampler.array, driver.arrays().Lookup(resource.res.array.hArray));
      const CudaArray& array = *sampler.array;
      sampler.base = reinterpret_cast<uint64_t>(array.storage.data());
      sampler.format = array.desc.Format;
      sampler.channels = array.desc.NumChannels;
      sampler.element_bytes = array.element_bytes;
      sampler.size[0] = array.width;
      sampler.size[1] = array.height;
      sampler.size[2] = array.depth;
      sampler.pitch = array.pitch();
      sampler.slice = array.slice();
      return absl::OkStatus();
    }
    case CU_RESOURCE_TYPE_LINEAR: {
      const auto& linear = resource.res.linear;
      TALLY_RETURN_IF_ERROR(
          device_range(linear.devPtr, linear.format, linear.numChannels, kTextureAlignment));
      sampler.linear_resource = true;
      sampler.size[0] = linear.sizeInBytes / sampler.element_bytes;
      if (sampler.size[0] == 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "empty resource");
      sampler.pitch = sampler.slice = linear.sizeInBytes;
      return driver.memory().CheckRange(linear.devPtr, linear.sizeInBytes);
    }
    case CU_RESOURCE_TYPE_PITCH2D: {
      const auto& pitch = resource.res.pitch2D;
      TALLY_RETURN_IF_ERROR(
          device_range(pitch.devPtr, pitch.format, pitch.numChannels, kPitchAlignment));
      if (pitch.width == 0 || pitch.height == 0 || pitch.pitchInBytes % kPitchAlignment != 0 ||
          pitch.pitchInBytes < pitch.width * sampler.element_bytes) {
        return CudaError(CUDA_ERROR_INVALID_VALUE, "bad pitch2D extent or pitch");
      }
      sampler.size[0] = pitch.width;
      sampler.size[1] = pitch.height;
      sampler.pitch = pitch.pitchInBytes;
      sampler.slice = pitch.pitchInBytes * pitch.height;
      return driver.memory().CheckRange(pitch.devPtr, pitch.pitchInBytes * (pitch.height - 1) +
                                                          pitch.width * sampler.element_bytes);
    }
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      return CudaError(CUDA_ERROR_NOT_SUPPORTED, "mipmapped arrays are not supported");
    default:
      return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown resource type");
  }
}

absl::Status ApplyTextureDesc(const CUDA_TEXTURE_DESC& desc, Sampler& sampler) {
  constexpr unsigned kKnown = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
                              CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION | CU_TRSF_SEAMLESS_CUBEMAP;
  if ((desc.flags & CU_TRSF_SRGB) != 0) {
    return CudaError(CUDA_ERROR_NOT_SUPPORTED, "sRGB textures are not supported");
  }
  if ((desc.flags & ~kKnown) != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown flags");
  for (CUaddress_mode mode : desc.addressMode) {
    if (mode < CU_TR_ADDRESS_MODE_WRAP || mode > CU_TR_ADDRESS_MODE_BORDER) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown address mode");
    }
  }
  if (desc.filterMode != CU_TR_FILTER_MODE_POINT && desc.filterMode != CU_TR_FILTER_MODE_LINEAR) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown filter mode");
  }
  const bool float_format =
      sampler.format == CU_AD_FORMAT_FLOAT || sampler.format == CU_AD_FORMAT_HALF;
  // 32-bit integers are never promoted to floats; 8/16-bit ones are unless read as integers.
  sampler.returns_float = float_format || (ChannelBytes(sampler.format) < 4 &&
                                           (desc.flags & CU_TRSF_READ_AS_INTEGER) == 0);
  sampler.linear_filter = desc.filterMode == CU_TR_FILTER_MODE_LINEAR;
  if (sampler.linear_filter && !sampler.returns_float) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "linear filtering needs floating-point results");
  }
  if (sampler.linear_resource &&
      (sampler.linear_filter || (desc.flags & CU_TRSF_NORMALIZED_COORDINATES) != 0)) {
    return CudaError(CUDA_ERROR_INVALID_VALUE,
                     "linear-memory textures have no filtering or normalized coordinates");
  }
  sampler.normalized_coords = (desc.flags & CU_TRSF_NORMALIZED_COORDINATES) != 0;
  for (int i = 0; i < 3; ++i) sampler.address_mode[i] = desc.addressMode[i];
  for (int i = 0; i < 4; ++i) sampler.border[i] = desc.borderColor[i];
  return absl::OkStatus();
}

absl::Status CreateObject(Driver& driver, unsigned long long* handle,
                          const CUDA_RESOURCE_DESC* resource, const CUDA_TEXTURE_DESC* texture,
                          bool surface) {
  TALLY_RETURN_IF_ERROR(CheckOut(handle));
  if (resource == nullptr || (!surface && texture == nullptr)) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "null resource or texture descriptor");
  }
  TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
  auto object = std::make_shared<TextureObject>();
  object->owner = context->id();
  object->resource = *resource;
  object->surface = surface;
  TALLY_RETURN_IF_ERROR(ResolveResource(driver, *resource, object->sampler));
  if (surface) {
    if (resource->resType != CU_RESOURCE_TYPE_ARRAY ||
        (object->sampler.array->desc.Flags & CUDA_ARRAY3D_SURFACE_LDST) == 0) {
      return CudaError(CUDA_ERROR_INVALID_VALUE,
                       "a surface needs an array created with CUDA_ARRAY3D_SURFACE_LDST");
    }
  } else {
    object->texture = *texture;
    TALLY_RETURN_IF_ERROR(ApplyTextureDesc(*texture, object->sampler));
  }
  *handle = reinterpret_cast<uintptr_t>(driver.textures().Insert(std::move(object)));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<TextureObject>> LookupObject(Driver& driver, uint64_t handle,
                                                            bool surface) {
  TALLY_ASSIGN_OR_RETURN(auto object, driver.textures().Lookup(reinterpret_cast<void*>(handle)));
  if (object->surface != surface) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, surface ? "not a surface" : "not a texture");
  }
  return object;
}

absl::Status DestroyObject(Driver& driver, uint64_t handle, bool surface) {
  TALLY_RETURN_IF_ERROR(LookupObject(driver, handle, surface).status());
  return driver.textures().Remove(reinterpret_cast<void*>(handle)).status();
}

}  // namespace
}  // namespace tally::emu

using tally::emu::CreateObject;
using tally::emu::DestroyObject;
using tally::emu::LookupObject;

extern "C" {

CUresult cuTexObjectCreate(CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
                           const CUDA_TEXTURE_DESC* pTexDesc,
                           const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  return Run([&](Driver& driver) -> absl::Status {
    if (pResViewDesc != nullptr) {
      return CudaError(CUDA_ERROR_NOT_SUPPORTED, "resource views are not supported");
    }
    return CreateObject(driver, pTexObject, pResDesc, pTexDesc, false);
  });
}

CUresult cuTexObjectDestroy(CUtexObject texObject) {
  return Run([&](Driver& driver) { return DestroyObject(driver, texObject, false); });
}

CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUtexObject texObject) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pResDesc));
    TALLY_ASSIGN_OR_RETURN(auto object, LookupObject(driver, texObject, false));
    *pResDesc = object->resource;
    return absl::OkStatus();
  });
}

CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* pTexDesc, CUtexObject texObject) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pTexDesc));
    TALLY_ASSIGN_OR_RETURN(auto object, LookupObject(driver, texObject, false));
    *pTexDesc = object->texture;
    return absl::OkStatus();
  });
}

CUresult cuSurfObjectCreate(CUsurfObject* pSurfObject, const CUDA_RESOURCE_DESC* pResDesc) {
  return Run(
      [&](Driver& driver) { return CreateObject(driver, pSurfObject, pResDesc, nullptr, true); });
}

CUresult cuSurfObjectDestroy(CUsurfObject surfObject) {
  return Run([&](Driver& driver) { return DestroyObject(driver, surfObject, true); });
}

CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUsurfObject surfObject) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pResDesc));
    TALLY_ASSIGN_OR_RETURN(auto object, LookupObject(driver, surfObject, true));
    *pResDesc = object->resource;
    return absl::OkStatus();
  });
}

}  // extern "C"
