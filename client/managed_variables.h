// `__managed__` variables: one address for the program and its kernels. The server's module
// reaches each through a pointer variable (ptx_transform/managed.h); once the module is loaded,
// the shim allocates managed memory of this process for the variable (host-region memory that
// kernels access in place, like cudaMallocManaged's), copies the variable's initial value there,
// points the module's pointer at it, and hands the address to the program through the host
// pointer that nvcc's code reads (crt/host_runtime.h, __cudaRegisterManagedVar).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace tally::client {

struct ManagedVariable {
  void** host_pointer = nullptr;  // the program's: nvcc's code reads the variable through it
  std::string name;               // mangled, as in the PTX
  size_t size = 0;
};

// Places every variable of `variables` in `module` (the server's handle of their fatbin's module):
// after the module's load, and again after a device reset (which frees every host block and
// gives the module's variables their initial values again). All or none: when one cannot be
// placed, those placed before it are freed and their host pointers are null again.
absl::Status PlaceManagedVariables(uint64_t module, const std::vector<ManagedVariable>& variables);

// Nulls the variables' host pointers: their memory is gone (a device reset freed it), so that a
// program touching one after a failed re-placement faults at once instead of using freed memory.
void ForgetManagedVariables(const std::vector<ManagedVariable>& variables);

}  // namespace tally::client
