// Spin-wait tests: loops (in kernels, in the functions they call, or made by recursion) that
// may wait for another block keep a kernel in its original form, with the reason naming the
// function; loops that only read memory other blocks write do not. Hand-written kernels isolate
// each pattern; the nvcc-built ones (testdata/spin_waits.cu) check what nvcc really emits.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ptx_transform/parser.h"
#include "ptx_transform/test_util.h"
#include "ptx_transform/transform.h"

namespace tally::ptx {
namespace {

using testing::Analyze;
using testing::Mentions;
using testing::ReadFile;

// A kernel k(flag, out) whose body starts with %rd1 = flag and %rd2 = out loaded; `body` follows
// (registers %r1..%r2, %rd1..%rd2, %p).
std::string FlagKernel(const std::string& body) {
  return R"(
.visible .entry k(.param .u64 flag, .param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  .reg .pred %p;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [out];
)" + body + "}\n";
}

TEST_CASE("polling another block's progress in a loop is an inter-block dependency") {
  KernelAnalysis a = Analyze(FlagKernel(R"(
$wait:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p, %r1, 0;
  @%p bra $wait;
  ret;
)"));
  CHECK(Mentions(a.slice_blockers, "inter-block dependency"));
  CHECK(Mentions(a.ptb_blockers, "inter-block dependency"));

  // The same load outside any loop, and an ordinary loop without polling loads, are fine.
  KernelAnalysis once = Analyze(FlagKernel(R"(
  ld.volatile.global.u32 %r1, [%rd1];
  mov.u32 %r2, 0;
$loop:
  add.u32 %r2, %r2, 1;
  ld.global.u32 %r1, [%rd1];
  setp.lt.u32 %p, %r2, 10;
  @%p bra $loop;
  ret;
)"));
  CHECK(once.sliceable());
  CHECK(once.preemptible());
}

// Compilers may lay a loop's blocks out after its backward branch; the loop body follows the
// control flow, not the program order.
TEST_CASE("a polling load laid out after the loop's backward branch is found") {
  KernelAnalysis a = Analyze(FlagKernel(R"(
  mov.u32 %r1, 0;
$head:
  setp.ne.u32 %p, %r1, 0;
  @%p bra $done;
  bra $poll;
$back:
  bra $head;
$done:
  ret;
$poll:
  ld.volatile.global.u32 %r1, [%rd1];
  bra $back;
)"));
  CHECK(Mentions(a.slice_blockers, "inter-block dependency"));
  CHECK(Mentions(a.ptb_blockers, "inter-block dependency"));

  // A backward jump that closes no cycle is no loop: the polled branch before it runs once.
  KernelAnalysis straight = Analyze(FlagKernel(R"(
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p, %r1, 0;
  @%p bra $second;
$first:
  mov.u32 %r2, 1;
  st.global.u32 [%rd2], %r2;
  ret;
$second:
  mov.u32 %r2, 2;
  st.global.u32 [%rd2], %r2;
  bra $first;
)"));
  CHECK(straight.sliceable());
  CHECK(straight.preemptible());
}

// A kernel `k(flag, out)` whose body is `loop` with the registers it may use declared, after
// the device functions `functions`.
std::string LoopKernel(const std::string& loop, const std::string& functions = "") {
  return functions + R"(
.visible .entry k(.param .u64 flag, .param .u64 out)
{
  .reg .b16 %rs<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .pred %p<4>;
  .shared .align 4 .u32 s;
  .local .align 4 .u32 depot;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [out];
  mov.u32 %r2, 0;
  mov.u32 %r3, 0;
)" + loop +
         R"(
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

TEST_CASE("a loop that waits for threads of its own block waits for no other block") {
  // Cooperative groups' barrier for a tile of several warps (nvcc 13, thread_block_tile<64>):
  // the word is in shared memory, reached through a generic address, and every access is
  // scoped to the block.
  KernelAnalysis tile = Analyze(LoopKernel(R"(
  atom.or.acq_rel.cta.b32 %r4, [%rd1], 1;
$wait:
  ld.acquire.cta.u32 %r1, [%rd1];
  and.b32 %r5, %r1, 1;
  setp.eq.s32 %p1, %r5, 0;
  @%p1 bra $wait;
)"));
  CHECK(tile.sliceable());
  CHECK(tile.preemptible());
  // The same wait at the GPU's scope may wait for another block.
  KernelAnalysis gpu = Analyze(LoopKernel(R"(
$wait:
  ld.acquire.gpu.u32 %r1, [%rd1];
  and.b32 %r5, %r1, 1;
  setp.eq.s32 %p1, %r5, 0;
  @%p1 bra $wait;
)"));
  CHECK(Mentions(gpu.ptb_blockers, "inter-block dependency"));
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

// Device functions of the interprocedural cases (parameter `f`: the flag's address).
constexpr const char* kReadFlag = R"(
.func (.param .b32 r) read_flag(.param .b64 f)
{
  .reg .b32 %v;
  .reg .b64 %a;
  ld.param.u64 %a, [f];
  ld.volatile.global.u32 %v, [%a];
  st.param.b32 [r], %v;
  ret;
}
)";

// The call sequence `%r1 = callee(%rd1)` as nvcc writes it.
std::string CallReturning(const std::string& callee) {
  return "{ .param .b64 a0; .param .b32 r0; st.param.b64 [a0], %rd1;\n"
         "  call.uni (r0), " +
         callee + ", (a0); ld.param.b32 %r1, [r0]; }\n";
}

TEST_CASE("a loop waits through the functions it calls") {
  struct Case {
    const char* what;
    std::string functions;
    std::string loop;
    const char* reason;
  };
  const std::string exit_on_zero = "  setp.eq.u32 %p1, %r1, 0;\n  @%p1 bra $wait;\n";
  const Case cases[] = {
      {"the callee returns the polled value", kReadFlag,
       "$wait:\n" + CallReturning("read_flag") + exit_on_zero,
       "polls memory in a loop through called function read_flag"},
      {"two levels deep", std::string(kReadFlag) + R"(
.func (.param .b32 r) read_flag_plus_one(.param .b64 f)
{
  .reg .b32 %v;
  .reg .b64 %a;
  ld.param.u64 %a, [f];
  { .param .b64 a0; .param .b32 r0; st.param.b64 [a0], %a;
    call.uni (r0), read_flag, (a0); ld.param.b32 %v, [r0]; }
  add.s32 %v, %v, 1;
  st.param.b32 [r], %v;
  ret;
}
)",
       "$wait:\n" + CallReturning("read_flag_plus_one") + exit_on_zero,
       "through called function read_flag_plus_one (polling in read_flag)"},
      {"an out-parameter in local memory", R"(
.func read_into(.param .b64 f, .param .b64 out)
{
  .reg .b32 %v;
  .reg .b64 %a<3>;
  ld.param.u64 %a1, [f];
  ld.param.u64 %a2, [out];
  ld.volatile.global.u32 %v, [%a1];
  st.u32 [%a2], %v;
  ret;
}
)",
       R"(
  mov.u64 %rd3, depot;
  cvta.local.u64 %rd3, %rd3;
$wait:
  { .param .b64 a0; .param .b64 a1; st.param.b64 [a0], %rd1; st.param.b64 [a1], %rd3;
    call.uni read_into, (a0, a1); }
  ld.local.u32 %r1, [depot];
)" + exit_on_zero,
       "through called function read_into"},
      {"a field of a returned aggregate (param memory)", R"(
.func (.param .align 4 .b8 r[8]) read_pair(.param .b64 f)
{
  .reg .b32 %v;
  .reg .b64 %a;
  ld.param.u64 %a, [f];
  ld.volatile.global.u32 %v, [%a];
  st.param.b32 [r], 1;
  st.param.b32 [r+4], %v;
  ret;
}
)",
       R"(
$wait:
  { .param .b64 a0; .param .align 4 .b8 r0[8]; st.param.b64 [a0], %rd1;
    call.uni (r0), read_pair, (a0); ld.param.b32 %r1, [r0+4]; }
)" + exit_on_zero,
       "through called function read_pair"},
      {"the callee chooses its result by a branch on the polled value", R"(
.func (.param .b32 r) is_set(.param .b64 f)
{
  .reg .b32 %v;
  .reg .b64 %a;
  .reg .pred %q;
  ld.param.u64 %a, [f];
  ld.volatile.global.u32 %v, [%a];
  setp.eq.u32 %q, %v, 0;
  @%q bra $zero;
  st.param.b32 [r], 1;
  ret;
$zero:
  st.param.b32 [r], 0;
  ret;
}
)",
       "$wait:\n" + CallReturning("is_set") + exit_on_zero, "through called function is_set"},
      {"the callee exits when the polled value is set", R"(
.func exit_if_set(.param .b64 f)
{
  .reg .b32 %v;
  .reg .b64 %a;
  .reg .pred %q;
  ld.param.u64 %a, [f];
  ld.volatile.global.u32 %v, [%a];
  setp.ne.u32 %q, %v, 0;
  @%q exit;
  ret;
}
)",
       R"(
$wait:
  { .param .b64 a0; st.param.b64 [a0], %rd1; call.uni exit_if_set, (a0); }
  add.s32 %r2, %r2, 1;
  bra.uni $wait;
)",
       "through called function exit_if_set"},
      {"the loop polls and a callee exits on the value", R"(
.func exit_if_nonzero(.param .b32 v)
{
  .reg .b32 %v;
  .reg .pred %q;
  ld.param.u32 %v, [v];
  setp.ne.u32 %q, %v, 0;
  @%q exit;
  ret;
}
)",
       R"(
$wait:
  ld.volatile.global.u32 %r1, [%rd1];
  { .param .b32 a0; st.param.b32 [a0], %r1; call.uni exit_if_nonzero, (a0); }
  bra.uni $wait;
)",
       "polls memory in a loop"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    KernelAnalysis a = Analyze(LoopKernel(c.loop, c.functions));
    CHECK(Mentions(a.slice_blockers, c.reason));
    CHECK(Mentions(a.ptb_blockers, "inter-block dependency"));
  }
}

