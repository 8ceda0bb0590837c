// Analysis tests: what the passes may transform, and the reasons they give when they may not,
// on hand-written kernels that isolate each hard case.
#include "ptx_transform/kernel_analysis.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ptx_transform/parser.h"

namespace tally::ptx {
namespace {

constexpr const char* kHeader = ".version 8.0\n.target sm_80\n.address_size 64\n";

KernelAnalysis Analyze(const std::string& module_text, const std::string& kernel = "k") {
  auto module = ParseModuleOrError(kHeader + module_text);
  REQUIRE(module.ok());
  const Function* f = module->FindFunction(kernel);
  REQUIRE(f != nullptr);
  return AnalyzeKernel(*module, *f);
}

bool Mentions(const std::vector<std::string>& reasons, const std::string& text) {
  for (const auto& r : reasons)
    if (r.find(text) != std::string::npos) return true;
  return false;
}

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

TEST_CASE("polling another block's progress in a loop is an inter-block dependency") {
  const std::string spin = R"(
.visible .entry k(.param .u64 flag)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  .reg .pred %p;
  ld.param.u64 %rd1, [flag];
$wait:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p, %r1, 0;
  @%p bra $wait;
  ret;
}
)";
  KernelAnalysis a = Analyze(spin);
  CHECK(Mentions(a.slice_blockers, "inter-block dependency"));
  CHECK(Mentions(a.ptb_blockers, "inter-block dependency"));

  // The same load outside any loop, and an ordinary loop without polling loads, are fine.
  KernelAnalysis once = Analyze(R"(
.visible .entry k(.param .u64 flag)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  .reg .pred %p;
  ld.param.u64 %rd1, [flag];
  ld.volatile.global.u32 %r1, [%rd1];
  mov.u32 %r2, 0;
$loop:
  add.u32 %r2, %r2, 1;
  ld.global.u32 %r1, [%rd1];
  setp.lt.u32 %p, %r2, 10;
  @%p bra $loop;
  ret;
}
)");
  CHECK(once.sliceable());
  CHECK(once.preemptible());
}

// A kernel `k(flag, out)` whose body is `loop` with the registers it may use declared.
std::string LoopKernel(const std::string& loop) {
  return R"(
.visible .entry k(.param .u64 flag, .param .u64 out)
{
  .reg .b16 %rs<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .pred %p<4>;
  .shared .align 4 .u32 s;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [out];
  mov.u32 %r2, 0;
  mov.u32 %r3, 0;
)" + loop + R"(
  st.global.u32 [%rd2], %r3;
  ret;
}
)";
}

