// Device code shared by all clients: each distinct fatbin is loaded once (keyed by its content
// hash, confirmed byte for byte) and unloaded when the last client holding it goes away.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ptx_transform/kernel_signature.h"
#include "server/backend/backend.h"

namespace tally::server {

struct Kernel {
  CUfunction function = nullptr;
  ptx::KernelSignature signature;
};

class SharedModule {
 public:
  SharedModule(const DriverApi& api, CUmodule module, std::vector<std::byte> image,
               absl::flat_hash_map<std::string, Kernel> kernels)
      : api_(api), module_(module), image_(std::move(image)), kernels_(std::move(kernels)) {}
  SharedModule(const SharedModule&) = delete;
  SharedModule& operator=(const SharedModule&) = delete;
  ~SharedModule();

  // CUDA_ERROR_NOT_FOUND for a name the module has no kernel of.
  absl::StatusOr<const Kernel*> FindKernel(const std::string& mangled_name) const;
  std::span<const std::byte> image() const { return image_; }

 private:
  const DriverApi& api_;
  CUmodule module_;
  std::vector<std::byte> image_;
  absl::flat_hash_map<std::string, Kernel> kernels_;
};

class ModuleRegistry {
 public:
  explicit ModuleRegistry(const Backend& backend);

  // The module of this fatbin, loading it on first sight. CUDA_ERROR_INVALID_IMAGE for bytes
  // that are not a fatbin, CUDA_ERROR_NO_BINARY_FOR_GPU when no PTX in it suits the device.
  // The caller's thread must have the backend's context current.
  absl::StatusOr<std::shared_ptr<SharedModule>> Register(std::span<const std::byte> image);

  size_t loaded_count();

 private:
  absl::StatusOr<std::shared_ptr<SharedModule>> Load(std::span<const std::byte> image);

  const Backend& backend_;
  uint32_t device_arch_ = 0;  // 80 for sm_80
  std::mutex mutex_;
  absl::flat_hash_map<uint64_t, std::weak_ptr<SharedModule>> modules_;  // by content hash
};

}  // namespace tally::server