TEST_CASE("a called function that waits keeps its callers in their original form") {
  const std::string wait_for = R"(
.func wait_for(.param .b64 f)
{
  .reg .b32 %v;
  .reg .b64 %a;
  .reg .pred %q;
  ld.param.u64 %a, [f];
$spin:
  ld.volatile.global.u32 %v, [%a];
  setp.eq.u32 %q, %v, 0;
  @%q bra $spin;
  ret;
}
)";
  const std::string call = "{ .param .b64 a0; st.param.b64 [a0], %rd1; call.uni wait, (a0); }\n";
  KernelAnalysis direct = Analyze(LoopKernel(call, wait_for + R"(
.func wait(.param .b64 f)
{
  .reg .b64 %a;
  ld.param.u64 %a, [f];
  { .param .b64 a0; st.param.b64 [a0], %a; call.uni wait_for, (a0); }
  ret;
}
)"));
  CHECK(Mentions(direct.slice_blockers,
                 "polls memory in a loop (may wait for other blocks: "
                 "inter-block dependency) in called function wait_for"));
  CHECK(Mentions(direct.ptb_blockers, "in called function wait_for"));

  // The loop is in the callee, its polling read one level further down.
  KernelAnalysis nested = Analyze(LoopKernel(call, std::string(kReadFlag) + R"(
.func wait(.param .b64 f)
{
  .reg .b32 %r1;
  .reg .b64 %rd1;
  .reg .pred %q;
  ld.param.u64 %rd1, [f];
$wait:
)" + CallReturning("read_flag") + R"(
  setp.eq.u32 %q, %r1, 0;
  @%q bra $wait;
  ret;
}
)"));
  CHECK(Mentions(nested.slice_blockers,
                 "polls memory in a loop through called function read_flag (may wait for other "
                 "blocks: inter-block dependency) in called function wait"));
}

TEST_CASE("recursion that polls is a loop") {
  struct Case {
    const char* what;
    const char* functions;
    const char* reason;
  };
  const Case cases[] = {
      {"recurses while the flag is clear", R"(
.func wait(.param .b64 f)
{
  .reg .b32 %v;
  .reg .b64 %a;
  .reg .pred %q;
  ld.param.u64 %a, [f];
  ld.volatile.global.u32 %v, [%a];
  setp.eq.u32 %q, %v, 0;
  @%q bra $again;
  ret;
$again:
  { .param .b64 a0; st.param.b64 [a0], %a; call.uni wait, (a0); }
  ret;
}
)",
       "polls memory in a recursion (may wait for other blocks: inter-block dependency) in "
       "called function wait"},
      {"passes the polled value to the next level, which decides", R"(
.func wait_seen(.param .b64 f, .param .b32 seen)
{
  .reg .b32 %v<2>;
  .reg .b64 %a;
  .reg .pred %q;
  ld.param.u64 %a, [f];
  ld.param.u32 %v0, [seen];
  setp.ne.u32 %q, %v0, 0;
  @%q ret;
  ld.volatile.global.u32 %v1, [%a];
  { .param .b64 a0; .param .b32 a1; st.param.b64 [a0], %a; st.param.b32 [a1], %v1;
    call.uni wait_seen, (a0, a1); }
  ret;
}
.func wait(.param .b64 f)
{
  .reg .b64 %a;
  ld.param.u64 %a, [f];
  { .param .b64 a0; .param .b32 a1; st.param.b64 [a0], %a; st.param.b32 [a1], 0;
    call.uni wait_seen, (a0, a1); }
  ret;
}
)",
       "polls memory in a recursion (may wait for other blocks: inter-block dependency) in "
       "called function wait_seen"},
      {"mutual recursion", R"(
.func wait(.param .b64 f);
.func check(.param .b64 f)
{
  .reg .b32 %v;
  .reg .b64 %a;
  .reg .pred %q;
  ld.param.u64 %a, [f];
  ld.volatile.global.u32 %v, [%a];
  setp.ne.u32 %q, %v, 0;
  @%q ret;
  { .param .b64 a0; st.param.b64 [a0], %a; call.uni wait, (a0); }
  ret;
}
.func wait(.param .b64 f)
{
  .reg .b64 %a;
  ld.param.u64 %a, [f];
  { .param .b64 a0; st.param.b64 [a0], %a; call.uni check, (a0); }
  ret;
}
)",
       "polls memory in a recursion (may wait for other blocks: inter-block dependency) in "
       "called function check"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    KernelAnalysis a = Analyze(LoopKernel(
        "{ .param .b64 a0; st.param.b64 [a0], %rd1; call.uni wait, (a0); }\n", c.functions));
    CHECK(Mentions(a.slice_blockers, c.reason));
    CHECK(Mentions(a.ptb_blockers, "inter-block dependency"));
  }
}

