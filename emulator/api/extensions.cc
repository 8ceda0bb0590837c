// Exports Tally's extensions of the driver API (emulator/tally_emu_ext.h).
#include "emulator/exec/sm_pool.h"
#include "emulator/tally_emu_ext.h"

extern "C" unsigned long long tallyEmuLaneInstructions(void) {
  return tally::emu::exec::SmPool::LaneInstructions();
}
