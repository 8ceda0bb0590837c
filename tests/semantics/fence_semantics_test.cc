// Memory fencing on the emulated GPU (ptx_transform/passes/fence_memory.h): a fenced kernel, in
// every form (original, sliced, PTB), that writes through a pointer outside its ranges leaves
// that memory unchanged, writes to base[0] instead and sets the violation flag; a load from
// outside returns what is at base[0]; accesses inside the ranges are untouched and raise nothing.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "emulator/tests/emu_library.h"
#include "emulator/tests/kernel_util.h"
#include "ptx_transform/launch_forms.h"
#include "tests/semantics/forms_runner.h"

namespace tally::ptx {
namespace {

using emu::testing::Emu;
using semantics::LaunchShape;
using semantics::TransformedModule;

// Thread 0 of each block accesses `p`: a global load into out[0] (steal), a global store
// (smash), a generic store in a called function (smash_generic), a global atomic (bump); the
// whole warp stores a 16x16 f32 tensor-core tile of 2.0f with a stride (tile_smash); every
// thread stores through a generic pointer where `go` is not 0 (maybe_smash).
constexpr char kAttacks[] = R"(
.version 7.0
.target sm_80
.address_size 64

.func store_generic(.param .b64 p, .param .b32 v)
{
  .reg .b64 %rd1;
  .reg .b32 %r1;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [v];
  st.u32 [%rd1], %r1;
  ret;
}

.visible .entry steal(.param .u64 p, .param .u64 out)
{
  .reg .pred %p1;
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [p];
  ld.param.u64 %rd2, [out];
  ld.global.u32 %r2, [%rd1];
  st.global.u32 [%rd2], %r2;
DONE:
  ret;
}

.visible .entry smash(.param .u64 p)
{
  .reg .pred %p1;
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  ld.param.u64 %rd1, [p];
  mov.u32 %r2, 0xdead;
  @!%p1 st.global.u32 [%rd1], %r2;
  ret;
}

.visible .entry smash_generic(.param .u64 p)
{
  .reg .pred %p1;
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [p];
  {
    .param .b64 param0;
    st.param.b64 [param0], %rd1;
    .param .b32 param1;
    st.param.b32 [param1], 0xbeef;
    call.uni store_generic, (param0, param1);
  }
DONE:
  ret;
}

.visible .entry tile_smash(.param .u64 p, .param .u32 stride)
{
  .reg .f32 %f<8>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [stride];
  mov.b32 %f0, 0x40000000;
  mov.b32 %f1, 0x40000000;
  mov.b32 %f2, 0x40000000;
  mov.b32 %f3, 0x40000000;
  mov.b32 %f4, 0x40000000;
  mov.b32 %f5, 0x40000000;
  mov.b32 %f6, 0x40000000;
  mov.b32 %f7, 0x40000000;
  wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd1], {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, %r1;
  ret;
}

.visible .entry maybe_smash(.param .u64 p, .param .u32 go)
{
  .reg .pred %p1;
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [go];
  setp.ne.u32 %p1, %r1, 0;
  @%p1 st.u32 [%rd1], 0xfeed;
  ret;
}

.visible .entry bump(.param .u64 p)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  atom.global.add.u32 %r1, [%rd1], 1;
  ret;
}
)";

constexpr size_t kBytes = 4096;

// A device buffer of u32 words.
struct Buffer {
  CUdeviceptr address = 0;
  size_t bytes;
  explicit Buffer(size_t size = kBytes) : bytes(size) {
    EMU_OK(Emu().cuMemAlloc_v2(&address, bytes));
    REQUIRE(address % 256 == 0);  // FenceParams wants 256-byte multiples
  }
  ~Buffer() { Emu().cuMemFree_v2(address); }
  void Fill(uint32_t value) const { EMU_OK(Emu().cuMemsetD32_v2(address, value, bytes / 4)); }
  uint32_t At(size_t word) const {
    uint32_t v = 0;
    EMU_OK(Emu().cuMemcpyDtoH_v2(&v, address + word * 4, 4));
    return v;
  }
};

enum class Form { kOriginal, kSliced, kPtb };