TEST_CASE("what recursive functions pass on is found at their fixed point") {
  // first -> second -> first: only `second` reads the flag, at the bottom of a recursion
  // bounded by a counter, yet the kernel's loop waits on what `first` returns. (Registers are
  // assigned once, as nvcc does: the taint of a function does not follow program order.)
  const std::string functions = R"(
.func (.param .b32 r) second(.param .b64 f, .param .b32 n);
.func (.param .b32 r) first(.param .b64 f, .param .b32 n)
{
  .reg .b32 %v<2>;
  .reg .b64 %a;
  ld.param.u64 %a, [f];
  ld.param.u32 %v0, [n];
  { .param .b64 a0; .param .b32 a1; .param .b32 r0; st.param.b64 [a0], %a;
    st.param.b32 [a1], %v0; call.uni (r0), second, (a0, a1); ld.param.b32 %v1, [r0]; }
  st.param.b32 [r], %v1;
  ret;
}
.func (.param .b32 r) second(.param .b64 f, .param .b32 n)
{
  .reg .b32 %v<4>;
  .reg .b64 %a;
  .reg .pred %q;
  ld.param.u64 %a, [f];
  ld.param.u32 %v0, [n];
  setp.eq.u32 %q, %v0, 0;
  @%q bra $read;
  add.s32 %v1, %v0, -1;
  { .param .b64 a0; .param .b32 a1; .param .b32 r0; st.param.b64 [a0], %a;
    st.param.b32 [a1], %v1; call.uni (r0), first, (a0, a1); ld.param.b32 %v2, [r0]; }
  st.param.b32 [r], %v2;
  ret;
$read:
  ld.volatile.global.u32 %v3, [%a];
  st.param.b32 [r], %v3;
  ret;
}
)";
  KernelAnalysis waits = Analyze(LoopKernel(R"(
$wait:
  { .param .b64 a0; .param .b32 a1; .param .b32 r0; st.param.b64 [a0], %rd1;
    st.param.b32 [a1], 3; call.uni (r0), first, (a0, a1); ld.param.b32 %r1, [r0]; }
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra $wait;
)",
                                            functions));
  CHECK(Mentions(waits.slice_blockers,
                 "polls memory in a loop through called function first (polling in second)"));
  // Called once, the same functions wait for nobody: the recursion depends on the counter.
  KernelAnalysis once = Analyze(LoopKernel(R"(
  { .param .b64 a0; .param .b32 a1; .param .b32 r0; st.param.b64 [a0], %rd1;
    st.param.b32 [a1], 3; call.uni (r0), first, (a0, a1); ld.param.b32 %r3, [r0]; }
)",
                                           functions));
  CHECK(once.sliceable());
  CHECK(once.preemptible());
}

