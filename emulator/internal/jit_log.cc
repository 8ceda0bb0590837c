// The JIT error log (jit_log.h).
#include "emulator/internal/jit_log.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace tally::emu {

JitErrorLog::JitErrorLog(unsigned num_options, const CUjit_option* options, void** values) {
  if (options == nullptr || values == nullptr) return;
  for (unsigned i = 0; i < num_options; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) buffer_ = static_cast<char*>(values[i]);
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
      size_ = reinterpret_cast<uintptr_t>(values[i]);
      filled_ = &values[i];
    }
  }
}

void JitErrorLog::Write(std::string_view message) const {
  if (buffer_ == nullptr || size_ == 0) return;
  const size_t n = std::min(message.size(), size_ - 1);
  std::memcpy(buffer_, message.data(), n);
  buffer_[n] = '\0';
  *filled_ = reinterpret_cast<void*>(uintptr_t{n});
}

}  // namespace tally::emu
