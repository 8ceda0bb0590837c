// Per-thread last error and failure logging.
#include "client/entry.h"

#include <atomic>
#include <string>

#include "client/channel.h"
#include "client/status.h"
#include "common/log.h"

namespace tally::client {
namespace {

thread_local cudaError_t last_error = cudaSuccess;
std::atomic<bool> transport_failure_logged{false};

}  // namespace

cudaError_t RecordError(cudaError_t error) {
  if (error != cudaSuccess) last_error = error;
  return error;
}

cudaError_t LastError(bool reset) {
  const cudaError_t error = last_error;
  if (reset) last_error = cudaSuccess;
  return error;
}

void LogFailure(const char* api, const absl::Status& status) {
  if (ToCudaError(status) == cudaErrorDevicesUnavailable &&
      !transport_failure_logged.exchange(true)) {
    TALLY_LOG_ERROR("tally: {} failed: {}", api, std::string(status.message()));
    return;
  }
  TALLY_LOG_DEBUG("tally: {} failed: {}", api, std::string(status.message()));
}

bool DriverInitialized() { return Channel::Connected(); }

}  // namespace tally::client
