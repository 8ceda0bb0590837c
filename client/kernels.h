// What nvcc's registration code tells the shim: fatbins and the host stubs of their kernels.
// A kernel is resolved on its first launch: its fatbin is sent to the server once, and the
// server answers with the kernel's handle and parameter layout, used to pack every launch.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ipc/cuda_calls.h"

namespace tally::client {

struct Fatbin {
  const void* wrapper = nullptr;
  std::mutex mutex;
  uint64_t module = 0;  // 0 until sent to the server
};

struct Kernel {
  Fatbin* fatbin = nullptr;
  std::string name;  // mangled
  std::mutex mutex;
  uint64_t function = 0;  // 0 until resolved
  uint32_t param_buffer_size = 0;
  std::vector<ipc::ParamSlot> params;
};

class KernelRegistry {
 public:
  static KernelRegistry& Get();

  // The handle __cudaRegisterFatBinary returns: the Fatbin itself, alive for the process.
  Fatbin* AddFatbin(const void* wrapper);
  void AddKernel(Fatbin* fatbin, const void* host_function, const char* device_name);

  // The kernel whose host stub is `host_function`, resolved with the server.
  // cudaErrorInvalidDeviceFunction for a function never registered.
  absl::StatusOr<Kernel*> Resolve(const void* host_function);
  // Resolves a kernel found earlier (the cudaKernel_t of __cudaGetKernel is a Kernel*).
  absl::Status Resolve(Kernel& kernel);

 private:
  absl::Status Upload(Fatbin& fatbin);

  std::mutex mutex_;
  std::vector<std::unique_ptr<Fatbin>> fatbins_;
  absl::flat_hash_map<const void*, std::unique_ptr<Kernel>> kernels_;
};

}  // namespace tally::client
