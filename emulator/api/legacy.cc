// Exports the plain legacy names that NVIDIA's libcuda still exports next to their _v2
// successors with the same signature (binaries built against old headers bind to these).
// Legacy forms whose signature differs (32-bit CUdeviceptr_v1 sizes and pointers) are not
// exported: our 64-bit device addresses cannot be expressed in them.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

extern "C" {

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }
CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}
CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v2(pctx, flags, dev);
}
CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }
CUresult cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }
CUresult cuCtxPopCurrent(CUcontext* pctx) { return cuCtxPopCurrent_v2(pctx); }
CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return cuMemHostRegister_v2(p, bytesize, Flags);
}
CUresult cuStreamDestroy(CUstream hStream) { return cuStreamDestroy_v2(hStream); }
CUresult cuEventDestroy(CUevent hEvent) { return cuEventDestroy_v2(hEvent); }
CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

}  // extern "C"
