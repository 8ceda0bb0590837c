// A pending link (cuLinkCreate ... cuLinkComplete): PTX inputs checked as they are added, linked
// into one module at completion (ptx_transform/link.h, as `nvcc -rdc=true` units are), loaded
// once as cuModuleLoadData would load it, and given back as the emulator's machine code
// (machine_code.h), which the link state owns until it is destroyed (CUDA Driver API,
// cuLinkComplete: "The cubin is owned by state, so it should be loaded before state is
// destroyed"). That load is kept: the first cuModuleLoadData of the image the state owns, in
// the context it was linked in, takes it instead of parsing the PTX again (as loading a cubin
// compiles nothing on NVIDIA's driver).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/internal/device_memory.h"
#include "emulator/internal/jit_log.h"
#include "emulator/internal/module.h"
#include "ptx_transform/ir.h"

namespace tally::emu {

class LinkState {
 public:
  LinkState(JitErrorLog log, uint32_t arch) : log_(log), arch_(arch) {}

  // Adds PTX text, parsed and checked now (CUDA_ERROR_INVALID_PTX, in the error log too).
  absl::Status AddPtx(std::string_view text, std::string_view name);
  // Refuses an input the emulator cannot link (the error log says why).
  absl::Status Refuse(CUresult code, std::string_view why);
  // The machine code of every input linked: the same image on every call. Loaded once in the
  // context `context_id` first (and unloaded), so that what a load would refuse fails here.
  absl::StatusOr<std::string_view> Complete(DeviceMemory& memory, uint64_t context_id);
  // The module Complete loaded, once, when `image` is the image this state owns and
  // `context_id` the context it was loaded in; null otherwise.
  std::shared_ptr<Module> TakeModule(const void* image, uint64_t context_id);

 private:
  // `status`, its message added to the error log (which accumulates over the link's life).
  absl::Status Fail(absl::Status status);

  const JitErrorLog log_;
  const uint32_t arch_;
  std::mutex mutex_;
  std::string log_text_;
  std::vector<ptx::Module> units_;
  std::string first_text_;  // the only unit's text, loaded as it came
  std::string image_;       // once completed
  std::shared_ptr<Module> module_;  // Complete's load, until a load of image_ takes it
};

}  // namespace tally::emu