// Runs `kernel` of `module` in `form` on 3 blocks of 32 threads with `args` (+ the fence).
void Run(const TransformedModule& module, const std::string& kernel, Form form,
         std::vector<const void*> args) {
  LaunchShape shape{{3, 1, 1}, {32, 1, 1}};
  switch (form) {
    case Form::kOriginal:
      EMU_OK(Emu().cuLaunchKernel(module.Function(kernel), 3, 1, 1, 32, 1, 1, 0, nullptr,
                                  const_cast<void**>(args.data()), nullptr));
      EMU_OK(Emu().cuCtxSynchronize());
      break;
    case Form::kSliced:
      EMU_OK(semantics::RunSliced(module, kernel, args, shape, *PlanSlices(shape.grid, 2)));
      break;
    case Form::kPtb:
      EMU_OK(semantics::RunPreemptible(module, kernel, args, shape, 2));
      break;
  }
}

TransformOptions Fencing() {
  TransformOptions options;
  options.fence = true;
  return options;
}

// `ptx` fenced, every form made, loaded on the emulated GPU.
struct FencedModule : TransformedModule {
  explicit FencedModule(const char* ptx) : TransformedModule(ptx, Fencing()) {
    emu::testing::EnsureContext();
    EMU_OK(Load());
  }
};

TEST_CASE("fenced kernels cannot reach memory outside their ranges, in every form") {
  FencedModule module(kAttacks);
  for (const char* kernel : {"steal", "smash", "smash_generic", "bump", "tile_smash"}) {
    INFO(kernel);
    const KernelForms& forms = module.Forms(kernel);
    REQUIRE(forms.fenced);
    REQUIRE_FALSE(forms.sliced.empty());
    REQUIRE_FALSE(forms.preemptible.empty());
  }

  Buffer own, victim, flag;
  FenceParams fence{{own.address, 0, 0}, {kBytes, 0, 0}, flag.address};
  const uint64_t outside = victim.address + 64, inside = own.address + 64;
  const uint64_t out = own.address + 128;
  for (Form form : {Form::kOriginal, Form::kSliced, Form::kPtb}) {
    INFO("form " << static_cast<int>(form));
    auto reset = [&] {
      own.Fill(0x5151);
      victim.Fill(0x7777);
      flag.Fill(0);
    };

    // A load from outside reads base[0].
    reset();
    EMU_OK(Emu().cuMemsetD32_v2(own.address, 0xabc, 1));
    EMU_OK(Emu().cuMemsetD32_v2(victim.address + 64, 0x5ec2e7, 1));
    Run(module, "steal", form, {&outside, &out, &fence});
    CHECK(own.At(32) == 0xabc);
    CHECK(flag.At(0) == 1);

    // Stores from outside land on base[0]; the victim stays as it was.
    for (const char* kernel : {"smash", "smash_generic"}) {
      INFO(kernel);
      reset();
      Run(module, kernel, form, {&outside, &fence});
      CHECK(victim.At(16) == 0x7777);
      CHECK(own.At(0) == (std::string(kernel) == "smash" ? 0xdeadu : 0xbeefu));
      CHECK(own.At(16) == 0x5151);
      CHECK(flag.At(0) == 1);
    }
    reset();
    Run(module, "bump", form, {&outside, &fence});
    CHECK(victim.At(16) == 0x7777);
    CHECK(own.At(0) == 0x5151 + 3 * 32);
    CHECK(flag.At(0) == 1);

    // A tile outside, or one whose last row is outside (a stride of a whole buffer), lands on
    // base[0] with the dense stride; the victim stays as it was.
    constexpr uint32_t kTwo = 0x40000000, kDense = 16, kWide = kBytes / 4;
    for (auto [at, wide] : {std::pair{outside, kDense}, std::pair{inside - 64, kWide}}) {
      const uint64_t address = at;
      const uint32_t stride = wide;
      INFO("tile at " << address << " stride " << stride);
      reset();
      Run(module, "tile_smash", form, {&address, &stride, &fence});
      for (size_t word : {0, 16, 64, 255}) CHECK(own.At(word) == kTwo);
      CHECK(own.At(256) == 0x5151);
      CHECK(victim.At(16) == 0x7777);
      CHECK(victim.At(0) == 0x7777);
      CHECK(flag.At(0) == 1);
    }

    // Inside the ranges nothing changes and nothing is flagged.
    reset();
    const uint32_t padded = 32;  // rows 32 words apart: 16 rows end at word 15 * 32 + 15
    Run(module, "tile_smash", form, {&own.address, &padded, &fence});
    CHECK(own.At(0) == kTwo);
    CHECK(own.At(16) == 0x5151);
    CHECK(own.At(15 * 32 + 15) == kTwo);
    CHECK(flag.At(0) == 0);
    reset();
    Run(module, "smash", form, {&inside, &fence});
    CHECK(own.At(16) == 0xdead);
    CHECK(own.At(0) == 0x5151);
    CHECK(flag.At(0) == 0);
    reset();
    Run(module, "smash_generic", form, {&inside, &fence});
    CHECK(own.At(16) == 0xbeef);
    CHECK(flag.At(0) == 0);
    reset();
    Run(module, "bump", form, {&inside, &fence});
    CHECK(own.At(16) == 0x5151 + 3 * 32);
    CHECK(flag.At(0) == 0);
  }
}

