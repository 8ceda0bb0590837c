// Status propagation helpers over absl::Status / absl::StatusOr (Debian's abseil predates
// abseil's own macros), and TALLY_CHECK for broken invariants of our own code.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TALLY_INTERNAL_CONCAT2(a, b) a##b
#define TALLY_INTERNAL_CONCAT(a, b) TALLY_INTERNAL_CONCAT2(a, b)

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define TALLY_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::absl::Status tally_status_ = (expr);         \
    if (!tally_status_.ok()) return tally_status_; \
  } while (0)

// `TALLY_ASSIGN_OR_RETURN(auto x, MakeX());` binds the value of an absl::StatusOr or returns
// its error from the enclosing function.
#define TALLY_ASSIGN_OR_RETURN(lhs, expr) \
  TALLY_INTERNAL_ASSIGN_OR_RETURN(TALLY_INTERNAL_CONCAT(tally_statusor_, __LINE__), lhs, expr)
#define TALLY_INTERNAL_ASSIGN_OR_RETURN(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.ok()) return std::move(tmp).status();        \
  lhs = std::move(tmp).value()

// A broken invariant of Tally itself (never something a client or input file can cause).
#define TALLY_CHECK(cond)                                                                 \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: TALLY_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
