// The profile cache: a round trip through the file (same choices, no probing again), files that
// are ignored with one log line and then replaced (corrupt, truncated, wrong types, negative
// times, another format version, another device or transformation version), and atomic writes.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/log.h"
#include "profiler/profiler.h"
#include "profiler/testing/kernels.h"

namespace tally::profiler {
namespace {

namespace fs = std::filesystem;
using namespace testing;
using nlohmann::json;

const DeviceIdentity kDevice = {"NVIDIA H100 80GB HBM3", 132, 90, 13000, 1};
const KernelInfo kGemm = Kernel(0xfedcba9876543210, 100);  // 6 candidates
const KernelInfo kScan = Kernel(2, 1000);                  // 9 candidates
const KernelInfo kPlain = Kernel(3, 64, false, false);     // no transformed form

// A fresh directory under the system's temporary directory, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tally-profiler-test-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  // Every file under the directory, relative to it.
  std::vector<std::string> Files() const {
    std::vector<std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(path_)) {
      if (entry.is_regular_file()) files.push_back(fs::relative(entry.path(), path_).string());
    }
    return files;
  }

 private:
  fs::path path_;
};

// Sends what the process writes to stderr (where common/log.h writes) to a file while alive.
class CapturedStderr {
 public:
  CapturedStderr() : file_(std::tmpfile()), saved_(::dup(STDERR_FILENO)) {
    REQUIRE(file_ != nullptr);
    REQUIRE(saved_ >= 0);
    SetLogLevel(LogLevel::kInfo);
    REQUIRE(::dup2(::fileno(file_), STDERR_FILENO) >= 0);
  }
  ~CapturedStderr() {
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    std::fclose(file_);
  }
  std::vector<std::string> Lines() const {
    std::string text(static_cast<size_t>(::lseek(::fileno(file_), 0, SEEK_END)), '\0');
    REQUIRE(::pread(::fileno(file_), text.data(), text.size(), 0) ==
            static_cast<ssize_t>(text.size()));
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    return lines;
  }

 private:
  std::FILE* file_;
  int saved_;
};

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::unique_ptr<Profiler> Open(const fs::path& path, const DeviceIdentity& device = kDevice) {
  return Profiler::Create({std::chrono::microseconds(100), path.string(), device});
}

// Profiles kGemm completely (PTB with 16 workers chosen), kScan partly (2 of 9 candidates), and
// kPlain's original form.
void Profile(Profiler& profiler) {
  const std::pair<int, int> runs[] = {{400, 150}, {420, 120}, {450, 90},
                                      {500, 60},  {480, 95},  {470, 300}};
  for (const auto& [time, turnaround] : runs) {
    profiler.Record(kGemm, "gemm", Run(profiler.Choose(kGemm).form, time, turnaround));
  }
  profiler.Record(kGemm, "gemm", OriginalRun(380));
  for (int i = 0; i < 2; ++i)
    profiler.Record(kScan, "scan", Run(profiler.Choose(kScan).form, 90, 9));
  profiler.Record(kPlain, "plain", OriginalRun(40));
  profiler.Record(kPlain, "plain", OriginalRun(45));
}

// What Snapshot says, with the fields that must survive a round trip.
std::string Describe(const std::vector<ProfileRecord>& records) {
  std::string text;
  for (const ProfileRecord& r : records) {
    text += fmt::format("{} {:x} {}x{}x{} {}:{}:{} {} {} {}/{} {} {} {}\n", r.kernel_name,
                        r.shape.kernel, r.shape.grid.x, r.shape.grid.y, r.shape.grid.z,
                        static_cast<int>(r.chosen.kind), r.chosen.slices, r.chosen.workers,
                        r.short_turnaround, r.complete, r.measured, r.candidates,
                        r.original_time ? r.original_time->count() : -1,
                        r.normalized_speed.value_or(-1), r.turnaround ? r.turnaround->count() : -1);
  }
  return text;
}

