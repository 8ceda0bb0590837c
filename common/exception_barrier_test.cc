// CatchExceptions turns what a unit of work throws into a Status instead of ending the process.
#include "common/exception_barrier.h"

#include <catch2/catch.hpp>
#include <new>
#include <stdexcept>

namespace tally {
namespace {

TEST_CASE("CatchExceptions passes a body's own status through") {
  CHECK(CatchExceptions("work", [] { return absl::OkStatus(); }).ok());
  const absl::Status failed = CatchExceptions("work", [] { return absl::NotFoundError("x"); });
  CHECK(absl::IsNotFound(failed));
}

TEST_CASE("CatchExceptions reports a failed allocation as ResourceExhausted") {
  // Thrown directly: a real allocation failure would abort under AddressSanitizer instead.
  const absl::Status status =
      CatchExceptions("client 3", []() -> absl::Status { throw std::bad_alloc(); });
  CHECK(absl::IsResourceExhausted(status));
  CHECK(status.message() == "client 3: out of memory (std::bad_alloc)");
}

TEST_CASE("CatchExceptions names other exceptions") {
  const absl::Status status = CatchExceptions(
      "session", []() -> absl::Status { throw std::runtime_error("table corrupted"); });
  CHECK(absl::IsInternal(status));
  CHECK(status.message() == "session: exception: table corrupted");
  const absl::Status unknown =
      CatchExceptions("session", []() -> absl::Status { throw 42; });
  CHECK(unknown.message() == "session: unknown exception");
}

}  // namespace
}  // namespace tally
