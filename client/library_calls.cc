// Library calls on each thread: how deep in entry points of the library stand-ins it is, and the
// library of the outermost call while that call has launched no kernel.
#include "client/library_calls.h"

#include <cstdint>
#include <optional>

#include "client/library_call_scope.h"

namespace tally::client {
namespace {

thread_local int call_depth = 0;
thread_local ipc::Library pending_call = ipc::Library::kNone;

// What tally_library_call_begin was given, kNone for a value no library has.
ipc::Library KnownLibrary(int value) {
  if (value < 0) return ipc::Library::kNone;
  return ipc::LibraryFromWire(static_cast<uint32_t>(value)).value_or(ipc::Library::kNone);
}

}  // namespace

ipc::Library TakeLibraryCall() noexcept {
  const ipc::Library library = pending_call;
  pending_call = ipc::Library::kNone;
  return library;
}

}  // namespace tally::client

extern "C" {

void tally_library_call_begin(int library) noexcept {
  using namespace tally::client;
  if (call_depth++ == 0) pending_call = KnownLibrary(library);
}

void tally_library_call_end() noexcept {
  using namespace tally::client;
  if (call_depth == 0) return;  // an end without its begin changes nothing
  if (--call_depth == 0) pending_call = tally::ipc::Library::kNone;
}

}  // extern "C"
