// Names and descriptions of the CUresult codes the installed cuda.h defines (cuGetErrorName,
// cuGetErrorString), for every implementation of the driver API.
#pragma once

#include <cuda.h>

namespace tally {

// nullptr for a value that is no CUresult of cuda.h.
const char* CuResultName(CUresult code);
const char* CuResultDescription(CUresult code);

}  // namespace tally
