// Configuration files of NAME=VALUE lines (config_file.h).
#include "common/config_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace tally {
namespace {

bool IsName(absl::string_view name) {
  if (name.empty() || absl::ascii_isdigit(name[0])) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<ConfigEntry>> ParseConfig(const std::string& path,
                                                     const std::string& text) {
  std::vector<ConfigEntry> entries;
  std::istringstream lines(text);
  std::string raw;
  for (int number = 1; std::getline(lines, raw); ++number) {
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrFormat("%s:%d: %s", path, number, why));
    };
    const size_t equals = line.find('=');
    if (equals == absl::string_view::npos) return bad("expected NAME=VALUE");
    const absl::string_view name = absl::StripTrailingAsciiWhitespace(line.substr(0, equals));
    if (!IsName(name)) return bad(absl::StrFormat("'%s' is not a variable name", name));
    absl::string_view value = absl::StripLeadingAsciiWhitespace(line.substr(equals + 1));
    if (!value.empty() && (value[0] == '"' || value[0] == '\'')) {
      if (value.size() < 2 || value.back() != value[0]) return bad("unterminated quote");
      value = value.substr(1, value.size() - 2);
    }
    entries.push_back({number, std::string(name), std::string(value)});
  }
  return entries;
}

absl::StatusOr<std::vector<ConfigEntry>> ReadConfigFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return absl::NotFoundError(
        absl::StrFormat("cannot read the configuration file %s: %s", path, std::strerror(errno)));
  }
  const std::string text{std::istreambuf_iterator<char>(file), {}};
  return ParseConfig(path, text);
}

}  // namespace tally
