// Device UUIDs and selectors as people write them.
#include "common/device_uuid.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace tally {
namespace {

// Where the dashes go between the hex digits of a formatted UUID (after byte 4, 6, 8, 10).
constexpr bool DashBefore(size_t byte) { return byte == 4 || byte == 6 || byte == 8 || byte == 10; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  const char lower = absl::ascii_tolower(static_cast<unsigned char>(c));
  if (lower >= 'a' && lower <= 'f') return lower - 'a' + 10;
  return -1;
}

}  // namespace

std::string FormatDeviceUuid(const DeviceUuid& uuid) {
  std::string out = "GPU-";
  for (size_t i = 0; i < uuid.size(); ++i) {
    if (DashBefore(i)) out += '-';
    out += absl::StrFormat("%02x", uuid[i]);
  }
  return out;
}

absl::StatusOr<DeviceUuid> ParseDeviceUuid(std::string_view text) {
  const auto invalid = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s' is no GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as nvidia-smi -L "
        "prints it)",
        text));
  };
  std::string_view rest = text;
  if (rest.size() >= 4 && absl::EqualsIgnoreCase(absl::string_view(rest.data(), 4), "GPU-"))
    rest.remove_prefix(4);
  DeviceUuid uuid{};
  for (size_t i = 0; i < uuid.size(); ++i) {
    if (DashBefore(i)) {
      if (rest.empty() || rest.front() != '-') return invalid();
      rest.remove_prefix(1);
    }
    if (rest.size() < 2) return invalid();
    const int high = HexValue(rest[0]);
    const int low = HexValue(rest[1]);
    if (high < 0 || low < 0) return invalid();
    uuid[i] = static_cast<uint8_t>(high * 16 + low);
    rest.remove_prefix(2);
  }
  if (!rest.empty()) return invalid();
  return uuid;
}

absl::StatusOr<DeviceSelector> ParseDeviceSelector(std::string_view text) {
  int ordinal = 0;
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos) {
    if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &ordinal)) {
      return absl::InvalidArgumentError(absl::StrFormat("device ordinal '%s' is too large", text));
    }
    return DeviceSelector{ordinal, std::nullopt};
  }
  absl::StatusOr<DeviceUuid> uuid = ParseDeviceUuid(text);
  if (!uuid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' is neither a device ordinal (0, 1, ...) nor a GPU UUID "
                        "(GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as nvidia-smi -L prints it)",
                        text));
  }
  return DeviceSelector{std::nullopt, *uuid};
}

}  // namespace tally
