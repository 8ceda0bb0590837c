// An event: the most recent point recorded into a stream, and when the device reached it.
#pragma once

#include <cstdint>
#include <mutex>

#include "emulator/internal/stream.h"

namespace tally::emu {

struct Event {
  Event(uint64_t context_id, unsigned flags) : context_id(context_id), flags(flags) {}

  const uint64_t context_id;
  const unsigned flags;  // CU_EVENT_*
  std::mutex mu;
  StreamPoint point;        // the latest record; no stream until the first record
  uint64_t generation = 0;  // of the latest record; older record work must not stamp a time
  int64_t time_ns = -1;     // steady-clock time at which the latest record completed
};

}  // namespace tally::emu
