// Parses the TALLY_EMU_* environment variables; a malformed value is reported and ignored.
#include "emulator/internal/config.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "common/log.h"

namespace tally::emu {
namespace {

// Reads `variable` into *out when it is an integer in [min, max]; warns and returns false when
// it is set to anything else.
bool ReadInt(const char* variable, int64_t min, int64_t max, int64_t* out) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return false;
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < min || value > max) {
    TALLY_LOG_WARN("emu: ignoring {}={} (expected an integer in [{}, {}])", variable, text, min,
                   max);
    return false;
  }
  *out = value;
  return true;
}

}  // namespace

DeviceConfig DeviceConfig::FromEnvironment() {
  DeviceConfig config;
  int64_t value = 0;
  if (ReadInt("TALLY_EMU_SM_COUNT", 1, 1024, &value)) config.sm_count = static_cast<int>(value);
  if (ReadInt("TALLY_EMU_HOST_THREADS", 1, 1024, &value)) {
    config.host_threads = static_cast<int>(value);
  }
  if (ReadInt("TALLY_EMU_DEVICE_COUNT", 1, 64, &value))
    config.device_count = static_cast<int>(value);
  if (ReadInt("TALLY_EMU_MEMORY_MB", 1, 1 << 20, &value)) config.memory_bytes = value << 20;
  // Compute capabilities the PTX ISA knows targets for (sm_50 .. sm_120).
  if (ReadInt("TALLY_EMU_CC", 50, 129, &value)) {
    config.cc_major = static_cast<int>(value / 10);
    config.cc_minor = static_cast<int>(value % 10);
  }
  if (const char* name = std::getenv("TALLY_EMU_NAME"); name != nullptr && *name != '\0') {
    config.name = name;
  }
  return config;
}

}  // namespace tally::emu
