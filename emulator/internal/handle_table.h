// Registry of live objects behind opaque CUDA handles. A handle is a tagged serial number, never
// a pointer, so a stale, foreign or forged handle is simply absent (INVALID_HANDLE, not a crash)
// and a destroyed object's handle is never reused.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "emulator/internal/cuda_status.h"

namespace tally::emu {

// `Handle` is the opaque pointer type (CUstream, CUevent, ...); `kTag` keeps the handle spaces
// of different object kinds disjoint; `kMissing` is the CUresult for an unknown handle.
template <typename T, typename Handle, uint8_t kTag, CUresult kMissing>
class HandleTable {
 public:
  Handle Insert(std::shared_ptr<T> object) {
    std::lock_guard lock(mu_);
    uint64_t id = (uint64_t{kTag} << 56) | ++last_serial_;
    objects_.emplace(id, std::move(object));
    return reinterpret_cast<Handle>(static_cast<uintptr_t>(id));
  }

  absl::StatusOr<std::shared_ptr<T>> Lookup(Handle handle) const {
    std::lock_guard lock(mu_);
    auto it = objects_.find(Id(handle));
    if (it == objects_.end()) return CudaError(kMissing, "unknown or destroyed handle");
    return it->second;
  }

  absl::StatusOr<std::shared_ptr<T>> Remove(Handle handle) {
    std::lock_guard lock(mu_);
    auto it = objects_.find(Id(handle));
    if (it == objects_.end()) return CudaError(kMissing, "unknown or destroyed handle");
    std::shared_ptr<T> object = std::move(it->second);
    objects_.erase(it);
    return object;
  }

  // Some live object for which `match(object)` holds, or null.
  template <typename Predicate>
  std::shared_ptr<T> FindIf(Predicate match) const {
    std::lock_guard lock(mu_);
    for (const auto& [id, object] : objects_) {
      if (match(*object)) return object;
    }
    return nullptr;
  }

  // Every live object (to act on outside the table's lock).
  std::vector<std::shared_ptr<T>> All() const {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<T>> all;
    all.reserve(objects_.size());
    for (const auto& [id, object] : objects_) all.push_back(object);
    return all;
  }

  // Removes every object for which `owned(object)` holds (a context's resources at teardown).
  template <typename Predicate>
  std::vector<std::shared_ptr<T>> RemoveIf(Predicate owned) {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<T>> removed;
    for (auto it = objects_.begin(); it != objects_.end();) {
      if (owned(*it->second)) {
        removed.push_back(std::move(it->second));
        objects_.erase(it++);
      } else {
        ++it;
      }
    }
    return removed;
  }

 private:
  static uint64_t Id(Handle handle) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  }

  mutable std::mutex mu_;
  uint64_t last_serial_ = 0;
  absl::flat_hash_map<uint64_t, std::shared_ptr<T>> objects_;
};

}  // namespace tally::emu
