// What the library stand-ins (libraries/) call around each entry point, so that tally-ctl status
// can count their calls per library: the shim exports the two C functions under the symbol
// version TALLY_PRIVATE (exports.map). The first kernel launch a call makes carries its library
// to the server (client/library_calls.h); a call that launches nothing counts nothing.
#pragma once

#include "ipc/library_calls.h"

extern "C" {
// Enters a call of `library` (an ipc::Library) on the calling thread. Calls nest: only the
// outermost one counts (an entry point that calls another is one call). A value no library has
// counts nothing.
void tally_library_call_begin(int library) noexcept;
// Leaves the innermost call entered; leaving the outermost forgets a call that launched nothing.
void tally_library_call_end() noexcept;
}

namespace tally::client {

// A library entry point's extent on the calling thread: begun at construction, ended however
// the entry point returns.
class LibraryCallScope {
 public:
  explicit LibraryCallScope(ipc::Library library) noexcept {
    tally_library_call_begin(static_cast<int>(library));
  }
  ~LibraryCallScope() { tally_library_call_end(); }
  LibraryCallScope(const LibraryCallScope&) = delete;
  LibraryCallScope& operator=(const LibraryCallScope&) = delete;
};

}  // namespace tally::client
