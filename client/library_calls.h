// The shim's side of counting library calls (library_call_scope.h): which call the calling
// thread's next kernel launch begins.
#pragma once

#include "ipc/library_calls.h"

namespace tally::client {

// The library whose call the calling thread is in and has launched no kernel for yet; kNone
// outside library calls and after their first launch (taking it is that launch).
ipc::Library TakeLibraryCall() noexcept;

}  // namespace tally::client
