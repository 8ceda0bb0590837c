// Real calls at their limits: recursion within and past the stack size limit
// (cuCtxSetLimit(CU_LIMIT_STACK_SIZE)) with kernels/calls_advanced.cu's deep_recursion, as
// compiled by nvcc and by NVRTC, and indirect calls through an address that is not a function.
// Failing launches run in contexts of their own: their errors are sticky.
#include <string>
#include <vector>

#include "emulator/tests/conformance/run.h"
#include "emulator/tests/kernel_util.h"

namespace tally::emu::conformance {
namespace {

using emu::testing::Download;
using emu::testing::Emu;
using emu::testing::LaunchAndWait;
using emu::testing::Upload;
using emu::testing::Zeros;

// A context of its own, current while it lives, with one module loaded from PTX text.
class Scratch {
 public:
  explicit Scratch(const std::string& ptx) {
    emu::testing::EnsureContext();
    REQUIRE(Emu().cuCtxCreate_v2(&context_, 0, 0) == CUDA_SUCCESS);
    REQUIRE(Emu().cuModuleLoadData(&module_, ptx.c_str()) == CUDA_SUCCESS);
  }
  ~Scratch() { Emu().cuCtxDestroy_v2(context_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  CUfunction Kernel(const char* name) {
    CUfunction function = nullptr;
    REQUIRE(Emu().cuModuleGetFunction(&function, module_, name) == CUDA_SUCCESS);
    return function;
  }

 private:
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
};

int Deep(int n, int* trail) {
  if (n == 0) return 1;
  int r = Deep(n - 1, trail);
  trail[n & 3] += r;
  return (r * 3 + n) & 0xffff;
}

std::vector<int> DeepReference(const std::vector<int>& depths) {
  std::vector<int> out;
  for (int depth : depths) {
    int trail[4] = {0, 0, 0, 0};
    int r = Deep(depth, trail);
    out.push_back(r + trail[0] + trail[1] + trail[2] + trail[3]);
  }
  return out;
}

// deep_recursion over one warp with the given per-lane depths.
CUresult RunDeep(CUfunction f, const std::vector<int>& depths, std::vector<int>* out) {
  CUdeviceptr in = Upload(depths), results = Zeros<int>(depths.size());
  CUresult result = LaunchAndWait(f, 1, static_cast<unsigned>(depths.size()), {&in, &results});
  if (result == CUDA_SUCCESS) *out = Download<int>(results, depths.size());
  return result;
}

TEST_CASE("recursion runs within the stack size limit and fails the launch past it") {
  for (const char* const* producer = kProducers; *producer != nullptr; ++producer) {
    INFO(*producer);
    std::vector<int> shallow(32), deep(32);
    for (int lane = 0; lane < 32; ++lane) {
      shallow[lane] = lane % 9;  // lanes at different depths in one warp
      deep[lane] = 900 + lane;
    }
    const std::string ptx = ReadModule(*producer, "calls_advanced");
    std::vector<int> out;
    {
      Scratch scratch(ptx);
      CHECK(RunDeep(scratch.Kernel("deep_recursion"), shallow, &out) == CUDA_SUCCESS);
      CHECK(out == DeepReference(shallow));
    }
    {  // the default 1 KiB stack holds far fewer than 900 frames
      Scratch scratch(ptx);
      CHECK(RunDeep(scratch.Kernel("deep_recursion"), deep, &out) == CUDA_ERROR_LAUNCH_FAILED);
      CHECK(Emu().cuCtxSynchronize() == CUDA_ERROR_LAUNCH_FAILED);  // sticky
    }
    {
      Scratch scratch(ptx);
      EMU_OK(Emu().cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 128 * 1024));
      CHECK(RunDeep(scratch.Kernel("deep_recursion"), deep, &out) == CUDA_SUCCESS);
      CHECK(out == DeepReference(deep));
    }
    {  // unbounded: the largest stack the device allows does not hold a million frames
      Scratch scratch(ptx);
      EMU_OK(Emu().cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1 << 30));
      std::vector<int> endless(1, 1000000);
      CHECK(RunDeep(scratch.Kernel("deep_recursion"), endless, &out) == CUDA_ERROR_LAUNCH_FAILED);
    }
  }
}

// A kernel that calls through `target`, or through the address of `twice` when target is 0.
constexpr char kCallThrough[] = R"(
.version 8.0
.target sm_80
.address_size 64
.func (.param .b32 r) twice(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  add.s32 %r2, %r1, %r1;
  st.param.b32 [r], %r2;
  ret;
}
.visible .entry call_through(.param .u64 target, .param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [target];
  ld.param.u64 %rd2, [out];
  setp.eq.u64 %p1, %rd1, 0;
  mov.u64 %rd3, twice;
  selp.b64 %rd1, %rd3, %rd1, %p1;
  {
  .param .b32 a;
  .param .b32 r;
  st.param.b32 [a], 21;
  proto: .callprototype (.param .b32 _) _ (.param .b32 _);
  call (r), %rd1, (a), proto;
  ld.param.b32 %r1, [r];
  }
  st.global.u32 [%rd2], %r1;
  ret;
}
)";

TEST_CASE("an indirect call through an address that is not a function fails the launch") {
  Scratch scratch(kCallThrough);
  CUfunction f = scratch.Kernel("call_through");
  CUdeviceptr out = Zeros<int>(1);
  CUdeviceptr target = 0;
  CHECK(LaunchAndWait(f, 1, 32, {&target, &out}) == CUDA_SUCCESS);
  CHECK(Download<int>(out, 1)[0] == 42);
  target = out;  // a data address
  CHECK(LaunchAndWait(f, 1, 32, {&target, &out}) == CUDA_ERROR_ILLEGAL_INSTRUCTION);
}

}  // namespace
}  // namespace tally::emu::conformance
