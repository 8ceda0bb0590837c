// Address partitions (address_partition.h) on the emulated GPU's virtual memory management:
// allocations inside the reservation, usable by copies, aligned; the extent (what a fenced
// kernel may touch) grows as allocations need chunks and shrinks only from the top, so that
// everything below it stays mapped; freed memory is reused; a partition that is full says so and
// is left unchanged; the device's memory comes back when the partition goes.
#include "server/address_partition.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "server/cuda_result.h"

namespace tally::server {
namespace {

struct Device {
  Device()
      : backend(*Backend::Load({.emulate = true,
                                .device = 0,
                                .emulator_library = TALLY_TEST_EMULATOR_LIBRARY,
                                .emulator_tenants = false})) {
    backend.MakeCurrent().IgnoreError();
  }
  const DriverApi& api() const { return backend.api(); }
  size_t FreeMemory() const {
    size_t free = 0, total = 0;
    REQUIRE(api().cuMemGetInfo(&free, &total) == CUDA_SUCCESS);
    return free;
  }
  Backend backend;
};

Device& TheDevice() {
  static Device* device = new Device;
  return *device;
}

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::unique_ptr<AddressPartition> Reserve(uint64_t capacity) {
  auto partition =
      AddressPartition::Reserve(TheDevice().api(), TheDevice().backend.device(), capacity, {});
  REQUIRE(partition.ok());
  return *std::move(partition);
}

CUdeviceptr Allocate(AddressPartition& partition, uint64_t bytes) {
  absl::StatusOr<CUdeviceptr> pointer = partition.Allocate(bytes);
  REQUIRE(pointer.ok());
  return *pointer;
}

TEST_CASE("Allocations lie in the partition, past its sink, and hold data") {
  auto partition = Reserve(64 * kMiB);
  const uint64_t granule = partition->granularity();
  REQUIRE(partition->extent() == granule);  // the sink alone
  const CUdeviceptr a = Allocate(*partition, 1000);
  const CUdeviceptr b = Allocate(*partition, 3 * granule);  // spans chunks
  for (const CUdeviceptr p : {a, b}) {
    REQUIRE(p >= partition->base() + granule);
    REQUIRE(p % AddressPartition::kAlignment == 0);
  }
  REQUIRE(b + 3 * granule <= partition->base() + partition->extent());
  std::vector<uint32_t> in(3 * granule / 4);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint32_t>(i * 2654435761u);
  const DriverApi& api = TheDevice().api();
  REQUIRE(api.cuMemcpyHtoDAsync(b, in.data(), in.size() * 4, nullptr) == CUDA_SUCCESS);
  std::vector<uint32_t> out(in.size());
  REQUIRE(api.cuMemcpyDtoHAsync(out.data(), b, out.size() * 4, nullptr) == CUDA_SUCCESS);
  REQUIRE(api.cuCtxSynchronize() == CUDA_SUCCESS);
  REQUIRE(out == in);
  REQUIRE(partition->Free(a).ok());
  REQUIRE(partition->Free(b).ok());
}

TEST_CASE("The extent shrinks only from the top, and freed room is reused") {
  auto partition = Reserve(64 * kMiB);
  const uint64_t granule = partition->granularity();
  const CUdeviceptr low = Allocate(*partition, granule);
  const CUdeviceptr high = Allocate(*partition, granule);
  const uint64_t extent = partition->extent();
  REQUIRE(extent >= 3 * granule);
  REQUIRE(partition->Free(low).ok());
  REQUIRE(partition->extent() == extent);         // below the top: still mapped
  REQUIRE(Allocate(*partition, granule) == low);  // and reused first
  REQUIRE(partition->Free(low).ok());
  REQUIRE(partition->Free(high).ok());
  REQUIRE(partition->extent() == granule);  // down to the sink
}

TEST_CASE("A bad free and a full partition are errors that change nothing") {
  auto partition = Reserve(4 * kMiB);
  const CUdeviceptr a = Allocate(*partition, 512);
  REQUIRE(ResultOf(partition->Free(a + 512)) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(ResultOf(partition->Free(0)) == CUDA_ERROR_INVALID_VALUE);
  const uint64_t extent = partition->extent();
  // The reservation holds twice the capacity; more than that has no room.
  REQUIRE(ResultOf(partition->Allocate(64 * kMiB).status()) == CUDA_ERROR_OUT_OF_MEMORY);
  REQUIRE(partition->extent() == extent);
  REQUIRE(partition->Free(a).ok());
  REQUIRE(ResultOf(partition->Free(a)) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("The device's memory comes back when a partition goes") {
  const size_t before = TheDevice().FreeMemory();
  {
    auto partition = Reserve(64 * kMiB);
    Allocate(*partition, 8 * kMiB);
    REQUIRE(TheDevice().FreeMemory() < before);
  }
  REQUIRE(TheDevice().FreeMemory() == before);
}

}  // namespace
}  // namespace tally::server