TEST_CASE("calls of unknown functions count as polling everything") {
  // An indirect call (through a .callprototype) and an external function without a body, each
  // in a loop of a called function: the analysis cannot see what they read or return.
  const std::string functions = R"(
.extern .func (.param .b32 r) unknown(.param .b64 f);
.func wait_indirect(.param .b64 f)
{
  .reg .b32 %v;
  .reg .b64 %a<3>;
  .reg .pred %q;
  ld.param.u64 %a1, [f];
  ld.global.u64 %a2, [%a1+8];
$again:
  { .param .b64 a0; .param .b32 r0; st.param.b64 [a0], %a1;
    proto: .callprototype (.param .b32 _) _ (.param .b64 _);
    call (r0), %a2, (a0), proto; ld.param.b32 %v, [r0]; }
  setp.eq.u32 %q, %v, 0;
  @%q bra $again;
  ret;
}
.func wait_external(.param .b64 f)
{
  .reg .b32 %v;
  .reg .b64 %a;
  .reg .pred %q;
  ld.param.u64 %a, [f];
$again:
  { .param .b64 a0; .param .b32 r0; st.param.b64 [a0], %a;
    call (r0), unknown, (a0); ld.param.b32 %v, [r0]; }
  setp.eq.u32 %q, %v, 0;
  @%q bra $again;
  ret;
}
)";
  for (const char* callee : {"wait_indirect", "wait_external"}) {
    INFO(callee);
    KernelAnalysis a =
        Analyze(LoopKernel(std::string("{ .param .b64 a0; st.param.b64 [a0], %rd1; call.uni ") +
                               callee + ", (a0); }\n",
                           functions));
    const bool indirect = std::string(callee) == "wait_indirect";
    CHECK(Mentions(a.slice_blockers, indirect ? "polls memory in a loop through an indirect call"
                                              : "polls memory in a loop through external "
                                                "function unknown (unknown behaviour)"));
    CHECK(Mentions(a.slice_blockers, indirect ? "indirect call (unknown callee)"
                                              : "calls external function unknown"));
    CHECK(Mentions(a.ptb_blockers, std::string("in called function ") + callee));
  }
}

