// PTX loaded as the device's machine code, kept in the code cache (code_cache.h): compiled once
// through the driver's linker (cuLinkCreate, cuLinkAddData, cuLinkComplete) and stored, so that
// a later process, or a restarted server, loads the machine code (cuModuleLoadData) instead of
// having the driver compile the same PTX again. Keyed by the PTX's hash, the device and the
// driver version. Where the link fails, the driver has no linker, or there is no code cache, the
// PTX is loaded as it is (the driver compiles it at the load, as before): a load never fails
// because the cache could not be filled. Every module with PTX loads so: a kernel's original
// forms (the module as the program gave it), its transformed forms, and modules transformed whole.
//
// With a filler (a background worker), a load that misses the cache loads the PTX at once and
// fills the cache afterwards on the filler's thread: the link (the driver's compilation of the
// whole PTX again) is off the load's critical path. The image is the same: the link takes the
// PTX alone, in a link state of its own (CUDA Driver API, cuLinkCreate), and its output is
// loadable by cuModuleLoadData in the same context (cuLinkComplete).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "server/backend/backend.h"
#include "server/code_cache.h"
#include "server/forms_worker.h"

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

class MachineCode : public std::enable_shared_from_this<MachineCode> {
 public:
  // Without `cache` (--code-cache none) every load is a PTX load. `device` and `driver_version`
  // are the keys' device identity. With `filler` the cache is filled on it after a miss (its
  // jobs hold this object weakly: give it a filler only when a shared_ptr owns it); without,
  // at the load.
  MachineCode(const DriverApi& api, std::shared_ptr<CodeCache> cache, std::string device,
              int driver_version, std::shared_ptr<FormsWorker> filler = nullptr);

  // Loads `ptx` into `module`: the machine code from the cache, else (without a filler) linked,
  // loaded and stored, else the PTX itself (whose outcome, with the driver's log, is the
  // answer); with a filler, PTX that loaded is linked and stored there afterwards.
  LoadOutcome Load(CUmodule* module, const std::string& ptx) const;
  const MachineCodeCounters& counters() const { return counters_; }
  // Links queued or running on the filler now.
  size_t filling() const;
  // The code cache's key of `ptx`'s machine code.
  CodeKey Key(const std::string& ptx) const;

 private:
  // `ptx` compiled for the device through the driver's linker: a copy of the machine code; the
  // error log on failure.
  absl::StatusOr<std::string> Link(const std::string& ptx) const;
  // The machine code of `ptx` linked and stored under `key`; `module`: where it is loaded first
  // (null: not loaded). False, counted and logged, when the linker refused it or it did not load.
  bool LinkAndStore(const CodeKey& key, const std::string& ptx, CUmodule* module) const;
  // Queues LinkAndStore of `ptx` on the filler, unless one of the same key is queued already.
  void FillLater(const CodeKey& key, const std::string& ptx) const;
  // Whether the linker refused the PTX of `key` before (it then loads as PTX, unlinked).
  bool Unlinkable(const CodeKey& key) const;

  const DriverApi& api_;
  std::shared_ptr<CodeCache> cache_;
  std::string device_;
  int driver_version_ = 0;
  mutable MachineCodeCounters counters_;
  std::shared_ptr<FormsWorker> filler_;
  mutable std::mutex mutex_;
  // The key texts of the fills queued or running (a module loaded by several clients at once is
  // linked once), and of PTX the linker refused (for the server's life: linked once).
  mutable absl::flat_hash_set<std::string> filling_;
  mutable absl::flat_hash_set<std::string> unlinkable_;
};

}  // namespace tally::server
