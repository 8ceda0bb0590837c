// Logging backend: one formatted line per call, written with a single write so that lines of
// concurrent threads do not interleave.
#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tally {
namespace {

LogLevel LevelFromEnvironment() {
  const char* value = std::getenv("TALLY_LOG_LEVEL");
  if (value == nullptr) return LogLevel::kInfo;
  if (std::strcmp(value, "error") == 0) return LogLevel::kError;
  if (std::strcmp(value, "warn") == 0) return LogLevel::kWarn;
  if (std::strcmp(value, "debug") == 0) return LogLevel::kDebug;
  return LogLevel::kInfo;
}

std::atomic<LogLevel>& Level() {
  static std::atomic<LogLevel> level{LevelFromEnvironment()};
  return level;
}

constexpr const char* kLevelNames[] = {"error", "warn", "info", "debug"};

}  // namespace

LogLevel CurrentLogLevel() { return Level().load(std::memory_order_relaxed); }

void SetLogLevel(LogLevel level) { Level().store(level, std::memory_order_relaxed); }

void LogLine(LogLevel level, std::string_view message) {
  std::string line = fmt::format("[tally {}] {}\n", kLevelNames[static_cast<int>(level)], message);
  // Best effort: a failed log write must never affect the caller.
  [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace tally
