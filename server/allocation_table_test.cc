// Pointer ranges from a client are accepted only inside one of its own allocations, including
// at the edges, and address arithmetic near 2^64 cannot wrap into acceptance.
#include "server/allocation_table.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

#include "server/cuda_result.h"

namespace tally::server {
namespace {

TEST_CASE("ranges inside one allocation are accepted, others refused") {
  AllocationTable table;
  table.Insert(0x1000, 0x100);
  table.Insert(0x1100, 0x100);  // adjacent: a range spanning both is still refused
  CHECK(table.CheckRange(0x1000, 0x100).ok());
  CHECK(table.CheckRange(0x10ff, 1).ok());
  CHECK(table.CheckRange(0x1100, 0).ok());
  CHECK_FALSE(table.CheckRange(0x1000, 0x101).ok());
  CHECK_FALSE(table.CheckRange(0x10f0, 0x20).ok());
  CHECK_FALSE(table.CheckRange(0xfff, 2).ok());
  CHECK_FALSE(table.CheckRange(0x1200, 1).ok());
  CHECK(ResultOf(table.CheckRange(0x0, 1)) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("sizes near 2^64 do not wrap around") {
  AllocationTable table;
  table.Insert(0x1000, 0x100);
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  CHECK_FALSE(table.CheckRange(0x1010, kMax).ok());
  CHECK_FALSE(table.CheckRange(0x1010, kMax - 0x1010 + 1).ok());
  CHECK_FALSE(table.CheckRange(kMax, 2).ok());
}

TEST_CASE("only allocation starts can be freed, once") {
  AllocationTable table;
  table.Insert(0x1000, 0x100);
  CHECK_FALSE(table.Remove(0x1010).ok());
  CHECK(table.total_bytes() == 0x100);
  CHECK(*table.Remove(0x1000) == 0x100);
  CHECK(table.total_bytes() == 0);
  CHECK(ResultOf(table.Remove(0x1000).status()) == CUDA_ERROR_INVALID_VALUE);
  CHECK_FALSE(table.CheckRange(0x1000, 1).ok());
}

}  // namespace
}  // namespace tally::server