// The fence checks range 0 first and reads ranges 1 and 2 only for an address outside it: an
// access in range 1 or 2 runs as written and raises nothing, one outside all three goes to
// base[0], and a guarded access that does not execute raises nothing wherever it points.
TEST_CASE("accesses in ranges 1 and 2 pass, outside every range they go to base[0]") {
  FencedModule module(kAttacks);
  Buffer sink, one, two, victim, flag;
  FenceParams fence{
      {sink.address, one.address, two.address}, {kBytes, kBytes, kBytes}, flag.address};
  for (Form form : {Form::kOriginal, Form::kSliced, Form::kPtb}) {
    INFO("form " << static_cast<int>(form));
    auto reset = [&] {
      for (const Buffer* b : {&sink, &one, &two, &victim}) b->Fill(0x5151);
      flag.Fill(0);
    };
    for (const Buffer* range : {&one, &two}) {
      const uint64_t inside = range->address + 64;
      INFO("range at " << inside);
      reset();
      Run(module, "smash", form, {&inside, &fence});
      CHECK(range->At(16) == 0xdead);
      reset();
      Run(module, "smash_generic", form, {&inside, &fence});
      CHECK(range->At(16) == 0xbeef);
      reset();
      Run(module, "bump", form, {&inside, &fence});
      CHECK(range->At(16) == 0x5151 + 3 * 32);
      const uint32_t go = 1;
      reset();
      Run(module, "maybe_smash", form, {&inside, &go, &fence});
      CHECK(range->At(16) == 0xfeed);
      CHECK(sink.At(0) == 0x5151);
      CHECK(flag.At(0) == 0);
    }
    const uint64_t outside = victim.address + 64;
    for (uint32_t go : {0u, 1u}) {
      INFO("go " << go);
      reset();
      Run(module, "maybe_smash", form, {&outside, &go, &fence});
      CHECK(victim.At(16) == 0x5151);
      CHECK(sink.At(0) == (go != 0 ? 0xfeedu : 0x5151u));
      CHECK(flag.At(0) == go);
    }
    reset();
    Run(module, "bump", form, {&outside, &fence});
    CHECK(victim.At(16) == 0x5151);
    CHECK(sink.At(0) == 0x5151 + 3 * 32);
    CHECK(flag.At(0) == 1);
  }
}

// Accesses that share one check of their span (ptx_transform/passes/fence_spans.h), attacked:
// a constant offset from a base inside the range reaching outside it (pair), negative offsets
// (around: a store 8 bytes below the base, an 8-byte load after it), a base redefined between
// two stores (moved) and in a loop (walk).
constexpr char kSpanAttacks[] = R"(
.version 7.0
.target sm_80
.address_size 64

.visible .entry pair(.param .u64 p)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  st.global.u32 [%rd1], 0xa1;
  st.global.u32 [%rd1+2048], 0xa2;
  ret;
}

.visible .entry around(.param .u64 p)
{
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  st.global.u32 [%rd1+-8], 0xc1;
  st.global.u32 [%rd1+8], 0xc2;
  ld.global.u64 %rd2, [%rd1+16];
  st.global.u64 [%rd1+24], %rd2;
  ret;
}

.visible .entry moved(.param .u64 p)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  st.global.u32 [%rd1], 0xb1;
  add.s64 %rd1, %rd1, 4096;
  st.global.u32 [%rd1], 0xb2;
  ret;
}

.visible .entry walk(.param .u64 p)
{
  .reg .pred %p1;
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 0;
LOOP:
  st.global.u32 [%rd1], %r1;
  st.global.u32 [%rd1+8], %r1;
  add.s64 %rd1, %rd1, 2048;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 4;
  @%p1 bra LOOP;
  ret;
}
)";

