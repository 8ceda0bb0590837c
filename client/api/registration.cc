// The registration ABI nvcc-generated host code calls from its constructors
// (crt/host_runtime.h: __cudaRegisterBinary and __cudaRegisterEntry). Only bookkeeping happens
// here: fatbins are sent to the server when a kernel of theirs first launches.
#include <cuda_runtime_api.h>

#include "client/kernels.h"

using tally::client::Fatbin;
using tally::client::KernelRegistry;

extern "C" {

void** __cudaRegisterFatBinary(void* fatbin_wrapper) noexcept {
  try {
    return reinterpret_cast<void**>(KernelRegistry::Get().AddFatbin(fatbin_wrapper));
  } catch (...) {
    return nullptr;  // its kernels then fail to launch with cudaErrorInvalidDeviceFunction
  }
}

void __cudaRegisterFatBinaryEnd(void**) noexcept {}

// Records stay: `static cudaKernel_t` handles in the application may outlive the module.
void __cudaUnregisterFatBinary(void**) noexcept {}

void __cudaRegisterFunction(void** fatbin_handle, const char* host_function, char*,
                            const char* device_name, int, uint3*, uint3*, dim3*, dim3*,
                            int*) noexcept {
  if (fatbin_handle == nullptr || device_name == nullptr) return;
  try {
    KernelRegistry::Get().AddKernel(reinterpret_cast<Fatbin*>(fatbin_handle), host_function,
                                    device_name);
  } catch (...) {
    // The kernel stays unregistered and fails at launch: constructors must not throw.
  }
}

// __device__ and __constant__ variables: hostVar is the host shadow the application names the
// symbol by (cudaMemcpyToSymbol(symbol, ...)), deviceName its mangled name in the PTX.
void __cudaRegisterVar(void** fatbin_handle, char* host_variable, char*, const char* device_name,
                       int, size_t size, int, int) noexcept {
  if (fatbin_handle == nullptr || device_name == nullptr) return;
  try {
    KernelRegistry::Get().AddVariable(reinterpret_cast<Fatbin*>(fatbin_handle), host_variable,
                                      device_name, size);
  } catch (...) {
    // The variable stays unregistered and its symbol calls fail: constructors must not throw.
  }
}

void __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int, int) noexcept {}

// Managed-variable initialisation (crt/host_runtime.h's __nv_init_managed_rt_with_module):
// nothing to do without managed variables; nonzero means success.
char __cudaInitModule(void**) noexcept { return 1; }

}  // extern "C"