TEST_CASE("calls that read polled memory without waiting on it keep the kernel transformable") {
  struct Case {
    const char* what;
    const char* functions;
    const char* loop;
  };
  const Case cases[] = {
      {"sums the others' partial results; the loop counts", R"(
.func (.param .b32 r) sum(.param .b64 p, .param .b32 n)
{
  .reg .b32 %s<3>;
  .reg .b64 %a;
  .reg .pred %q;
  ld.param.u64 %a, [p];
  ld.param.u32 %s1, [n];
  mov.u32 %s2, 0;
$next:
  ld.volatile.global.u32 %s0, [%a];
  add.s32 %s2, %s2, %s0;
  add.s64 %a, %a, 4;
  add.s32 %s1, %s1, -1;
  setp.ne.u32 %q, %s1, 0;
  @%q bra $next;
  st.param.b32 [r], %s2;
  ret;
}
)",
       R"(
$loop:
  { .param .b64 a0; .param .b32 a1; .param .b32 r0; st.param.b64 [a0], %rd1;
    st.param.b32 [a1], %r2; call.uni (r0), sum, (a0, a1); ld.param.b32 %r1, [r0]; }
  add.s32 %r3, %r3, %r1;
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, 8;
  @%p1 bra $loop;
)"},
      {"counts into a histogram with atomics", R"(
.func count(.param .b64 bins, .param .b32 v)
{
  .reg .b32 %v;
  .reg .b64 %a<3>;
  ld.param.u64 %a1, [bins];
  ld.param.u32 %v, [v];
  and.b32 %v, %v, 7;
  mul.wide.u32 %a2, %v, 4;
  add.s64 %a1, %a1, %a2;
  atom.global.add.u32 %v, [%a1], 1;
  ret;
}
)",
       R"(
$loop:
  ld.global.u32 %r1, [%rd2];
  { .param .b64 a0; .param .b32 a1; st.param.b64 [a0], %rd1; st.param.b32 [a1], %r1;
    call.uni count, (a0, a1); }
  add.s64 %rd2, %rd2, 4;
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, 8;
  @%p1 bra $loop;
)"},
      {"prints polled values; the loop counts", R"(
.extern .func (.param .b32 r) vprintf(.param .b64 format, .param .b64 args);
)",
       R"(
