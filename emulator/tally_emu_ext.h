// Tally's extensions of the driver API, exported by libtally_emu.so beside the cu* entry points
// (resolve them with dlsym; NVIDIA's libcuda.so.1 has none of them).
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// Lane-instructions the emulator executed in this process so far: for every PTX instruction a
// warp issued, the number of its lanes that issued it (predicated-off lanes included, as in a
// GPU profiler's thread_inst_executed). Blocks add their count when they finish, so a kernel's
// count is exact once the launch has completed (for instance after cuStreamSynchronize).
unsigned long long tallyEmuLaneInstructions(void);
typedef unsigned long long (*PFN_tallyEmuLaneInstructions)(void);

#ifdef __cplusplus
}
#endif
