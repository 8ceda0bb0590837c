// Tally's extensions of the driver API, exported by libtally_emu.so beside the cu* entry points
// (resolve them with dlsym; NVIDIA's libcuda.so.1 has none of them).
#pragma once

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

// Lane-instructions the emulator executed in this process so far: for every PTX instruction a
// warp issued, the number of its lanes that issued it (predicated-off lanes included, as in a
// GPU profiler's thread_inst_executed). Blocks add their count when they finish, so a kernel's
// count is exact once the launch has completed (for instance after cuStreamSynchronize).
unsigned long long tallyEmuLaneInstructions(void);
typedef unsigned long long (*PFN_tallyEmuLaneInstructions)(void);

// Cancels `stream` for good, for a server whose client died: the launch running on it stops
// (its blocks not yet started never run; running blocks stop at their next time slice of 4096
// instructions per warp) and later launches on it are skipped, none of them an error. Its
// other work (copies, event records, host functions) still runs, so that everything waiting for
// the stream is released in stream order. CUDA_ERROR_INVALID_HANDLE for an unknown stream.
CUresult tallyEmuStreamCancel(CUstream stream);
typedef CUresult (*PFN_tallyEmuStreamCancel)(CUstream stream);

#ifdef __cplusplus
}
#endif
