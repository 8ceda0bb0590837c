// The exception barrier of a unit of work that must not take the process down with it: a server
// session, a waiter's wait, one command of the dispatcher.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <new>
#include <string_view>

#include "absl/status/status.h"

namespace tally {

// Runs `body` (returning absl::Status); an exception escaping it becomes an error Status that
// names `what`: ResourceExhausted for std::bad_alloc, Internal for anything else.
template <typename Body>
absl::Status CatchExceptions(std::string_view what, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(fmt::format("{}: out of memory (std::bad_alloc)", what));
  } catch (const std::exception& e) {
    return absl::InternalError(fmt::format("{}: exception: {}", what, e.what()));
  } catch (...) {
    return absl::InternalError(fmt::format("{}: unknown exception", what));
  }
}

}  // namespace tally
