// The code cache on a real folder: hits and misses, least-recently-used eviction at the bound,
// damaged and foreign entries removed and made again, and writers of one entry at once.
#include "server/code_cache.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ipc/testing/temp_dir.h"

namespace tally::server {
namespace {
namespace fs = std::filesystem;

// A fresh folder, removed with the test.
struct TempDir {
  TempDir() { REQUIRE_FALSE(folder.path().empty()); }
  ipc::testing::TempDir folder;
  fs::path path{folder.path()};
};

CodeKey Key(std::string kernel) {
  return {.ptx_hash = 0x1234,
          .kernel = std::move(kernel),
          .transform_version = 1,
          .options = "slice,ptb",
          .device = "emulated sm_80",
          .driver_version = 12040};
}

std::unique_ptr<CodeCache> Open(const fs::path& dir, uint64_t limit = 1 << 20) {
  auto cache = CodeCache::Open(dir, limit);
  REQUIRE(cache.ok());
  return *std::move(cache);
}

// The one entry file of the folder.
fs::path OnlyEntry(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& file : fs::directory_iterator(dir)) files.push_back(file.path());
  REQUIRE(files.size() == 1);
  return files[0];
}

// File times are as coarse as the kernel's clock tick: entries written a tick apart.
void NextTick() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

TEST_CASE("an entry is found by its whole key, and survives the cache object") {
  TempDir dir;
  {
    auto cache = Open(dir.path);
    CHECK_FALSE(cache->Find(Key("k")).has_value());
    cache->Store(Key("k"), "payload");
    CHECK(cache->Find(Key("k")) == "payload");
    CodeKey other_driver = Key("k");
    other_driver.driver_version = 12050;
    CHECK_FALSE(cache->Find(other_driver).has_value());
    CHECK(cache->counters().hits == 1);
    CHECK(cache->counters().misses == 2);
    CHECK(cache->counters().stored == 1);
  }
  auto reopened = Open(dir.path);  // a restarted server
  CHECK(reopened->Find(Key("k")) == "payload");
  CHECK(reopened->Usage().entries == 1);
}

TEST_CASE("the least recently used entries go when the bound is passed; a hit counts as a use") {
  TempDir dir;
  const std::string payload(1000, 'x');
  // Room for two entries (payload and header), not three.
  auto cache = Open(dir.path, 2600);
  cache->Store(Key("a"), payload);
  NextTick();
  cache->Store(Key("b"), payload);
  NextTick();
  REQUIRE(cache->Find(Key("a")).has_value());  // now b is the least recently used
  NextTick();
  cache->Store(Key("c"), payload);
  CHECK(cache->counters().evicted == 1);
  CHECK(cache->Find(Key("a")).has_value());
  CHECK_FALSE(cache->Find(Key("b")).has_value());
  CHECK(cache->Find(Key("c")).has_value());
  CHECK(cache->Usage().entries == 2);
  CHECK(cache->Usage().bytes <= 2600);
  // A payload larger than the bound is not stored at all.
  cache->Store(Key("huge"), std::string(5000, 'y'));
  CHECK(cache->Usage().entries == 2);
  // A smaller bound at the next open evicts down to it.
  cache.reset();
  CHECK(Open(dir.path, 1500)->Usage().entries == 1);
}

TEST_CASE("a corrupt or truncated entry is removed, never returned, and made again") {
  TempDir dir;
  auto cache = Open(dir.path);
  const std::string payload(4000, 'p');
  SECTION("a flipped byte in the payload") {
    cache->Store(Key("k"), payload);
    std::fstream file(OnlyEntry(dir.path), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-10, std::ios::end);
    file.put('q');
  }
  SECTION("cut short") {
    cache->Store(Key("k"), payload);
    fs::resize_file(OnlyEntry(dir.path), 2000);
  }
  SECTION("not an entry at all") {
    cache->Store(Key("k"), payload);
    std::ofstream(OnlyEntry(dir.path), std::ios::trunc) << "garbage";
  }
  CHECK_FALSE(cache->Find(Key("k")).has_value());
  CHECK(cache->counters().corrupt == 1);
  CHECK(cache->Usage().entries == 0);
  cache->Store(Key("k"), payload);
  CHECK(cache->Find(Key("k")) == payload);
}

TEST_CASE("an entry of another key under the same file name is not returned, then replaced") {
  TempDir dir;
  auto cache = Open(dir.path);
  cache->Store(Key("other"), "theirs");
  const fs::path theirs = OnlyEntry(dir.path);
  cache->Store(Key("mine"), "mine");
  fs::path mine;
  for (const auto& file : fs::directory_iterator(dir.path)) {
    if (file.path() != theirs) mine = file.path();
  }
  fs::rename(theirs, mine);  // as a hash collision would leave it
  CHECK_FALSE(cache->Find(Key("mine")).has_value());
  CHECK(cache->counters().corrupt == 0);
  cache->Store(Key("mine"), "mine");
  CHECK(cache->Find(Key("mine")) == "mine");
}

TEST_CASE("two servers writing one entry at once leave it whole") {
  TempDir dir;
  auto first = Open(dir.path);
  auto second = Open(dir.path);
  const std::string a(20000, 'a');
  const std::string b(30000, 'b');
  std::atomic<bool> torn{false};
  auto write = [&](CodeCache& cache, const std::string& payload) {
    for (int i = 0; i < 50; ++i) {
      cache.Store(Key("k"), payload);
      std::optional<std::string> found = cache.Find(Key("k"));
      if (found && *found != a && *found != b) torn = true;
    }
  };
  std::thread one(write, std::ref(*first), std::cref(a));
  std::thread two(write, std::ref(*second), std::cref(b));
  one.join();
  two.join();
  CHECK_FALSE(torn);
  CHECK(first->counters().corrupt + second->counters().corrupt == 0);
  CHECK(first->counters().stored + second->counters().stored == 100);  // no write lost
  CHECK(first->Usage().entries == 1);                                  // no temporary files left
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}

TEST_CASE("clear removes every entry; a folder that cannot be made is an error") {
  TempDir dir;
  auto cache = Open(dir.path);
  cache->Store(Key("a"), "1");
  cache->Store(Key("b"), "2");
  REQUIRE(cache->Clear().ok());
  CHECK(cache->Usage().entries == 0);
  CHECK_FALSE(cache->Find(Key("a")).has_value());
  std::ofstream(dir.path / "file") << "x";
  auto blocked = CodeCache::Open(dir.path / "file" / "cache", 1 << 20);
  REQUIRE_FALSE(blocked.ok());
  CHECK(blocked.status().message().find("cannot create") != absl::string_view::npos);
}

}  // namespace
}  // namespace tally::server