TEST_CASE("accesses checked together cannot reach outside their range, in every form") {
  FencedModule module(kSpanAttacks);
  // One allocation: its first half is the range, its second the victim.
  Buffer memory(2 * kBytes), flag;
  FenceParams fence{{memory.address, 0, 0}, {kBytes, 0, 0}, flag.address};
  auto word = [&](uint64_t address) { return static_cast<size_t>(address - memory.address) / 4; };
  auto victim_intact = [&] {
    for (size_t w = kBytes / 4; w < 2 * kBytes / 4; w += 7) {
      if (memory.At(w) != 0x7777) return false;
    }
    return memory.At(2 * kBytes / 4 - 1) == 0x7777;
  };
  for (Form form : {Form::kOriginal, Form::kSliced, Form::kPtb}) {
    INFO("form " << static_cast<int>(form));
    auto run = [&](const char* kernel, uint64_t p) {
      INFO(kernel << " at +" << p - memory.address);
      memory.Fill(0x7777);
      flag.Fill(0);
      Run(module, kernel, form, {&p, &fence});
    };
    // Inside: what the original does, nothing flagged.
    const uint64_t inside = memory.address + 64;
    run("pair", inside);
    CHECK(memory.At(word(inside)) == 0xa1);
    CHECK(memory.At(word(inside + 2048)) == 0xa2);
    CHECK(flag.At(0) == 0);
    run("around", inside);
    CHECK(memory.At(word(inside - 8)) == 0xc1);
    CHECK(memory.At(word(inside + 8)) == 0xc2);
    CHECK(flag.At(0) == 0);

    // The highest store outside: both go to the sink at base[0], the victim stays intact.
    run("pair", memory.address + kBytes - 256);
    CHECK(victim_intact());
    CHECK(memory.At(0) == 0xa1);
    CHECK(memory.At(2048 / 4) == 0xa2);
    CHECK(flag.At(0) == 1);
    // The lowest store below the range: all redirected with their alignment (the u64 load and
    // store stay 8-byte aligned), nothing below the range written.
    run("around", memory.address);
    CHECK(memory.At(word(memory.address + 256 - 8)) == 0xc1);
    CHECK(memory.At(word(memory.address + 256 + 8)) == 0xc2);
    CHECK(flag.At(0) == 1);
    run("around", memory.address + kBytes);
    CHECK(victim_intact());
    CHECK(flag.At(0) == 1);
    // A base moved past the range between two stores, or by a loop: each value checked.
    run("moved", memory.address + kBytes - 4);
    CHECK(memory.At(kBytes / 4 - 1) == 0xb1);
    CHECK(memory.At(0) == 0xb2);
    CHECK(victim_intact());
    CHECK(flag.At(0) == 1);
    run("walk", memory.address);
    CHECK(memory.At(2048 / 4) == 1);
    CHECK(memory.At(0) == 3);
    CHECK(victim_intact());
    CHECK(flag.At(0) == 1);

    // The same span in range 2, range 0 elsewhere: checked past the fast path, as written
    // inside, to the sink at base[0] when it reaches the victim.
    Buffer sink;
    FenceParams in_two{{sink.address, 0, memory.address}, {kBytes, 0, kBytes}, flag.address};
    for (const uint64_t p : {inside, uint64_t{memory.address + kBytes - 256}}) {
      memory.Fill(0x7777);
      sink.Fill(0x5151);
      flag.Fill(0);
      Run(module, "pair", form, {&p, &in_two});
      const bool outside = p != inside;
      CHECK(victim_intact());
      CHECK(memory.At(word(p)) == (outside ? 0x7777u : 0xa1u));
      CHECK(sink.At(0) == (outside ? 0xa1u : 0x5151u));
      CHECK(sink.At(2048 / 4) == (outside ? 0xa2u : 0x5151u));
      CHECK(flag.At(0) == (outside ? 1u : 0u));
    }
  }
}

// Accesses through registers made from a module variable's address (fence_variables.h): one
// provably inside the variable runs unchecked (inside); an index added from a parameter is
// checked, range 2 first, for one generic access and for two global ones that share a check
// (indexed, indexed_pair); the variable's address set on one path only, or in an inner
// block's register of the same name, proves nothing about the register that reaches the store
// (joined, shadowed): each of those, pointed at the victim, goes to base[0].
constexpr char kVariableAttacks[] = R"(
.version 7.0
.target sm_80
.address_size 64

