// Exports Tally's extensions of the driver API (emulator/tally_emu_ext.h).
#include "emulator/exec/resident_unit.h"
#include "emulator/tally_emu_ext.h"

extern "C" unsigned long long tallyEmuLaneInstructions(void) {
  return tally::emu::exec::LaneInstructions();
}
