// Exports Tally's extensions of the driver API (emulator/tally_emu_ext.h).
#include "emulator/exec/resident_unit.h"
#include "emulator/internal/entry.h"
#include "emulator/tally_emu_ext.h"

using tally::emu::Driver;
using tally::emu::Run;

extern "C" unsigned long long tallyEmuLaneInstructions(void) {
  return tally::emu::exec::LaneInstructions();
}

extern "C" CUresult tallyEmuStreamCancel(CUstream stream) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<tally::emu::Stream> found,
                           driver.streams().Lookup(stream));
    found->Cancel();
    return absl::OkStatus();
  });
}
