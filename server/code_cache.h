// A content-addressed cache of device code on disk, shared by the servers of a machine and kept
// across their restarts (ARCHITECTURE.md, "Configuration"): a kernel's transformed forms, so that
// a second process, or a restarted server, does not transform them again.
//
// One file per entry, named by a hash of its key. Each starts with a header (magic, key, size and
// checksum of the payload): an entry whose header or payload does not match (truncated, corrupt,
// another key under the same name) is removed and counted, never returned. Entries are written to
// a temporary file, synced and renamed into place, so that several servers sharing the folder
// see an entry whole or not at all. The folder is kept under a size bound by removing the least
// recently used entries (a hit touches its file).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tally::server {

// What an entry is made from: every input that changes its payload.
struct CodeKey {
  uint64_t ptx_hash = 0;           // of the input PTX text
  std::string kernel;              // the kernel made alone from it
  uint32_t transform_version = 0;  // ptx::FormsVersion
  std::string options;             // the transformation's options, as text
  std::string device;              // the device's name and compute capability
  int driver_version = 0;          // cuDriverGetVersion
  // The key as stored in the entry's header and hashed for its file name.
  std::string Text() const;
};

// What the cache did since it was opened (tally-ctl status, "code cache").
struct CodeCacheCounters {
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};
  std::atomic<uint64_t> stored{0};
  std::atomic<uint64_t> evicted{0};
  std::atomic<uint64_t> corrupt{0};  // entries found damaged or of another key, and removed
};

// The folder's entries now.
struct CodeCacheUsage {
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

class CodeCache {
 public:
  // The cache in `dir` (created if missing), at most `limit_bytes` of entries.
  static absl::StatusOr<std::unique_ptr<CodeCache>> Open(std::filesystem::path dir,
                                                         uint64_t limit_bytes);

  // The payload stored under `key`; nullopt when there is none (or it was damaged: removed).
  std::optional<std::string> Find(const CodeKey& key);
  // Stores `payload` under `key`, replacing what was there, then evicts down to the bound. A
  // payload larger than the bound is not stored. Failures are logged: the cache is an
  // optimisation, a server without it still works.
  void Store(const CodeKey& key, std::string_view payload);
  // Removes every entry (temporary files of writers still writing stay).
  absl::Status Clear();
  CodeCacheUsage Usage() const;

  const std::filesystem::path& dir() const { return dir_; }
  uint64_t limit_bytes() const { return limit_bytes_; }
  const CodeCacheCounters& counters() const { return counters_; }

 private:
  CodeCache(std::filesystem::path dir, uint64_t limit_bytes)
      : dir_(std::move(dir)), limit_bytes_(limit_bytes) {}
  std::filesystem::path EntryPath(const std::string& key_text) const;
  // Removes the least recently used entries until the folder holds at most limit_bytes_.
  void Evict();

  std::filesystem::path dir_;
  uint64_t limit_bytes_;
  CodeCacheCounters counters_;
  // This process's view of the folder's size: other servers' entries are counted at the next
  // eviction's scan.
  std::atomic<uint64_t> approx_bytes_{0};
  std::mutex evict_mutex_;
};

}  // namespace tally::server
