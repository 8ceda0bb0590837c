// Every device attribute of the installed cuda.h (the generated list cuda_abi/device_attributes.def)
// answered through the shim, by the runtime and the driver API alike, and cudaGetDeviceProperties
// agreeing with the attributes; the emulated device answers as the A100 it stands for where the
// issue found zeros (GPU overlap, memory pools, persisting L2), and Tally's own truths (no
// pageable memory access from the device, registered memory at another device address).
#include <cuda.h>

#include <cstring>

#include "check.h"

int failures = 0;

void Fail(const char* what, const char* name, int value) {
  std::fprintf(stderr, "%s: CU_DEVICE_ATTRIBUTE_%s (%d)\n", what, name, value);
  ++failures;
}

// The runtime's and the driver's answers to attribute `value`, which must agree.
int Answer(const char* name, int value) {
  int runtime = -12345, driver = -54321;
  const cudaError_t error = cudaDeviceGetAttribute(&runtime, static_cast<cudaDeviceAttr>(value), 0);
  if (error != cudaSuccess) {
    Fail(cudaGetErrorName(error), name, value);
    cudaGetLastError();
  }
  const CUresult result = cuDeviceGetAttribute(&driver, static_cast<CUdevice_attribute>(value), 0);
  if (result != CUDA_SUCCESS) Fail("cuDeviceGetAttribute failed", name, value);
  if (runtime != driver) Fail("the runtime and the driver disagree", name, value);
  return runtime;
}

int Attribute(cudaDeviceAttr attribute) {
  int value = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&value, attribute, 0));
  return value;
}

int main() {
  EXPECT(cuInit(0) == CUDA_SUCCESS);
  int answered = 0;
#define TALLY_CU_DEVICE_ATTRIBUTE(name, value) \
  Answer(#name, value);                        \
  ++answered;
#include "cuda_abi/device_attributes.def"
  EXPECT(answered > 140);
  EXPECT(failures == 0);

  // Not attributes: 0 and values past cuda.h's last.
  int value = 0;
  EXPECT(cudaDeviceGetAttribute(&value, static_cast<cudaDeviceAttr>(0), 0) ==
         cudaErrorInvalidValue);
  EXPECT(cudaDeviceGetAttribute(&value, static_cast<cudaDeviceAttr>(CU_DEVICE_ATTRIBUTE_MAX), 0) ==
         cudaErrorInvalidValue);
  EXPECT(cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(100000), 0) ==
         CUDA_ERROR_INVALID_VALUE);
  cudaGetLastError();

  // What the emulated A100 answers where a zero would be wrong.
  EXPECT(Attribute(cudaDevAttrGpuOverlap) == 1);
  EXPECT(Attribute(cudaDevAttrMemoryPoolsSupported) == 1);
  EXPECT(Attribute(cudaDevAttrConcurrentKernels) == 1);
  EXPECT(Attribute(cudaDevAttrHostRegisterSupported) == 1);
  const int l2 = Attribute(cudaDevAttrL2CacheSize);
  const int persisting = Attribute(cudaDevAttrMaxPersistingL2CacheSize);
  EXPECT(persisting > 0 && persisting < l2);
  EXPECT(Attribute(cudaDevAttrMaxAccessPolicyWindowSize) > 0);
  EXPECT(Attribute(cudaDevAttrMaxTexture2DWidth) == 131072);
  EXPECT(Attribute(cudaDevAttrReservedSharedMemoryPerBlock) == 1024);
  EXPECT(Attribute(cudaDevAttrMaxBlocksPerMultiprocessor) == 32);
  // Under Tally the device runs in the server: it cannot read the application's pageable
  // memory, and registered memory has a device pointer of its own.
  EXPECT(Attribute(cudaDevAttrPageableMemoryAccess) == 0);
  EXPECT(Attribute(cudaDevAttrPageableMemoryAccessUsesHostPageTables) == 0);
  EXPECT(Attribute(cudaDevAttrCanUseHostPointerForRegisteredMem) == 0);

  // cudaGetDeviceProperties says what the attributes say.
  cudaDeviceProp prop;
  std::memset(&prop, 0x5a, sizeof(prop));
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  EXPECT(prop.warpSize == Attribute(cudaDevAttrWarpSize));
  EXPECT(prop.maxThreadsPerBlock == Attribute(cudaDevAttrMaxThreadsPerBlock));
  EXPECT(prop.maxThreadsDim[2] == Attribute(cudaDevAttrMaxBlockDimZ));
  EXPECT(prop.maxGridSize[0] == Attribute(cudaDevAttrMaxGridDimX));
  EXPECT(prop.sharedMemPerBlock ==
         static_cast<size_t>(Attribute(cudaDevAttrMaxSharedMemoryPerBlock)));
  EXPECT(prop.sharedMemPerBlockOptin ==
         static_cast<size_t>(Attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin)));
  EXPECT(prop.multiProcessorCount == Attribute(cudaDevAttrMultiProcessorCount));
  EXPECT(prop.major == Attribute(cudaDevAttrComputeCapabilityMajor));
  EXPECT(prop.minor == Attribute(cudaDevAttrComputeCapabilityMinor));
  EXPECT(prop.l2CacheSize == l2);
  EXPECT(prop.persistingL2CacheMaxSize == persisting);
  EXPECT(prop.memoryPoolsSupported == 1);
  EXPECT(prop.asyncEngineCount == Attribute(cudaDevAttrAsyncEngineCount));
  EXPECT(prop.maxTexture2D[1] == Attribute(cudaDevAttrMaxTexture2DHeight));
  EXPECT(prop.maxTexture3D[2] == Attribute(cudaDevAttrMaxTexture3DDepth));
  EXPECT(prop.maxTexture2DLinear[2] == Attribute(cudaDevAttrMaxTexture2DLinearPitch));
  EXPECT(prop.maxSurface2D[0] == Attribute(cudaDevAttrMaxSurface2DWidth));
  EXPECT(prop.surfaceAlignment == static_cast<size_t>(Attribute(cudaDevAttrSurfaceAlignment)));
  EXPECT(prop.texturePitchAlignment ==
         static_cast<size_t>(Attribute(cudaDevAttrTexturePitchAlignment)));
  EXPECT(prop.reservedSharedMemPerBlock == 1024);
  EXPECT(prop.pageableMemoryAccess == 0);
  EXPECT(prop.canUseHostPointerForRegisteredMem == 0);
  EXPECT(prop.hostNativeAtomicSupported == Attribute(cudaDevAttrHostNativeAtomicSupported));
  EXPECT(prop.deviceNumaId == Attribute(cudaDevAttrNumaId));
  EXPECT(prop.clusterLaunch == Attribute(cudaDevAttrClusterLaunch));
  EXPECT(prop.luidDeviceNodeMask == 0);
  size_t total = 0;
  EXPECT(cuDeviceTotalMem(&total, 0) == CUDA_SUCCESS);
  EXPECT(prop.totalGlobalMem == total);
  std::printf("device_attributes: all %d attributes of cuda.h answered, properties agree\n",
              answered);
  return 0;
}
