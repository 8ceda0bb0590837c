// HandleTable<T>: one client's objects of one kind (streams, events, modules, functions) under
// the handles that client sees. A handle is a per-kind cookie, a tag of the client and a serial
// number that is never reused, so a stale, forged, other kind's or other client's handle is
// simply absent: INVALID_HANDLE, not a crash. (Each session has its own tables, so another
// client's objects are unreachable anyway; the tag makes a foreign handle an error instead of
// a coincidental hit on an object of one's own.)
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "server/cuda_result.h"

namespace tally::server {

template <typename T>
class HandleTable {
 public:
  // `cookie` tells kinds apart (one per table of a session), `client_tag` clients; `kind` names
  // the kind in errors.
  HandleTable(uint16_t cookie, uint8_t client_tag, const char* kind)
      : prefix_((uint64_t{cookie} << 48) | (uint64_t{client_tag} << 40)), kind_(kind) {}

  uint64_t Insert(T value) {
    const uint64_t handle = prefix_ | next_serial_++;
    entries_.emplace(handle, std::move(value));
    Recount();
    return handle;
  }

  absl::StatusOr<T*> Find(uint64_t handle) {
    auto it = entries_.find(handle);
    if (it == entries_.end()) {
      return ClientError(CUDA_ERROR_INVALID_HANDLE,
                         absl::StrFormat("no %s with handle 0x%x", kind_, handle));
    }
    return &it->second;
  }

  absl::StatusOr<T> Remove(uint64_t handle) {
    auto it = entries_.find(handle);
    if (it == entries_.end()) {
      return ClientError(CUDA_ERROR_INVALID_HANDLE,
                         absl::StrFormat("no %s with handle 0x%x", kind_, handle));
    }
    T value = std::move(it->second);
    entries_.erase(it);
    Recount();
    return value;
  }

  // Removes every entry, handing each to `release` (session cleanup).
  template <typename Release>
  void Clear(Release&& release) {
    for (auto& [handle, value] : entries_) release(value);
    entries_.clear();
    Recount();
  }

  // Removes the entries `pred` holds for.
  template <typename Pred>
  void EraseIf(Pred&& pred) {
    absl::erase_if(entries_, [&](const auto& entry) { return pred(entry.second); });
    Recount();
  }

  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [handle, value] : entries_) fn(value);
  }

  size_t size() const { return entries_.size(); }
  // size() for other threads (tally-ctl status): the table itself is the session thread's.
  size_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  void Recount() { count_.store(entries_.size(), std::memory_order_relaxed); }

  uint64_t prefix_;
  const char* kind_;
  uint64_t next_serial_ = 1;  // 40 bits: 10^12 objects, never exhausted by one client
  absl::flat_hash_map<uint64_t, T> entries_;
  std::atomic<size_t> count_{0};
};

}  // namespace tally::server
