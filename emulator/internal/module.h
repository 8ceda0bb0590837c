// A loaded module: its kernels in executable form and its .global/.const variables, which
// live in device memory owned by the module (freed on unload).
#pragma once

#include <cuda.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "emulator/exec/call_graph.h"
#include "emulator/exec/lower.h"
#include "emulator/exec/program.h"
#include "emulator/internal/device_memory.h"

namespace tally::emu {

class Module;

// `ptx_text` parsed, for sm_`arch`: CUDA_ERROR_INVALID_PTX (the diagnostics) when it does not
// parse or targets a newer GPU, as ptxas refuses it.
absl::StatusOr<ptx::Module> ParseForDevice(std::string_view ptx_text, uint32_t arch);

// What a CUmodule names: the module and its kernels' CUfunction handles (cuModuleGetFunction
// answers the same handle for the same name, as CUDA does).
struct ModuleEntry {
  std::shared_ptr<Module> module;
  absl::flat_hash_map<std::string, CUfunction> kernels;
};

// What a CUfunction names: one kernel of a live module, with its settable attributes.
struct Kernel {
  std::shared_ptr<const Module> module;
  const exec::Function* function = nullptr;
  std::atomic<int> max_dynamic_shared{0};
  std::atomic<int> shared_carveout{-1};
  // CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: clusters of up to 16 CTAs (else 8).
  std::atomic<bool> non_portable_cluster{false};
};

class Module {
 public:
  // `image` is PTX text, a fatbin (its PTX for `arch` is used) or the emulator's machine code
  // (machine_code.h); cubins are refused.
  static absl::StatusOr<std::shared_ptr<Module>> Load(const void* image, DeviceMemory& memory,
                                                      uint64_t context_id, uint32_t arch);
  // The module of PTX already parsed (ParseForDevice): its variables placed, its kernels lowered.
  static absl::StatusOr<std::shared_ptr<Module>> FromParsed(const ptx::Module& parsed,
                                                            DeviceMemory& memory,
                                                            uint64_t context_id);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::vector<exec::Function>& functions() const { return functions_; }
  const exec::ModuleSymbols& globals() const { return globals_; }
  uint64_t context_id() const { return context_id_; }
  uint32_t ptx_version() const { return ptx_version_; }
  // Gives the module's .global/.const variables to `tenant` (cuda_abi/driver_extensions.h).
  absl::Status SetTenant(uint64_t tenant) const;

 private:
  Module(DeviceMemory& memory, uint64_t context_id);
  absl::Status PlaceGlobals(const ptx::Module& module, const exec::CallGraph& calls);

  DeviceMemory& memory_;
  const uint64_t context_id_;
  const uint64_t owner_;  // allocation owner id of the module's variables
  uint64_t variables_ = 0;  // the one allocation that holds them (0: none)
  uint32_t ptx_version_ = 0;
  std::vector<exec::Function> functions_;
  exec::ModuleSymbols globals_;
};

}  // namespace tally::emu