// The cache file a profiled Profiler writes, as JSON.
json SavedCache(const fs::path& path) {
  auto profiler = Open(path);
  Profile(*profiler);
  REQUIRE(profiler->Save().ok());
  return json::parse(ReadText(path));
}

TEST_CASE("A saved cache gives the same profiles and choices, without probing again") {
  TempDir dir;
  const fs::path path = dir.path() / "cache" / "tally" / "profiles.json";  // directories made
  auto first = Open(path);
  Profile(*first);
  REQUIRE(first->Save().ok());
  CHECK(dir.Files() == std::vector<std::string>{"cache/tally/profiles.json"});

  CapturedStderr log;
  auto second = Open(path);
  CHECK(log.Lines().empty());
  CHECK(Describe(second->Snapshot()) == Describe(first->Snapshot()));
  CHECK(second->Choose(kGemm).form == LaunchForm::Preemptible(16));
  CHECK(second->Choose(kPlain).form == LaunchForm::Original());
  CHECK(second->Choose(kPlain).short_turnaround);
  // kScan goes on with its third candidate; the two measured are not tried again.
  CHECK(second->Choose(kScan).form == first->Choose(kScan).form);
  CHECK(second->Snapshot()[2].measured == 2);
}

TEST_CASE("Save writes only when something changed") {
  TempDir dir;
  const fs::path path = dir.path() / "profiles.json";
  auto profiler = Open(path);
  REQUIRE(profiler->Save().ok());
  CHECK_FALSE(fs::exists(path));  // nothing measured yet
  Profile(*profiler);
  REQUIRE(profiler->Save().ok());
  fs::remove(path);
  profiler->Choose(kGemm);  // a choice is no measurement
  REQUIRE(profiler->Save().ok());
  CHECK_FALSE(fs::exists(path));
  profiler->Record(kGemm, "gemm", OriginalRun(370));
  REQUIRE(profiler->Save().ok());
  CHECK(fs::exists(path));
}

TEST_CASE("No cache path: nothing is loaded or saved") {
  auto profiler = Profiler::Create({});
  Profile(*profiler);
  CHECK(profiler->Save().ok());
}

TEST_CASE("A missing cache file is no error and says nothing") {
  TempDir dir;
  CapturedStderr log;
  auto profiler = Open(dir.path() / "absent" / "profiles.json");
  CHECK(log.Lines().empty());
  CHECK(profiler->Snapshot().empty());
}

// Opens `text` as the cache: it must be ignored with one log line containing `why`, and the
// next Save must replace it with a file that loads.
void ExpectIgnoredThenReplaced(const std::string& text, const std::string& why,
                               const DeviceIdentity& device = kDevice) {
  TempDir dir;
  const fs::path path = dir.path() / "profiles.json";
  WriteText(path, text);
  std::unique_ptr<Profiler> profiler;
  {
    CapturedStderr log;
    profiler = Open(path, device);
    const std::vector<std::string> lines = log.Lines();
    REQUIRE(lines.size() == 1);
    CHECK_THAT(lines[0], Catch::Contains("ignoring the cache " + path.string()));
    CHECK_THAT(lines[0], Catch::Contains(why));
  }
  CHECK(profiler->Snapshot().empty());
  CHECK(profiler->Choose(kGemm).form == LaunchForm::Preemptible());  // probing from scratch
  // Replaced even without new measurements: the ignored file would be ignored again.
  REQUIRE(profiler->Save().ok());
  CHECK(ReadText(path) != text);
  CapturedStderr log;
  auto reopened = Open(path, device);
  CHECK(log.Lines().empty());
  CHECK(reopened->Snapshot().empty());
}

