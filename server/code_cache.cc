// The cache's files: "<16 hex digits>.tcc" entries and ".tmp-*" files being written.
//
// An entry: magic "TALLYCC1" (8 bytes), key size (u32), reserved (u32), payload size (u64),
// payload checksum (u64, ipc/content_hash.h), the key's text, the payload; little-endian as the
// machine writes it (a cache is never moved between machines of other byte orders).
#include "server/code_cache.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <system_error>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
#include "ipc/content_hash.h"
#include "ipc/syscall.h"
#include "ipc/unique_fd.h"

namespace tally::server {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'T', 'A', 'L', 'L', 'Y', 'C', 'C', '1'};
constexpr std::string_view kEntrySuffix = ".tcc";
constexpr std::string_view kTempPrefix = ".tmp-";
// A temporary file this old belongs to a writer that died (writing one takes milliseconds).
constexpr auto kStaleTemp = std::chrono::hours(1);

struct Header {
  char magic[8];
  uint32_t key_size;
  uint32_t reserved;
  uint64_t payload_size;
  uint64_t checksum;
};
static_assert(sizeof(Header) == 32);

uint64_t Checksum(std::string_view bytes) {
  return ipc::ContentHash(std::as_bytes(std::span(bytes)));
}

bool IsEntry(const fs::path& path) {
  return path.extension() == kEntrySuffix && !path.filename().string().starts_with('.');
}
bool IsTemp(const fs::path& path) { return path.filename().string().starts_with(kTempPrefix); }

// The whole file, or nullopt when it cannot be read (gone: another server evicted it).
std::optional<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return bytes;
}

enum class EntryCheck { kGood, kMissing, kDamaged, kOtherKey };
// Whether `bytes` is a whole entry of `key`, and if so its payload in `payload`.
EntryCheck CheckEntry(std::string_view bytes, std::string_view key, std::string_view* payload) {
  Header header;
  if (bytes.size() < sizeof(header)) return EntryCheck::kDamaged;
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0) return EntryCheck::kDamaged;
  const uint64_t rest = bytes.size() - sizeof(header);
  if (header.key_size > rest || header.payload_size != rest - header.key_size) {
    return EntryCheck::kDamaged;
  }
  const std::string_view stored_key = bytes.substr(sizeof(header), header.key_size);
  *payload = bytes.substr(sizeof(header) + header.key_size);
  if (Checksum(*payload) != header.checksum) return EntryCheck::kDamaged;
  return stored_key == key ? EntryCheck::kGood : EntryCheck::kOtherKey;
}

std::string MakeEntry(std::string_view key, std::string_view payload) {
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.key_size = static_cast<uint32_t>(key.size());
  header.payload_size = payload.size();
  header.checksum = Checksum(payload);
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof(header));
  bytes.append(key);
  bytes.append(payload);
  return bytes;
}

// Writes `bytes` to `fd` and syncs it, so that a rename after it never publishes a file whose
// data a crash could lose (rename is atomic, the data's write-back is not).
absl::Status WriteSynced(int fd, std::string_view bytes) {
  for (size_t done = 0; done < bytes.size();) {
    TALLY_ASSIGN_OR_RETURN(const ssize_t n, ipc::RetryEintr("write", [&] {
                             return ::write(fd, bytes.data() + done, bytes.size() - done);
                           }));
    if (n == 0) return absl::DataLossError("write wrote nothing");
    done += static_cast<size_t>(n);
  }
  return ipc::RetryEintr("fsync", [&] { return ::fsync(fd); }).status();
}

// `bytes` in a new temporary file of `dir` whose name no other writer has (mkostemp: also
// those of other servers, whatever their pids), synced; its path.
absl::StatusOr<fs::path> WriteTemp(const fs::path& dir, std::string_view bytes) {
  std::string path = (dir / absl::StrFormat("%sXXXXXX", kTempPrefix)).string();
  TALLY_ASSIGN_OR_RETURN(const int fd, ipc::RetryEintr("mkostemp(" + path + ")", [&] {
                           return ::mkostemp(path.data(), O_CLOEXEC);
                         }));
  const ipc::UniqueFd file(fd);
  if (absl::Status written = WriteSynced(fd, bytes); !written.ok()) {
    std::error_code ignored;
    fs::remove(path, ignored);
    return written;
  }
  return fs::path(path);
}

struct FileInfo {
  fs::path path;
  uint64_t bytes = 0;
  fs::file_time_type used;
};

