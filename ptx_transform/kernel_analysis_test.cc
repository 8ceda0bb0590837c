// Analysis tests: what the passes may transform, and the reasons they give when they may not,
// on hand-written kernels that isolate each hard case.
#include "ptx_transform/kernel_analysis.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ptx_transform/test_util.h"

namespace tally::ptx {
namespace {

using testing::Analyze;
using testing::Mentions;

TEST_CASE("a plain kernel can take both forms") {
  KernelAnalysis a = Analyze(R"(
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .pred %p;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %nctaid.y;
  mov.u32 %r3, %tid.x;
  setp.eq.u32 %p, %r3, 0;
  @%p ret;
  bar.sync 0;
  exit;
}
)");
  CHECK(a.sliceable());
  CHECK(a.preemptible());
  CHECK(a.reads_grid);
  CHECK(a.special_registers == std::set<std::string>{"%ctaid.x", "%nctaid.y", "%tid.x"});
  CHECK(a.exits == 2);
  REQUIRE(a.barriers.size() == 1);
  CHECK(a.barriers[0].form == "bar.sync");
  CHECK(a.barriers[0].id == 0);
  CHECK_FALSE(a.barriers[0].has_count);
  CHECK_FALSE(a.uses_dynamic_shared);
}

TEST_CASE("grid reads in called functions are found, through prototypes") {
  KernelAnalysis a = Analyze(R"(
.func (.param .b32 r) block_x();
.func (.param .b32 r) twice_block_x()
{
  .reg .b32 %t;
  { .param .b32 inner; call.uni (inner), block_x, (); ld.param.b32 %t, [inner]; }
  add.u32 %t, %t, %t;
  st.param.b32 [r], %t;
  ret;
}
.func (.param .b32 r) block_x()
{
  .reg .b32 %t;
  mov.u32 %t, %ctaid.x;
  st.param.b32 [r], %t;
  ret;
}
.visible .entry k()
{
  .reg .b32 %v;
  { .param .b32 ret0; call.uni (ret0), twice_block_x, (); ld.param.b32 %v, [ret0]; }
  ret;
}
)");
  CHECK(a.sliceable());
  CHECK(a.preemptible());
  CHECK(a.reads_grid);
  CHECK(a.grid_reading_functions == std::vector<std::string>{"block_x"});
}

TEST_CASE("cross-block and residency-dependent features keep the original form") {
  struct Case {
    const char* what;
    const char* body;
    const char* reason;
  };
  const Case cases[] = {
      {"grid sync", "mov.u32 %r1, %envreg1;", "reads %envreg"},
      {"smid", "mov.u32 %r1, %smid;", "reads %smid"},
      {"gridid", "mov.u64 %rd1, %gridid;", "reads %gridid"},
      {"clusters", "mov.u32 %r1, %cluster_ctarank;", "uses thread-block clusters"},
      {"dsmem", "ld.shared::cluster.u32 %r1, [%r2];", "uses thread-block clusters"},
      {"mbarrier", "mbarrier.init.shared.b64 [%rd1], 32;", "uses mbarrier objects"},
      {"tma", "cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 16;",
       "bulk asynchronous"},
      {"cp.async tracked by an mbarrier", "cp.async.mbarrier.arrive.noinc.shared.b64 [%rd1];",
       "uses mbarrier objects"},
      {"indirect call", "call (%r1), %rd1, (%r2), proto;", "indirect call"},
      {"unknown external", "call.uni ext, ();", "calls external function ext"},
      {"whole-vector grid read", "mov.v4.u32 {%r1, %r2, %r3, %r4}, %ctaid;", "as a whole vector"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    KernelAnalysis a = Analyze(std::string(".extern .func ext();\n") +
                               ".visible .entry k()\n{\n.reg .b32 %r<5>;\n.reg .b64 %rd<2>;\n" +
                               c.body + "\nret;\n}\n");
    CHECK(Mentions(a.slice_blockers, c.reason));
    CHECK(Mentions(a.ptb_blockers, c.reason));
  }
  // cp.async with an mbarrier is no bulk copy.
  KernelAnalysis arrive = Analyze(
      ".visible .entry k()\n{\n.reg .b64 %rd<2>;\n"
      "cp.async.mbarrier.arrive.noinc.shared.b64 [%rd1];\nret;\n}\n");
  CHECK_FALSE(Mentions(arrive.slice_blockers, "bulk asynchronous"));
}

TEST_CASE("printf, malloc and assert are known external functions") {
  KernelAnalysis a = Analyze(R"(
.extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);
.extern .func (.param .b64 r) malloc(.param .b64 n);
.visible .entry k()
{
  .reg .b64 %rd<3>;
  { .param .b64 p0; .param .b64 p1; .param .b32 r0;
    st.param.b64 [p0], %rd1; st.param.b64 [p1], %rd2;
    call.uni (r0), vprintf, (p0, p1); }
  { .param .b64 n; .param .b64 r1; st.param.b64 [n], 8; call.uni (r1), malloc, (n); }
  ret;
}
)");
  CHECK(a.sliceable());
  CHECK(a.preemptible());
}

TEST_CASE("barriers the unified synchronisation cannot route block only PTB") {
  struct Case {
    const char* what;
    const char* body;
    const char* reason;
  };
  const Case cases[] = {
      {"named partial barrier", "bar.sync 1, 64;", "partial-CTA barrier"},
      {"arrive", "bar.arrive 2, 64;", "bar.arrive with a thread count"},
      {"register id", "barrier.sync %r1;", "barrier id in a register"},
      {"barrier in a function", "call.uni f, ();", "barrier in called function f"},
      {"exit in a function", "call.uni g, ();", "exit in called function g"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    KernelAnalysis a =
        Analyze(std::string(".func f() { bar.sync 0; ret; }\n") + ".func g() { exit; }\n" +
                ".visible .entry k()\n{\n.reg .b32 %r<2>;\n" + c.body + "\nret;\n}\n");
    CHECK(a.sliceable());
    CHECK(Mentions(a.ptb_blockers, c.reason));
  }
}

TEST_CASE("a kernel using all 16 barriers leaves none for the PTB loop") {
  std::string body;
  for (int id = 0; id < 16; ++id) body += "barrier.sync " + std::to_string(id) + ";\n";
  KernelAnalysis a = Analyze(".visible .entry k()\n{\n" + body + "ret;\n}\n");
  CHECK(a.sliceable());
  CHECK(Mentions(a.ptb_blockers, "all 16 barriers"));
  CHECK(a.barrier_ids.size() == 16);
}

TEST_CASE("dynamic shared memory use is recorded") {
  KernelAnalysis a = Analyze(R"(
.extern .shared .align 16 .b8 dyn[];
.visible .entry k()
{
  .reg .b32 %r<2>;
  mov.u32 %r1, dyn;
  st.shared.u32 [%r1], 0;
  ret;
}
)");
  CHECK(a.uses_dynamic_shared);
  CHECK(a.preemptible());
}

}  // namespace
}  // namespace tally::ptx