TEST_CASE("A file that is not JSON is ignored once, then replaced") {
  ExpectIgnoredThenReplaced("{\"format\": \"tally-profiles\", \"version\": 1,,}", "not valid JSON");
  ExpectIgnoredThenReplaced("", "not valid JSON");
  ExpectIgnoredThenReplaced(std::string("\x00\xff\xfe garbage", 12), "not valid JSON");
}

TEST_CASE("A truncated file is ignored once, then replaced") {
  TempDir dir;
  const std::string whole = SavedCache(dir.path() / "profiles.json").dump(1);
  for (size_t length : {whole.size() / 3, whole.size() / 2, whole.size() - 2}) {
    ExpectIgnoredThenReplaced(whole.substr(0, length), "not valid JSON");
  }
}

TEST_CASE("Wrong structure, types or values: ignored once, then replaced") {
  TempDir dir;
  const json valid = SavedCache(dir.path() / "profiles.json");
  // Where the first profile (kGemm, sorted by kernel hash: last) is.
  const size_t gemm = valid["profiles"].size() - 1;
  REQUIRE(valid["profiles"][gemm]["name"] == "gemm");
  const std::vector<std::pair<std::function<void(json&)>, std::string>> damages = {
      {[](json& j) { j = json::array(); }, "file: not an object"},
      {[](json& j) { j.erase("format"); }, "no \"format\""},
      {[](json& j) { j["format"] = "something-else"; }, "not a profile cache"},
      {[](json& j) { j["version"] = 2; }, "unknown format version 2"},
      {[](json& j) { j["version"] = "1"; }, "file.version: not an unsigned integer"},
      {[](json& j) { j["device"]["sm_count"] = "many"; }, "file.device.sm_count"},
      {[](json& j) { j["profiles"] = json::object(); }, "file.profiles: not an array"},
      {[&](json& j) { j["profiles"][gemm]["forms"][0]["time_ns"][0] = -5; }, "negative time"},
      {[&](json& j) { j["profiles"][gemm]["forms"][0]["turnaround_ns"][0] = -0.5; },
       "negative time"},
      {[&](json& j) { j["profiles"][gemm]["original_ns"][0] = -1; }, "negative time"},
      {[&](json& j) { j["profiles"][gemm]["original_ns"][0] = 1.5; }, "not an unsigned integer"},
      {[&](json& j) {
         j["profiles"][gemm]["grid"] = json::array({1, 2});
       },
       "not an array of 3"},
      {[&](json& j) { j["profiles"][gemm]["block"][0] = 0; }, "a dimension of 0"},
      {[&](json& j) { j["profiles"][gemm]["kernel"] = 12; }, "not a string"},
      {[&](json& j) { j["profiles"][gemm]["kernel"] = "0x12"; }, "16 hexadecimal digits"},
      {[&](json& j) { j["profiles"][gemm]["sliceable"] = 1; }, "not a boolean"},
      {[&](json& j) { j["profiles"][gemm]["resident_per_sm"] = 100000; }, "is over"},
      {[&](json& j) { j["profiles"][gemm]["forms"][0]["form"]["kind"] = "magic"; },
       "unknown form \"magic\""},
      {[&](json& j) {
         j["profiles"][gemm]["forms"][0]["form"] = {{"kind", "sliced"}};
       },
       "no \"slices\""},
      {[&](json& j) { j["profiles"][gemm]["forms"][0]["time_ns"].push_back(5); },
       "as many times as turnarounds"},
      {[&](json& j) { j["profiles"][gemm]["forms"][0]["time_ns"] = json::array(); }, "0 samples"},
      {[&](json& j) {
         j["profiles"][gemm]["original_ns"] = json::array({1, 2, 3, 4, 5, 6});
       },
       "6 samples"},
      {[&](json& j) { j["profiles"].push_back(j["profiles"][gemm]); }, "listed twice"},
  };
  for (const auto& [damage, why] : damages) {
    INFO(why);
    json damaged = valid;
    damage(damaged);
    ExpectIgnoredThenReplaced(damaged.dump(1), why);
  }
}

