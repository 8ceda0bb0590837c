// Minimal leveled logging to stderr with fmt formatting. The level comes from TALLY_LOG_LEVEL
// (error, warn, info, debug; default info).
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace tally {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

LogLevel CurrentLogLevel();
void SetLogLevel(LogLevel level);
void LogLine(LogLevel level, std::string_view message);

template <typename... Args>
void Log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (level > CurrentLogLevel()) return;
  LogLine(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tally

#define TALLY_LOG_ERROR(...) ::tally::Log(::tally::LogLevel::kError, __VA_ARGS__)
#define TALLY_LOG_WARN(...) ::tally::Log(::tally::LogLevel::kWarn, __VA_ARGS__)
#define TALLY_LOG_INFO(...) ::tally::Log(::tally::LogLevel::kInfo, __VA_ARGS__)
#define TALLY_LOG_DEBUG(...) ::tally::Log(::tally::LogLevel::kDebug, __VA_ARGS__)
