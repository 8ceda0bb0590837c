// The registration ABI nvcc-generated host code calls from its constructors
// (crt/host_runtime.h: __cudaRegisterBinary and __cudaRegisterEntry). Only bookkeeping happens
// here: fatbins are sent to the server when a kernel of theirs first launches, or when the
// program first reaches one of their managed variables (__cudaInitModule).
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

// __managed__ variables: hostVarPtrAddress is the pointer through which nvcc's host code reads
// the variable; the shim sets it when it places the variable (client/managed_variables.h).
void __cudaRegisterManagedVar(void** fatbin_handle, void** host_pointer, char*,
                              const char* device_name, int, size_t size, int, int) noexcept {
  if (fatbin_handle == nullptr || host_pointer == nullptr || device_name == nullptr) return;
  try {
    KernelRegistry::Get().AddManagedVariable(reinterpret_cast<Fatbin*>(fatbin_handle),
                                             host_pointer, device_name, size);
  } catch (...) {
    // The variable stays unplaced (its host pointer null): constructors must not throw.
  }
}

// Before the program's first access to a managed variable (crt/host_runtime.h's
// __nv_init_managed_rt_with_module): the module is loaded and its managed variables placed.
// Nonzero means success.
char __cudaInitModule(void** fatbin_handle) noexcept {
  if (fatbin_handle == nullptr) return 0;
  try {
    return KernelRegistry::Get().Upload(*reinterpret_cast<Fatbin*>(fatbin_handle)).ok() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

}  // extern "C"