// The folder's entries, and temporary files left by dead writers removed on the way.
std::vector<FileInfo> ListEntries(const fs::path& dir) {
  std::vector<FileInfo> entries;
  std::error_code error;
  const auto now = fs::file_time_type::clock::now();
  for (const fs::directory_entry& file : fs::directory_iterator(dir, error)) {
    std::error_code stat_error;
    const fs::file_time_type used = file.last_write_time(stat_error);
    const uint64_t bytes = file.file_size(stat_error);
    if (stat_error) continue;  // removed meanwhile
    if (IsTemp(file.path()) && now - used > kStaleTemp) fs::remove(file.path(), stat_error);
    if (IsEntry(file.path())) entries.push_back({file.path(), bytes, used});
  }
  return entries;
}

}  // namespace

std::string CodeKey::Text() const {
  return absl::StrFormat("ptx=%016x kernel=%s transform=%u options=%s device=%s driver=%d",
                         ptx_hash, kernel, transform_version, options, device, driver_version);
}

absl::StatusOr<std::unique_ptr<CodeCache>> CodeCache::Open(fs::path dir, uint64_t limit_bytes) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "code cache %s: cannot create the folder (%s)", dir.string(), error.message()));
  }
  if (::access(dir.c_str(), R_OK | W_OK | X_OK) != 0) {
    return ipc::SyscallError("access(" + dir.string() + ")", errno);
  }
  std::unique_ptr<CodeCache> cache(new CodeCache(std::move(dir), limit_bytes));
  cache->approx_bytes_ = cache->Usage().bytes;
  cache->Evict();  // a smaller bound than the folder's last user had
  return cache;
}

fs::path CodeCache::EntryPath(const std::string& key_text) const {
  return dir_ / absl::StrFormat("%016x%s", Checksum(key_text), kEntrySuffix);
}

std::optional<std::string> CodeCache::Find(const CodeKey& key) {
  const std::string key_text = key.Text();
  const fs::path path = EntryPath(key_text);
  std::optional<std::string> bytes = ReadFile(path);
  std::string_view payload;
  const EntryCheck check = bytes ? CheckEntry(*bytes, key_text, &payload) : EntryCheck::kMissing;
  if (check == EntryCheck::kGood) {
    ++counters_.hits;
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // now: the most recently used
    return std::string(payload);
  }
  ++counters_.misses;
  if (check == EntryCheck::kDamaged) {
    TALLY_LOG_WARN("code cache: {} is damaged (truncated or corrupt): removed, made again",
                   path.string());
    ++counters_.corrupt;
    std::error_code ignored;
    fs::remove(path, ignored);
  }
  // An entry of another key under the same name is replaced when this key's is stored.
  return std::nullopt;
}

void CodeCache::Store(const CodeKey& key, std::string_view payload) {
  const std::string key_text = key.Text();
  const std::string bytes = MakeEntry(key_text, payload);
  if (bytes.size() > limit_bytes_) return;
  absl::StatusOr<fs::path> temp = WriteTemp(dir_, bytes);
  if (!temp.ok()) {
    TALLY_LOG_WARN("code cache: an entry was not stored: {}", temp.status().ToString());
    return;
  }
  std::error_code error;
  fs::rename(*temp, EntryPath(key_text), error);
  if (error) {
    TALLY_LOG_WARN("code cache: an entry was not stored: rename: {}", error.message());
    fs::remove(*temp, error);
    return;
  }
  ++counters_.stored;
  if (approx_bytes_.fetch_add(bytes.size()) + bytes.size() > limit_bytes_) Evict();
}

void CodeCache::Evict() {
  std::lock_guard lock(evict_mutex_);
  std::vector<FileInfo> entries = ListEntries(dir_);
  uint64_t total = 0;
  for (const FileInfo& entry : entries) total += entry.bytes;
  std::ranges::sort(entries, {}, &FileInfo::used);
  for (const FileInfo& entry : entries) {
    if (total <= limit_bytes_) break;
    std::error_code error;
    // Another server may have removed it first: the bytes are gone either way.
    if (fs::remove(entry.path, error)) ++counters_.evicted;
    total -= entry.bytes;
  }
  approx_bytes_ = total;
}

absl::Status CodeCache::Clear() {
  std::lock_guard lock(evict_mutex_);
  if (!fs::is_directory(dir_)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("code cache %s: the folder is gone", dir_.string()));
  }
  for (const FileInfo& entry : ListEntries(dir_)) {
    std::error_code error;
    fs::remove(entry.path, error);
  }
  approx_bytes_ = 0;
  return absl::OkStatus();
}

CodeCacheUsage CodeCache::Usage() const {
  CodeCacheUsage usage;
  for (const FileInfo& entry : ListEntries(dir_)) {
    ++usage.entries;
    usage.bytes += entry.bytes;
  }
  return usage;
}

}  // namespace tally::server
