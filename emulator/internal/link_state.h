// A pending link (cuLinkCreate ... cuLinkComplete): PTX inputs checked as they are added, linked
// into one module at completion (ptx_transform/link.h, as `nvcc -rdc=true` units are), and given
// back as the emulator's machine code (machine_code.h), which the link state owns until it is
// destroyed (CUDA Driver API, cuLinkComplete: "The cubin is owned by state, so it should be
// loaded before state is destroyed"). A link takes no device memory, as NVIDIA's compiles
// without placing anything on the device: the module's variables are placed, and its kernels
// lowered, when the image is loaded (where what the emulator cannot run is refused).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/internal/jit_log.h"
#include "ptx_transform/ir.h"

namespace tally::emu {

class LinkState {
 public:
  LinkState(JitErrorLog log, uint32_t arch) : log_(log), arch_(arch) {}

  // Adds PTX text, parsed and checked now (CUDA_ERROR_INVALID_PTX, in the error log too).
  absl::Status AddPtx(std::string_view text, std::string_view name);
  // Refuses an input the emulator cannot link (the error log says why).
  absl::Status Refuse(CUresult code, std::string_view why);
  // The machine code of every input linked: the same image on every call.
  absl::StatusOr<std::string_view> Complete();

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
};

}  // namespace tally::emu
