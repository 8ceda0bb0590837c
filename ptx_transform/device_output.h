// Device output that reaches each client on a driver that has one printf buffer for every client
// (NVIDIA's, where Tally's clients share one context): calls to `vprintf` (what device printf
// compiles to) go instead to a function added to the module that writes the format string and
// the arguments into a ring of the client's own, and a failed assert's message is written there
// too before the runtime's `__assertfail` runs (which still stops the kernel with CUDA's assert
// error). The server reads the ring at the client's synchronising calls and formats the text on
// the host. Layout and protocol: cuda_abi/device_output_ring.h; formatting:
// cuda_abi/device_printf.h.
//
// The rewrite adds the module variable kDeviceOutputVariable, which the server sets when it gives
// a client the module: until then (or when no ring could be made) printf prints nothing and
// returns -1, as when CUDA's buffer is full.
//
// In a module fenced first (TransformOptions::fence_device_output), fenced code's calls pass the
// fence as one more argument and go to fenced clones of the added functions, which read the
// format, the arguments and the strings only inside the client's ranges (a byte outside reads as
// a string's end, and raises the fence's violation flag). Other calls keep the functions above.
#pragma once

#include "absl/status/statusor.h"
#include "ptx_transform/ir.h"

namespace tally::ptx {

// Whether `module` calls vprintf or __assertfail (declares them).
bool UsesDeviceOutput(const Module& module);

// Rewrites `module` as above; false when it does not use device output (it is unchanged).
// Refused (InvalidArgument, saying why) for a module with 32-bit addresses or one that already
// names what the rewrite adds; the module is then unchanged.
absl::StatusOr<bool> RedirectDeviceOutput(Module& module);

}  // namespace tally::ptx
