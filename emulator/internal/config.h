// The emulated device's identity and limits, read once from TALLY_EMU_* variables at cuInit
// (defaults and meaning documented in emulator/README.md).
#pragma once

#include <cstdint>
#include <string>

namespace tally::emu {

struct DeviceConfig {
  std::string name = "Tally Emulated GPU";
  int sm_count = 8;                       // TALLY_EMU_SM_COUNT
  int host_threads = 0;                   // TALLY_EMU_HOST_THREADS (0: one per core)
  uint64_t memory_bytes = 4096ull << 20;  // TALLY_EMU_MEMORY_MB
  int cc_major = 8;                       // TALLY_EMU_CC, e.g. 80 -> 8.0
  int cc_minor = 0;
  // TALLY_EMU_DEVICE_COUNT: ordinals cuDeviceGetCount reports, each a view of the one device
  // with a UUID of its own, so that servers can stand for the GPUs of a node.
  int device_count = 1;

  static DeviceConfig FromEnvironment();
};

}  // namespace tally::emu
