// Byte sizes as operators write them, and the errors for what is not one.
#include "common/byte_size.h"

#include <catch2/catch.hpp>

namespace tally {
namespace {

TEST_CASE("sizes with binary units") {
  CHECK(*ParseByteSize("1048576") == 1048576);
  CHECK(*ParseByteSize("0") == 0);
  CHECK(*ParseByteSize("512M") == 512ull << 20);
  CHECK(*ParseByteSize("4G") == 4ull << 30);
  CHECK(*ParseByteSize("4g") == 4ull << 30);
  CHECK(*ParseByteSize("1.5GiB") == 3ull << 29);
  CHECK(*ParseByteSize("64 KiB") == 64ull << 10);
  CHECK(*ParseByteSize("2TB") == 2ull << 40);
  CHECK(*ParseByteSize("100b") == 100);
  CHECK(*ParseByteSize("0.5K") == 512);
  CHECK(*ParseByteSize("1.0001K") == 1024);  // rounded down to whole bytes
}

TEST_CASE("what is not a size is refused, naming the text") {
  for (const char* text : {"", "M", "12X", "1.2.3G", "-5M", "4GiBs", "huge", "20000000T"}) {
    const absl::StatusOr<uint64_t> size = ParseByteSize(text);
    CHECK_FALSE(size.ok());
    CHECK(absl::IsInvalidArgument(size.status()));
    CHECK(size.status().message().find(std::string("'") + text + "'") != std::string_view::npos);
  }
}

TEST_CASE("sizes are printed with the largest unit that fits") {
  CHECK(FormatByteSize(1000) == "1000 bytes");
  CHECK(FormatByteSize(512ull << 20) == "512 MiB");
  CHECK(FormatByteSize(3ull << 29) == "1.50 GiB");
}

}  // namespace
}  // namespace tally
