// Every libcudart and libcuda export the shim does not implement (client/cudart_exports.def and
// client/driver_exports.def, generated from the installed libcudart and libcuda stub): a weak
// stub that returns cudaErrorNotSupported (CUDA_ERROR_NOT_SUPPORTED has the same value) and logs
// the name once, so that an application linking against any runtime or driver function starts
// and gets an error instead of an unresolved symbol. The implementations in api/ are strong and
// replace these.
// Stubs exist only for the functions whose declarations in the toolkit's headers return an
// error code (cudaError_t, CUresult: TALLY_LIBRARY_EXPORT); the generator lists the others
// (structs, pointers, strings: TALLY_LIBRARY_VALUE_EXPORT) apart, and the shim implements
// every one of them (abi_test.cc checks). So no CUDA header is needed here: a stub ignores its
// arguments, and under the C calling convention a function returning an int-sized enum needs
// no more of its prototype than that.
#include <atomic>

#include "common/log.h"

namespace {

constexpr int kCudaErrorNotSupported = 801;  // cudaErrorNotSupported, CUDA_ERROR_NOT_SUPPORTED

int Unsupported(const char* name, std::atomic<bool>& logged) noexcept {
  if (!logged.exchange(true)) {
    try {
      TALLY_LOG_WARN("tally: {} is not supported yet; returning error 801 (not supported)", name);
    } catch (...) {
      // Logging is best effort; the error code still reaches the application.
    }
  }
  return kCudaErrorNotSupported;
}

}  // namespace

#define TALLY_UNSUPPORTED_STUB(name)          \
  __attribute__((weak)) int name() noexcept { \
    static std::atomic<bool> logged{false};   \
    return Unsupported(#name, logged);        \
  }

extern "C" {
#define TALLY_LIBRARY_EXPORT TALLY_UNSUPPORTED_STUB
#include "client/cudart_exports.def"
#define TALLY_LIBRARY_EXPORT TALLY_UNSUPPORTED_STUB
#include "client/driver_exports.def"
}
