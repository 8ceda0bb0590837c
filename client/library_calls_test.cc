// Library calls as the stand-ins mark them: only the outermost call of a thread counts, once, at
// its first launch; a call that launches nothing, an unknown library and an unmatched end count
// nothing.
#include "client/library_calls.h"

#include <catch2/catch.hpp>
#include <thread>

#include "client/library_call_scope.h"

namespace tally::client {
namespace {

using ipc::Library;

TEST_CASE("the first launch of a call takes its library, later launches none") {
  const LibraryCallScope call(Library::kCublas);
  CHECK(TakeLibraryCall() == Library::kCublas);
  CHECK(TakeLibraryCall() == Library::kNone);
}

TEST_CASE("outside calls, launches begin none") { CHECK(TakeLibraryCall() == Library::kNone); }

TEST_CASE("a call inside another is part of it") {
  const LibraryCallScope outer(Library::kCudnn);
  {
    const LibraryCallScope inner(Library::kCublasLt);
    CHECK(TakeLibraryCall() == Library::kCudnn);
  }
  CHECK(TakeLibraryCall() == Library::kNone);
}

TEST_CASE("a call that launched nothing is forgotten when it ends") {
  { const LibraryCallScope call(Library::kCublas); }
  CHECK(TakeLibraryCall() == Library::kNone);
  {
    const LibraryCallScope outer(Library::kCudnn);
    { const LibraryCallScope inner(Library::kCublas); }
    CHECK(TakeLibraryCall() == Library::kCudnn);  // the outer call is still on
  }
}

TEST_CASE("an unknown library counts nothing, and an end without its begin changes nothing") {
  tally_library_call_begin(-1);
  CHECK(TakeLibraryCall() == Library::kNone);
  tally_library_call_end();
  tally_library_call_begin(static_cast<int>(ipc::kLibraryCount) + 1);
  CHECK(TakeLibraryCall() == Library::kNone);
  tally_library_call_end();
  tally_library_call_end();  // unmatched
  const LibraryCallScope call(Library::kCublasLt);
  CHECK(TakeLibraryCall() == Library::kCublasLt);
}

TEST_CASE("each thread has its own calls") {
  const LibraryCallScope call(Library::kCublas);
  Library other = Library::kCudnn;
  std::thread([&] { other = TakeLibraryCall(); }).join();
  CHECK(other == Library::kNone);
  CHECK(TakeLibraryCall() == Library::kCublas);
}

}  // namespace
}  // namespace tally::client