$loop:
  ld.volatile.global.u32 %r1, [%rd1];
  { .param .b64 a0; .param .b64 a1; .param .b32 r0; st.param.b64 [a0], %rd2;
    st.param.b64 [a1], %rd1; call.uni (r0), vprintf, (a0, a1); }
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, 8;
  @%p1 bra $loop;
)"},
      {"a recursion bounded by a counter that reads polled memory", R"(
.func (.param .b32 r) total(.param .b64 p, .param .b32 n)
{
  .reg .b32 %v<3>;
  .reg .b64 %a;
  .reg .pred %q;
  ld.param.u64 %a, [p];
  ld.param.u32 %v1, [n];
  mov.u32 %v0, 0;
  setp.eq.u32 %q, %v1, 0;
  @%q bra $done;
  ld.volatile.global.u32 %v0, [%a];
  add.s64 %a, %a, 4;
  add.s32 %v1, %v1, -1;
  { .param .b64 a0; .param .b32 a1; .param .b32 r0; st.param.b64 [a0], %a;
    st.param.b32 [a1], %v1; call.uni (r0), total, (a0, a1); ld.param.b32 %v2, [r0]; }
  add.s32 %v0, %v0, %v2;
$done:
  st.param.b32 [r], %v0;
  ret;
}
)",
       R"(
  { .param .b64 a0; .param .b32 a1; .param .b32 r0; st.param.b64 [a0], %rd1;
    st.param.b32 [a1], 8; call.uni (r0), total, (a0, a1); ld.param.b32 %r3, [r0]; }
)"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    KernelAnalysis a = Analyze(LoopKernel(c.loop, c.functions));
    CHECK(a.slice_blockers.empty());
    CHECK(a.ptb_blockers.empty());
  }
}

#ifdef TALLY_SPIN_WAITS_PTX
TEST_CASE("nvcc-built kernels: waits through non-inlined device functions are reported") {
  auto module = ParseModuleOrError(ReadFile(TALLY_SPIN_WAITS_PTX));
  REQUIRE(module.ok());
  const TransformOptions options;
  const std::string report = TransformModule(*module, options).Format(options);
  INFO(report);
  const std::pair<const char*, const char*> expected[] = {
      {"returned_flag", "polls memory in a loop through called function _Z9read_flagPVi"},
      {"nested_callees",
       "polls memory in a loop through called function _Z10read_twicePVi (polling in "
       "_Z9read_flagPVi)"},
      {"out_parameter", "polls memory in a loop through called function _Z9read_intoPViPi"},
      {"returned_struct", "polls memory in a loop through called function _Z9read_pairPVi"},
      {"loop_in_callee",
       "polls memory in a loop (may wait for other blocks: inter-block dependency) in called "
       "function _Z8wait_forPVi"},
      {"exit_in_callee", "polls memory in a loop through called function _Z11exit_if_setPVi"},
      {"recursion",
       "polls memory in a recursion (may wait for other blocks: inter-block "
       "dependency) in called function _Z4pongPVii"},
  };
  for (const auto& [kernel, reason] : expected) {
    for (const char* form : {"sliced", "preemptible"}) {
      CHECK(report.find(std::string(kernel) + ": not " + form + ": ") != std::string::npos);
    }
    CHECK(report.find(reason) != std::string::npos);
  }
  for (const char* kernel : {"sums_partials", "counts_histogram"}) {
    CHECK(report.find(std::string(kernel) + ": sliced as ") != std::string::npos);
    CHECK(report.find(std::string(kernel) + ": preemptible as ") != std::string::npos);
  }
}
#endif

}  // namespace
}  // namespace tally::ptx
