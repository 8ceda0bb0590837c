// PTX loaded as the device's machine code, kept in the code cache (code_cache.h): compiled once
// through the driver's linker (cuLinkCreate, cuLinkAddData, cuLinkComplete) and stored, so that
// a later process, or a restarted server, loads the machine code (cuModuleLoadData) instead of
// having the driver compile the same PTX again. Keyed by the PTX's hash, the device and the
// driver version. Where the link fails, the driver has no linker, or there is no code cache, the
// PTX is loaded as it is (the driver compiles it at the load, as before): a load never fails
// because the cache could not be filled.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"
#include "server/code_cache.h"

namespace tally::server {

// cuModuleLoadDataEx with the JIT error log (CUDA Driver API, CUjit_option
// CU_JIT_ERROR_LOG_BUFFER): NVIDIA's PTX compiler and the emulator both write there why a module
// did not load, the instruction or construct they could not handle. The log, or "" on success.
struct LoadOutcome {
  CUresult result = CUDA_SUCCESS;
  std::string log;
};
LoadOutcome LoadImage(const DriverApi& api, CUmodule* module, const void* image);

// What the machine-code loads did since the server started.
struct MachineCodeCounters {
  std::atomic<uint64_t> linked{0};       // PTX compiled with the linker and stored
  std::atomic<uint64_t> found{0};        // machine code from the cache, loaded
  std::atomic<uint64_t> refused{0};      // machine code from the cache the driver refused:
                                         // linked again and replaced
  std::atomic<uint64_t> link_failed{0};  // the linker refused the PTX: loaded as PTX
};

class MachineCode {
 public:
  // Without `cache` (--code-cache none) every load is a PTX load. `device` and `driver_version`
  // are the keys' device identity.
  MachineCode(const DriverApi& api, std::shared_ptr<CodeCache> cache, std::string device,
              int driver_version);

  // Loads `ptx` into `module`: the machine code from the cache, else linked, loaded and stored,
  // else the PTX itself (whose outcome, with the driver's log, is the answer).
  LoadOutcome Load(CUmodule* module, const std::string& ptx) const;
  const MachineCodeCounters& counters() const { return counters_; }
  // The code cache's key of `ptx`'s machine code.
  CodeKey Key(const std::string& ptx) const;

 private:
  // `ptx` compiled for the device through the driver's linker and loaded into `module`: a copy
  // of the machine code; the error log (or the load's) on failure, `module` then untouched.
  absl::StatusOr<std::string> LinkAndLoad(CUmodule* module, const std::string& ptx) const;

  const DriverApi& api_;
  std::shared_ptr<CodeCache> cache_;
  std::string device_;
  int driver_version_ = 0;
  mutable MachineCodeCounters counters_;
};

}  // namespace tally::server
