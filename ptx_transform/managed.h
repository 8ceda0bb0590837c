// `__managed__` variables (`.global .attribute(.managed)`): on CUDA one address for the host and
// the device. Under Tally the device memory is the server's, which the program cannot read, so
// each such variable is reached through a pointer instead: a new module variable
// (ManagedPointerName, cuda_abi/managed_pointer.h), initialised to the variable's own address, that
// the client points at memory it shares with the device. Every instruction that names the
// variable (`mov.u64 %rd1, v;`, `ld.global.u32 %r1, [v+4];`) then takes the pointer's value,
// loaded just before it. The variable itself stays: it holds the initial value the client copies.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ptx_transform/ir.h"

namespace tally::ptx {

// Rewrites `module`; returns the names of the managed variables it redirected (none: the module
// is unchanged). Refused (InvalidArgument, with the line) where a managed variable is named in a
// way the rewrite does not follow: in a constant expression (`v+4` outside an address,
// `generic(v)`, another variable's initialiser) or in a 32-bit module. The module is then
// unchanged.
absl::StatusOr<std::vector<std::string>> RedirectManagedVariables(Module& module);

}  // namespace tally::ptx
