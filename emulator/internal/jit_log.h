// The error log among a call's JIT options (CUDA Driver API, CUjit_option): CU_JIT_ERROR_LOG_BUFFER
// receives why a module load or a link failed; CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES gives the
// buffer's size and gets back how much of it was filled.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string_view>

namespace tally::emu {

class JitErrorLog {
 public:
  JitErrorLog() = default;
  // The log named by `options`; none (writes go nowhere) without a buffer or a size.
  JitErrorLog(unsigned num_options, const CUjit_option* options, void** values);
  // `message`, cut to the buffer and NUL-terminated; the bytes written before the NUL go back
  // through the size option's value.
  void Write(std::string_view message) const;

 private:
  char* buffer_ = nullptr;
  size_t size_ = 0;
  void** filled_ = nullptr;  // the size option's value, in the caller's array
};

}  // namespace tally::emu
