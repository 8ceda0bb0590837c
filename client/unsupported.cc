// Every libcudart export the shim does not implement (client/cudart_exports.def, generated from
// the installed libcudart): a weak stub that returns cudaErrorNotSupported and logs the name
// once, so that an application linking against any runtime function starts and gets an error
// instead of an unresolved symbol. The implementations in api/ are strong and replace these.
// No CUDA header here: the stubs cannot repeat each function's prototype, and under the C
// calling convention a function returning an int-sized enum needs none.
#include <atomic>

#include "common/log.h"

namespace {

constexpr int kCudaErrorNotSupported = 801;  // cudaErrorNotSupported, driver_types.h

int Unsupported(const char* name, std::atomic<bool>& logged) noexcept {
  if (!logged.exchange(true)) {
    try {
      TALLY_LOG_WARN("tally: {} is not supported yet; returning cudaErrorNotSupported", name);
    } catch (...) {
      // Logging is best effort; the error code still reaches the application.
    }
  }
  return kCudaErrorNotSupported;
}

}  // namespace

extern "C" {
#define TALLY_CUDART_EXPORT(name)             \
  __attribute__((weak)) int name() noexcept { \
    static std::atomic<bool> logged{false};   \
    return Unsupported(#name, logged);        \
  }
#include "client/cudart_exports.def"
}
