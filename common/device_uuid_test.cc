#include "common/device_uuid.h"

#include <catch2/catch.hpp>

namespace tally {
namespace {

constexpr DeviceUuid kUuid = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                              0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0xff};
constexpr char kText[] = "GPU-01234567-89ab-cdef-0011-2233445566ff";

TEST_CASE("a UUID is formatted as nvidia-smi prints it and read back") {
  CHECK(FormatDeviceUuid(kUuid) == kText);
  CHECK(ParseDeviceUuid(kText).value() == kUuid);
}

TEST_CASE("a UUID is read without GPU- and in upper case") {
  CHECK(ParseDeviceUuid("01234567-89AB-CDEF-0011-2233445566FF").value() == kUuid);
  CHECK(ParseDeviceUuid("gpu-01234567-89ab-cdef-0011-2233445566ff").value() == kUuid);
}

TEST_CASE("what is no UUID is refused") {
  for (const char* bad :
       {"", "GPU-", "GPU-01234567-89ab-cdef-0011-2233445566f",
        "GPU-01234567-89ab-cdef-0011-2233445566ff0", "GPU-0123456789ab-cdef-0011-2233445566ff",
        "GPU-01234567-89ab-cdef-0011-2233445566fg", "MIG-01234567"}) {
    INFO(bad);
    CHECK(absl::IsInvalidArgument(ParseDeviceUuid(bad).status()));
  }
}

TEST_CASE("a device selector is an ordinal or a UUID") {
  CHECK(ParseDeviceSelector("1").value() == DeviceSelector{1, std::nullopt});
  CHECK(ParseDeviceSelector(kText).value() == DeviceSelector{std::nullopt, kUuid});
  for (const char* bad : {"", "-1", "1x", "99999999999", "auto"}) {
    INFO(bad);
    CHECK(absl::IsInvalidArgument(ParseDeviceSelector(bad).status()));
  }
}

}  // namespace
}  // namespace tally
