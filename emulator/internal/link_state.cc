// A pending link (link_state.h).
#include "emulator/internal/link_state.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "emulator/internal/cuda_status.h"
#include "emulator/internal/machine_code.h"
#include "emulator/internal/module.h"
#include "ptx_transform/link.h"
#include "ptx_transform/printer.h"

namespace tally::emu {

absl::Status LinkState::Fail(absl::Status status) {
  absl::StrAppend(&log_text_, log_text_.empty() ? "" : "\n", status.message());
  log_.Write(log_text_);
  return status;
}

absl::Status LinkState::Refuse(CUresult code, std::string_view why) {
  std::lock_guard lock(mutex_);
  return Fail(CudaError(code, why));
}

absl::Status LinkState::AddPtx(std::string_view text, std::string_view name) {
  std::lock_guard lock(mutex_);
  if (!image_.empty()) return Fail(CudaError(CUDA_ERROR_INVALID_VALUE, "the link is complete"));
  absl::StatusOr<ptx::Module> parsed = ParseForDevice(text, arch_);
  if (!parsed.ok()) {
    return Fail(CudaError(ToCuResult(parsed.status()),
                          std::string(name) + ": " + std::string(parsed.status().message())));
  }
  if (units_.empty()) first_text_ = text;
  units_.push_back(*std::move(parsed));
  return absl::OkStatus();
}

absl::StatusOr<std::string_view> LinkState::Complete() {
  std::lock_guard lock(mutex_);
  if (!image_.empty()) return std::string_view(image_);
  if (units_.empty()) return Fail(CudaError(CUDA_ERROR_INVALID_VALUE, "nothing was added"));
  std::string text;
  if (units_.size() == 1) {
    text = std::move(first_text_);
  } else {
    absl::StatusOr<ptx::LinkedModule> linked = ptx::LinkModules(std::move(units_));
    units_.clear();
    if (!linked.ok()) {
      return Fail(CudaError(CUDA_ERROR_INVALID_IMAGE, std::string(linked.status().message())));
    }
    units_.push_back(std::move(linked->module));
    text = ptx::PrintModule(units_.front());
  }
  units_.clear();
  image_ = MakeMachineCode(text, arch_);
  return std::string_view(image_);
}

}  // namespace tally::emu