TEST_CASE("A file of another device, driver or transformation version is ignored, then replaced") {
  TempDir dir;
  const std::string text = SavedCache(dir.path() / "profiles.json").dump(1);
  DeviceIdentity other = kDevice;
  other.name = "NVIDIA A100-SXM4-40GB";
  ExpectIgnoredThenReplaced(text,
                            "written for 'NVIDIA H100 80GB HBM3' (132 SMs, compute 9.0, "
                            "driver 13000, transform version 1), not for this 'NVIDIA "
                            "A100-SXM4-40GB'",
                            other);
  other = kDevice;
  other.sm_count = 114;
  ExpectIgnoredThenReplaced(text, "(114 SMs", other);
  other = kDevice;
  other.compute_capability = 89;
  ExpectIgnoredThenReplaced(text, "compute 8.9", other);
  other = kDevice;
  other.driver_version = 12080;
  ExpectIgnoredThenReplaced(text, "driver 12080", other);
  other = kDevice;
  other.transform_version = 2;
  ExpectIgnoredThenReplaced(text,
                            "not for this 'NVIDIA H100 80GB HBM3' (132 SMs, compute 9.0, "
                            "driver 13000, transform version 2)",
                            other);
}

TEST_CASE("A failed write leaves the previous file whole and no temporary file") {
  TempDir dir;
  const fs::path path = dir.path() / "profiles.json";
  auto profiler = Open(path);
  Profile(*profiler);
  REQUIRE(profiler->Save().ok());
  const std::string before = ReadText(path);
  profiler->Record(kGemm, "gemm", OriginalRun(370));
  {
    // Files may grow to 100 bytes: the write fails part way (EFBIG instead of SIGXFSZ).
    struct sigaction ignore = {}, previous = {};
    ignore.sa_handler = SIG_IGN;
    REQUIRE(::sigaction(SIGXFSZ, &ignore, &previous) == 0);
    rlimit limit = {}, saved = {};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
    limit = saved;
    limit.rlim_cur = 100;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
    const absl::Status status = profiler->Save();
    ::setrlimit(RLIMIT_FSIZE, &saved);
    ::sigaction(SIGXFSZ, &previous, nullptr);
    CHECK_FALSE(status.ok());
    CHECK_THAT(std::string(status.message()), Catch::Contains("write("));
  }
  CHECK(ReadText(path) == before);
  CHECK(dir.Files() == std::vector<std::string>{"profiles.json"});
  // Still to be saved: the next Save writes it.
  REQUIRE(profiler->Save().ok());
  CHECK(ReadText(path) != before);
  CHECK(dir.Files() == std::vector<std::string>{"profiles.json"});
}

TEST_CASE("A failed rename removes the temporary file from the cache's directory") {
  TempDir dir;
  const fs::path path = dir.path() / "profiles.json";
  auto profiler = Open(path);
  Profile(*profiler);
  fs::create_directories(path / "in-the-way");  // rename(2) cannot replace a non-empty directory
  const absl::Status status = profiler->Save();
  CHECK_FALSE(status.ok());
  CHECK_THAT(std::string(status.message()), Catch::Contains("rename("));
  CHECK(dir.Files().empty());
}

TEST_CASE("The cache's directory cannot be made: Save says why") {
  TempDir dir;
  WriteText(dir.path() / "file", "");
  std::unique_ptr<Profiler> profiler;
  {
    CapturedStderr log;
    profiler = Open(dir.path() / "file" / "profiles.json");
    REQUIRE(log.Lines().size() == 1);
    CHECK_THAT(log.Lines()[0], Catch::Contains("Not a directory"));
  }
  Profile(*profiler);
  const absl::Status status = profiler->Save();
  CHECK_FALSE(status.ok());
  CHECK_THAT(std::string(status.message()), Catch::Contains("creating the directory"));
}

}  // namespace
}  // namespace tally::profiler