.global .align 4 .u32 g[64];

.visible .entry inside(.param .u64 p)
{
  .reg .b64 %rd<3>;
  mov.u64 %rd1, g;
  add.s64 %rd2, %rd1, 8;
  st.global.u32 [%rd2+4], 0xa1;
  ret;
}

.visible .entry indexed(.param .u64 p)
{
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  mov.u64 %rd2, g;
  add.s64 %rd3, %rd2, %rd1;
  cvta.global.u64 %rd3, %rd3;
  st.u32 [%rd3], 0xb1;
  ret;
}

.visible .entry indexed_pair(.param .u64 p)
{
  .reg .b64 %rd<4>;
  mov.u64 %rd2, g;
  ld.param.u64 %rd1, [p];
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], 0xb1;
  st.global.u32 [%rd3+8], 0xb2;
  ret;
}

.visible .entry joined(.param .u64 p)
{
  .reg .pred %p1;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  setp.ne.u64 %p1, %rd1, 0;
  @%p1 bra STORE;
  mov.u64 %rd1, g;
STORE:
  st.global.u32 [%rd1], 0xc1;
  ret;
}

.visible .entry shadowed(.param .u64 p)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  {
    .reg .b64 %rd1;
    mov.u64 %rd1, g;
  }
  st.global.u32 [%rd1], 0xd1;
  ret;
}
)";

TEST_CASE("addresses made from a module variable cannot reach outside the ranges") {
  FencedModule module(kVariableAttacks);
  CUdeviceptr g = 0;
  size_t g_bytes = 0;
  EMU_OK(Emu().cuModuleGetGlobal_v2(&g, &g_bytes, module.handle(), "g"));
  REQUIRE(g_bytes == 256);
  Buffer own, victim, flag;
  // Range 2 covers the variable (the server puts a fenced module's variables there).
  FenceParams fence{{own.address, 0, g}, {kBytes, 0, g_bytes}, flag.address};
  auto word_of_g = [&](size_t word) {
    uint32_t v = 0;
    EMU_OK(Emu().cuMemcpyDtoH_v2(&v, g + word * 4, 4));
    return v;
  };
  for (Form form : {Form::kOriginal, Form::kSliced, Form::kPtb}) {
    INFO("form " << static_cast<int>(form));
    auto run = [&](const char* kernel, uint64_t p) {
      INFO(kernel << " at " << p);
      own.Fill(0x5151);
      victim.Fill(0x7777);
      flag.Fill(0);
      EMU_OK(Emu().cuMemsetD32_v2(g, 0, g_bytes / 4));
      Run(module, kernel, form, {&p, &fence});
    };
    run("inside", 0);
    CHECK(word_of_g(3) == 0xa1);
    CHECK(flag.At(0) == 0);
    // An index inside the variable, into range 0, and onto the victim.
    run("indexed", 16);
    CHECK(word_of_g(4) == 0xb1);
    CHECK(flag.At(0) == 0);
    run("indexed", own.address + 64 - g);
    CHECK(own.At(16) == 0xb1);
    CHECK(flag.At(0) == 0);
    run("indexed", victim.address + 64 - g);
    CHECK(victim.At(16) == 0x7777);
    CHECK(own.At(0) == 0xb1);
    CHECK(flag.At(0) == 1);
    // The same with two stores that share one check of their span.
    run("indexed_pair", 16);
    CHECK(word_of_g(4) == 0xb1);
    CHECK(word_of_g(6) == 0xb2);
    CHECK(flag.At(0) == 0);
    run("indexed_pair", victim.address + 64 - g);
    CHECK(victim.At(16) == 0x7777);
    CHECK(victim.At(18) == 0x7777);
    CHECK(own.At(16) == 0xb1);  // base[0] + (64 mod 256)
    CHECK(own.At(18) == 0xb2);
    CHECK(flag.At(0) == 1);
    // The variable's path is fine; the other path's pointer is checked.
    run("joined", 0);
    CHECK(word_of_g(0) == 0xc1);
    CHECK(flag.At(0) == 0);
    for (const char* kernel : {"joined", "shadowed"}) {
      run(kernel, victim.address + 64);
      CHECK(victim.At(16) == 0x7777);
      CHECK(own.At(0) == (std::string(kernel) == "joined" ? 0xc1u : 0xd1u));
      CHECK(flag.At(0) == 1);
    }
  }
}

}  // namespace
}  // namespace tally::ptx
