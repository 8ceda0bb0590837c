// tally-server --isolation: how clients are kept out of each other's memory on a device where
// they share one address space (NVIDIA's driver: every client's memory lives in the server's one
// context). The modes are ipc::Isolation's (and ipc::Unfenceable's), which tally-ctl status
// reports; docs/isolation.md is the user's side of it.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "ipc/control.h"

namespace tally::server {

using Isolation = ipc::Isolation;
using ipc::IsolationName;
using Unfenceable = ipc::Unfenceable;
using ipc::UnfenceableName;

absl::StatusOr<Isolation> ParseIsolation(std::string_view value);
absl::StatusOr<Unfenceable> ParseUnfenceable(std::string_view value);

}  // namespace tally::server
