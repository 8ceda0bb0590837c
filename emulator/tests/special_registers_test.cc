// The predefined identifiers of the PTX ISA (kernels/special_registers.cu): WARP_SZ, the clocks'
// halves, the vector special registers' unused .w and whole-vector reads, the performance
// monitors, %current_graph_exec, and the shared memory sizes with the reserved region.
#include "emulator/tests/kernels/special_registers.h"

#include <cstring>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

TEST_CASE("every predefined identifier the emulator provides reads as the PTX ISA says") {
  constexpr unsigned kBlocks = 2, kThreads = 64, kDynamic = kThreads * 4, kStatic = 64 * 4;
  const size_t n = kBlocks * kThreads;
  CUdeviceptr out = Zeros<SpecialValues>(n);
  EMU_OK(LaunchAndWait(KernelFrom("special_registers", "Specials"), kBlocks, kThreads, {&out},
                       kDynamic));
  const std::vector<SpecialValues> values = Download<SpecialValues>(out, n);
  for (unsigned t = 0; t < n; ++t) {
    INFO("thread " << t);
    const SpecialValues& v = values[t];
    CHECK(v.warp_size == 32);
    CHECK(v.warp_size_expression == 65);
    CHECK((v.tid_w | v.ntid_w | v.ctaid_w | v.nctaid_w) == 0);
    const unsigned tid[4] = {t % kThreads, 0, 0, 0}, ntid[4] = {kThreads, 1, 1, 0};
    const unsigned ctaid[4] = {t / kThreads, 0, 0, 0}, nctaid[4] = {kBlocks, 1, 1, 0};
    CHECK(std::memcmp(v.tid, tid, sizeof(tid)) == 0);
    CHECK(std::memcmp(v.ntid, ntid, sizeof(ntid)) == 0);
    CHECK(std::memcmp(v.ctaid, ctaid, sizeof(ctaid)) == 0);
    CHECK(std::memcmp(v.nctaid, nctaid, sizeof(nctaid)) == 0);
    CHECK(v.tid16 == t % kThreads);
    CHECK(v.ntid16 == kThreads);
    CHECK((v.pm0 | v.pm7) == 0);
    CHECK(v.pm3_64 == 0);
    CHECK(v.graph_exec == 0);  // not launched from a device graph
    CHECK(v.clock_before >> 32 <= v.clock_hi);
    CHECK(v.clock_hi <= v.clock_after >> 32);
    CHECK(v.timer_before >> 32 <= v.timer_hi);
    CHECK(v.timer_hi <= v.timer_after >> 32);
    const unsigned long long timer = static_cast<unsigned long long>(v.timer_hi) << 32 | v.timer_lo;
    CHECK(v.timer_before <= timer);
    CHECK(timer <= v.timer_after);
    CHECK(v.dynamic_smem == kDynamic);
    CHECK(v.total_smem == kStatic + kDynamic);
    CHECK(v.aggr_smem == kStatic + kDynamic + 1024);
    CHECK(v.reserved_begin >= kStatic + kDynamic);
    CHECK(v.reserved_end == v.reserved_begin + 1024);
    CHECK(v.reserved_cap == 1024);
    const unsigned block = t / kThreads;
    CHECK(v.reserved_neighbour == block * kThreads + (t % kThreads + 1) % kThreads);
  }
}

}  // namespace
}  // namespace tally::emu::testing
