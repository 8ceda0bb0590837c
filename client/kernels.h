// What nvcc's registration code tells the shim: fatbins, the host stubs of their kernels and
// the host shadows of their variables.
// A kernel is resolved on its first launch: its fatbin is sent to the server once, and the
// server answers with the kernel's handle and parameter layout, used to pack every launch.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/managed_variables.h"
#include "ipc/cuda_calls.h"

namespace tally::client {

struct Fatbin {
  const void* wrapper = nullptr;
  std::mutex mutex;
  uint64_t module = 0;  // 0 until sent to the server
  // Why the fatbin cannot be used (the server's device cannot load the code, or its managed
  // variables could not be placed): every launch of its kernels fails with this, without
  // sending the fatbin again.
  absl::Status refused;
  std::vector<ManagedVariable> managed;  // placed when the module is loaded
};

// A kernel: registered by nvcc's code (resolved on first use), or a CUfunction of a driver API
// module (resolved when found). The record outlives its module, so that a stale CUfunction is
// an error, not a dangling pointer.
struct Kernel {
  Fatbin* fatbin = nullptr;             // null for a driver API module's function
  const void* host_function = nullptr;  // a registered kernel's host stub
  std::string name;                     // mangled
  std::mutex mutex;                     // held while a registered kernel is resolved
  uint64_t function = 0;                // 0 until resolved
  uint32_t param_buffer_size = 0;
  std::vector<ipc::ParamSlot> params;
  // What launches are checked against (api/launch.cc), as the server reported them; the dynamic
  // shared memory limit follows the cudaFuncSetAttribute / cuFuncSetAttribute calls that
  // succeeded (api/function.cc), which a launch reads without a lock.
  int32_t max_threads_per_block = 0;
  int32_t static_shared_bytes = 0;
  mutable std::atomic<int32_t> max_dynamic_shared_bytes{0};
  // A registered kernel's handle and layout above are written once, then this is released:
  // launches check it without the lock (KernelRegistry::Resolve).
  std::atomic<bool> resolved{false};
  std::atomic<bool> unloaded{false};  // its driver API module was unloaded
};

// A __device__ or __constant__ variable, known by the address of its host shadow.
struct Variable {
  Fatbin* fatbin = nullptr;
  std::string name;  // mangled
  size_t size = 0;
  std::mutex mutex;
  uint64_t address = 0;  // 0 until resolved
};

// Resolves `kernel` (by its name) in the server's module `module`: handle and parameter layout.
absl::Status FetchFunction(uint64_t module, Kernel& kernel);
// A module variable's address and size; its range becomes device memory of this process.
absl::StatusOr<ipc::GetGlobalResponse> FetchGlobal(uint64_t module, const std::string& name);

// `kernel`, a resolved function of a driver API module, as the CUfunction handed to the
// application (api/module.cc); DriverFunction accepts it from then on. The record must live as
// long as the process.
CUfunction HandOutDriverFunction(const Kernel& kernel);
// The Kernel behind a CUfunction the shim handed out; CUDA_ERROR_INVALID_HANDLE for anything
// else, including a function of an unloaded module. The handle is looked up, never dereferenced
// before it is found (a forged one may point anywhere), under a lock as a runtime launch's
// KernelRegistry::Find; such kernels are resolved before they are handed out.
absl::StatusOr<const Kernel*> DriverFunction(CUfunction function);

class KernelRegistry {
 public:
  static KernelRegistry& Get();

  // The handle __cudaRegisterFatBinary returns: the Fatbin itself, alive for the process.
  Fatbin* AddFatbin(const void* wrapper);
  void AddKernel(Fatbin* fatbin, const void* host_function, const char* device_name);

  void AddVariable(Fatbin* fatbin, const void* host_variable, const char* device_name, size_t size);
  void AddManagedVariable(Fatbin* fatbin, void** host_pointer, const char* device_name,
                          size_t size);

  // Sends the fatbin to the server once and places its managed variables (what CUDA's runtime
  // does at a module's first use, and __cudaInitModule asks for before the program's first
  // access to a managed variable).
  absl::Status Upload(Fatbin& fatbin);
  // After a device reset: the managed variables of every loaded fatbin are placed anew.
  absl::Status PlaceManagedVariablesAgain();

  // The variable whose host shadow is `host_variable`, resolved with the server (its range is
  // then device memory for DeviceRanges). cudaErrorInvalidSymbol for an unregistered one.
  absl::StatusOr<Variable*> ResolveVariable(const void* host_variable);
  // The kernel whose host stub is `host_function`, not yet resolved (its fatbin may not be
  // loadable: a launch reports that). cudaErrorInvalidDeviceFunction for a function never
  // registered.
  absl::StatusOr<Kernel*> Find(const void* host_function);
  // Find, then resolved with the server.
  absl::StatusOr<Kernel*> Resolve(const void* host_function);
  // Resolves a kernel found earlier (the cudaKernel_t of __cudaGetKernel is a Kernel*).
  absl::Status Resolve(Kernel& kernel);

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Fatbin>> fatbins_;
  absl::flat_hash_map<const void*, std::unique_ptr<Kernel>> kernels_;
  absl::flat_hash_map<const void*, std::unique_ptr<Variable>> variables_;
};

}  // namespace tally::client
