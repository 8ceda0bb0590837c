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

// Tenants: the clients of a sharing server, which share one context but must not hurt each
// other. A tenant is any non-zero number the caller chooses (0: none). Launches on streams of
// no tenant (the server's own) reach all memory, as without tenants.
//
// Makes `stream`'s launches the tenant's: their kernels may load, store and run atomics only on
// memory of that tenant or of no tenant (anything else is CUDA_ERROR_ILLEGAL_ADDRESS, as memory
// that does not exist), device-side malloc gives them the tenant's memory, and a fault in them
// (illegal or misaligned address, trap, assert, illegal instruction, stack overflow, ...)
// becomes the tenant's sticky error instead of the context's: from then on every stream of the
// tenant answers it (launches, copies, cuStreamSynchronize, cuStreamQuery; the tenant's queued
// launches are skipped) while the context and other tenants go on. CUDA_ERROR_INVALID_HANDLE
// for an unknown stream.
CUresult tallyEmuStreamSetTenant(CUstream stream, unsigned long long tenant);
typedef CUresult (*PFN_tallyEmuStreamSetTenant)(CUstream stream, unsigned long long tenant);

// Gives the allocation that starts at `base` (cuMemAlloc, cuMemAllocManaged, cuMemHostAlloc's
// device pointer, cuMemHostRegister's) to `tenant` (0: to nobody, as every allocation starts).
// CUDA_ERROR_INVALID_VALUE when no allocation starts there.
CUresult tallyEmuMemSetTenant(CUdeviceptr base, unsigned long long tenant);
typedef CUresult (*PFN_tallyEmuMemSetTenant)(CUdeviceptr base, unsigned long long tenant);

// Gives the module's .global and .const variables to `tenant`. CUDA_ERROR_INVALID_HANDLE for an
// unknown module.
CUresult tallyEmuModuleSetTenant(CUmodule module, unsigned long long tenant);
typedef CUresult (*PFN_tallyEmuModuleSetTenant)(CUmodule module, unsigned long long tenant);

// The tenant's sticky error: CUDA_SUCCESS while its work has not faulted.
CUresult tallyEmuTenantGetError(unsigned long long tenant);
typedef CUresult (*PFN_tallyEmuTenantGetError)(unsigned long long tenant);

// Text the tenant's kernels printed (device printf: `*stream` 1, stdout; a failed assert's
// message: 2, stderr), oldest first: copies up to `capacity` bytes of it into `buffer`, sets
// `*size` to how many (0 when nothing is pending) and forgets them. Kernels of no tenant print
// to this process's own stdout and stderr. Up to 1 MiB per tenant is kept (CUDA's printf FIFO
// default); what a tenant prints beyond that before it is taken is dropped.
CUresult tallyEmuTenantTakeOutput(unsigned long long tenant, int* stream, char* buffer,
                                  size_t capacity, size_t* size);
typedef CUresult (*PFN_tallyEmuTenantTakeOutput)(unsigned long long tenant, int* stream,
                                                 char* buffer, size_t capacity, size_t* size);

#ifdef __cplusplus
}
#endif
