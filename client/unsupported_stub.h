// A weak stub for an export Tally does not implement: it logs its name once and
// returns the library's NOT_SUPPORTED code, so that an application linking against any function
// of the library starts and gets an error instead of an unresolved symbol. Implementations are
// strong and replace the stubs. Used for the runtime and the driver (client/unsupported.cc) and
// for the library stand-ins (libraries/*/unsupported.cc), on stderr as every log line. No prototype
// is needed: a stub ignores its arguments, and under the C calling convention a function returning
// an int-sized enum needs no more of its prototype than that (the generator lists only such
// functions as stubs).
#pragma once

#include <atomic>

#include "common/log.h"

namespace tally::client {

inline int Unsupported(const char* name, std::atomic<bool>& logged, int code,
                       const char* code_name) noexcept {
  if (!logged.exchange(true)) {
    try {
      TALLY_LOG_WARN("tally: {} is not supported yet; returning {} ({})", name, code, code_name);
    } catch (...) {
      // Logging is best effort; the code still reaches the application.
    }
  }
  return code;
}

}  // namespace tally::client

#define TALLY_UNSUPPORTED_STUB(name, code, code_name)                    \
  __attribute__((weak)) int name() noexcept {                            \
    static std::atomic<bool> logged{false};                              \
    return ::tally::client::Unsupported(#name, logged, code, code_name); \
  }