TEST_CASE("a loop that only reads polled memory waits for nobody") {
  // The last block of a threadfence reduction sums the partial results of the others with
  // volatile loads (nvcc's unrolled and remainder loops): the exits depend on counters only.
  KernelAnalysis last_block = Analyze(LoopKernel(R"(
  mov.u32 %r4, %nctaid.x;
$unrolled:
  ld.volatile.global.u32 %r1, [%rd1];
  add.s32 %r3, %r3, %r1;
  ld.volatile.global.u32 %r1, [%rd1+4];
  add.s32 %r3, %r3, %r1;
  add.s64 %rd1, %rd1, 8;
  add.s32 %r2, %r2, 2;
  setp.lt.u32 %p1, %r2, %r4;
  @%p1 bra $unrolled;
$remainder:
  ld.volatile.global.u32 %r1, [%rd1];
  max.s32 %r3, %r3, %r1;
  st.global.u32 [%rd2+4], %r3;
  add.s32 %r4, %r4, -1;
  setp.ne.s32 %p2, %r4, 0;
  @%p2 bra $remainder;
)"));
  CHECK(last_block.sliceable());
  CHECK(last_block.preemptible());
}

TEST_CASE("a compare-and-swap update loop waits for nobody") {
  // atomicAdd on doubles before sm_60, atomicMax on floats: retry with the value just read
  // until no other thread changed it in between; some thread always succeeds.
  KernelAnalysis update = Analyze(LoopKernel(R"(
  ld.global.u32 %r5, [%rd1];
$retry:
  mov.u32 %r4, %r5;
  add.s32 %r6, %r4, 7;
  atom.global.cas.b32 %r5, [%rd1], %r4, %r6;
  setp.ne.s32 %p1, %r4, %r5;
  @%p1 bra $retry;
)"));
  CHECK(update.sliceable());
  CHECK(update.preemptible());
}

TEST_CASE("a loop whose exit depends on a polled value is a spin-wait") {
  const std::vector<std::pair<const char*, std::string>> spins = {
      {"exit by a forward branch (break)", R"(
$wait:
  ld.relaxed.gpu.global.u32 %r1, [%rd1];
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $done;
  add.s32 %r2, %r2, 1;
  bra.uni $wait;
$done:
)"},
      {"ticket lock: wait until the served ticket is ours", R"(
  atom.global.add.u32 %r5, [%rd1], 1;
$wait:
  ld.volatile.global.u32 %r1, [%rd1+4];
  setp.ne.u32 %p1, %r1, %r5;
  @%p1 bra $wait;
)"},
      {"decoupled look-back: the flag bits of a (flag, value) word", R"(
$look_back:
  ld.acquire.gpu.global.u64 %rd3, [%rd1];
  cvt.u32.u64 %r1, %rd3;
  shr.u32 %r4, %r1, 30;
  and.b32 %r4, %r4, 3;
  setp.eq.u32 %p1, %r4, 0;
  @%p1 bra $look_back;
)"},
      {"the value decides through a predicated move", R"(
  mov.u32 %r6, 1;
$wait:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.ne.u32 %p1, %r1, 0;
  @%p1 mov.u32 %r6, 0;
  setp.ne.u32 %p2, %r6, 0;
  @%p2 bra $wait;
)"},
      {"one iteration late (loop-carried)", R"(
  mov.u32 %r1, 0;
$wait:
  setp.eq.u32 %p1, %r1, 0;
  mov.u32 %r6, %r1;
  ld.volatile.global.u32 %r1, [%rd1];
  @%p1 bra $wait;
)"},
      {"one thread polls, the block decides through shared memory", R"(
  mov.u32 %r4, %tid.x;
  setp.eq.u32 %p3, %r4, 0;
$wait:
  @%p3 ld.volatile.global.u32 %r1, [%rd1];
  @%p3 st.shared.u32 [s], %r1;
  bar.sync 0;
  ld.shared.u32 %r6, [s];
  bar.sync 0;
  setp.eq.u32 %p1, %r6, 0;
  @%p1 bra $wait;
)"},
      {"grid barrier from atomics: count arrivals until all blocks are in", R"(
  atom.global.add.u32 %r5, [%rd1], 1;
  mov.u32 %r4, %nctaid.x;
$wait:
  atom.global.add.u32 %r1, [%rd1], 0;
  setp.lt.u32 %p1, %r1, %r4;
  @%p1 bra $wait;
)"},
      {"compare-and-swap used as a read (expected and new values the same)", R"(
  mov.u32 %r6, 1;
$wait:
  atom.global.cas.b32 %r1, [%rd1], %r6, %r6;
  setp.ne.u32 %p1, %r1, %r6;
  @%p1 bra $wait;
)"},
      {"the value steers a branch inside the loop", R"(
$wait:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra $skip;
  add.s32 %r2, %r2, 1;
$skip:
  setp.lt.u32 %p2, %r2, 4;
  @%p2 bra $wait;
)"},
  };
  for (const auto& [name, loop] : spins) {
    INFO(name);
    KernelAnalysis a = Analyze(LoopKernel(loop));
    CHECK(Mentions(a.slice_blockers, "polls memory in a loop"));
    CHECK(Mentions(a.ptb_blockers, "inter-block dependency"));
  }
  KernelAnalysis sleeps = Analyze(LoopKernel(R"(
$backoff:
  nanosleep.u32 100;
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, 4;
  @%p1 bra $backoff;
)"));
  CHECK(Mentions(sleeps.slice_blockers, "sleeps in a loop"));
  CHECK(Mentions(sleeps.ptb_blockers, "sleeps in a loop"));
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
