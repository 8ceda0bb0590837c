// Host-side helpers of the transformed forms: slice plans, parameter buffers laid out like
// the variants the passes produce, and PTB worker counts.
#include "ptx_transform/launch_forms.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "ptx_transform/parser.h"
#include "ptx_transform/transform.h"

namespace tally::ptx {
namespace {

TEST_CASE("linear block counts") {
  CHECK(*LinearBlockCount({4, 3, 2}) == 24);
  CHECK(*LinearBlockCount({65535, 65535, 1}) == 65535u * 65535u);
  CHECK_FALSE(LinearBlockCount({65536, 65536, 1}).ok());
  CHECK_FALSE(LinearBlockCount({0, 1, 1}).ok());
}

TEST_CASE("slices cover the grid in order") {
  auto slices = PlanSlices({5, 2, 1}, 4);
  REQUIRE(slices.ok());
  CHECK(*slices == std::vector<Slice>{{0, 4}, {4, 4}, {8, 2}});
  CHECK(PlanSlices({3, 1, 1}, 100)->size() == 1);
  CHECK_FALSE(PlanSlices({3, 1, 1}, 0).ok());
}

TEST_CASE("variant parameter buffers hold the original arguments and the extras") {
  auto module = ParseModuleOrError(R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n, .param .align 8 .b8 blob[12])
{
  .reg .b32 %r;
  mov.u32 %r, %ctaid.x;
  ret;
}
)");
  REQUIRE(module.ok());
  TransformReport report = TransformModule(*module, {});
  REQUIRE(report.kernels.size() == 1);
  auto sliced = ComputeSignature(*module->FindFunction(report.kernels[0].sliced));
  auto ptb = ComputeSignature(*module->FindFunction(report.kernels[0].preemptible));
  REQUIRE(sliced.ok());
  REQUIRE(ptb.ok());

  uint64_t pointer = 0x7f0000001000;
  uint32_t n = 77;
  uint8_t blob[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const void* args[] = {&pointer, &n, blob};
  Dim3 grid{6, 5, 4};

  auto buffer = SlicedParams(*sliced, args, Slice{42, 8}, grid);
  REQUIRE(buffer.ok());
  // p at 0, n at 8, blob at 16 (12 bytes), then base, x, y, z as u32 from 28.
  REQUIRE(buffer->size() == 44);
  auto u32_at = [&](const std::vector<uint8_t>& b, size_t offset) {
    uint32_t v;
    std::memcpy(&v, b.data() + offset, 4);
    return v;
  };
  uint64_t p_out;
  std::memcpy(&p_out, buffer->data(), 8);
  CHECK(p_out == pointer);
  CHECK(u32_at(*buffer, 8) == 77);
  CHECK(std::memcmp(buffer->data() + 16, blob, 12) == 0);
  CHECK(u32_at(*buffer, 28) == 42);
  CHECK(u32_at(*buffer, 32) == 6);
  CHECK(u32_at(*buffer, 36) == 5);
  CHECK(u32_at(*buffer, 40) == 4);

  auto ptb_buffer = PreemptibleParams(*ptb, args, 0xabcdef00, grid);
  REQUIRE(ptb_buffer.ok());
  // The state pointer is 8-aligned after the 28 bytes of original parameters.
  REQUIRE(ptb_buffer->size() == 52);
  uint64_t state;
  std::memcpy(&state, ptb_buffer->data() + 32, 8);
  CHECK(state == 0xabcdef00);
  CHECK(u32_at(*ptb_buffer, 40) == 6);

  const void* too_few[] = {&pointer, &n};
  CHECK_FALSE(SlicedParams(*sliced, too_few, Slice{0, 1}, grid).ok());
  const void* null_arg[] = {&pointer, nullptr, blob};
  CHECK_FALSE(SlicedParams(*sliced, null_arg, Slice{0, 1}, grid).ok());
}

TEST_CASE("fenced variants take the original arguments, the fence, then their extras") {
  auto module = ParseModuleOrError(R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
  .reg .b32 %r;
  .reg .b64 %rd;
  ld.param.u64 %rd, [p];
  mov.u32 %r, %ctaid.x;
  st.global.u32 [%rd], %r;
  ret;
}
)");
  REQUIRE(module.ok());
  TransformOptions options;
  options.fence = true;
  TransformReport report = TransformModule(*module, options);
  REQUIRE(report.kernels.size() == 1);
  REQUIRE(report.kernels[0].fenced);
  auto fenced = ComputeSignature(*module->FindFunction("k"));
  auto sliced = ComputeSignature(*module->FindFunction(report.kernels[0].sliced));
  auto ptb = ComputeSignature(*module->FindFunction(report.kernels[0].preemptible));
  REQUIRE(fenced.ok());
  REQUIRE(sliced.ok());
  REQUIRE(ptb.ok());
  // p at 0, n at 8, the fence 8-aligned at 16.
  REQUIRE(fenced->params.size() == 3);
  CHECK(fenced->params[2].offset == 16);
  CHECK(fenced->params[2].size == sizeof(FenceParams));
  CHECK(fenced->params[2].alignment == 8);

  uint64_t pointer = 0x7f0000001000;
  uint32_t n = 77;
  FenceParams fence{{0x1000, 0x2000, 0x3000}, {256, 512, 0}, 0x4000};
  const void* args[] = {&pointer, &n, &fence};  // "original arguments + fence"
  Dim3 grid{6, 5, 4};
  auto u32_at = [&](const std::vector<uint8_t>& b, size_t offset) {
    uint32_t v;
    std::memcpy(&v, b.data() + offset, 4);
    return v;
  };

  auto buffer = SlicedParams(*sliced, args, Slice{42, 8}, grid);
  REQUIRE(buffer.ok());
  // The fence at 16 (56 bytes), then base, x, y, z as u32 from 72.
  REQUIRE(buffer->size() == 88);
  CHECK(std::memcmp(buffer->data() + 16, &fence, sizeof fence) == 0);
  CHECK(u32_at(*buffer, 72) == 42);
  CHECK(u32_at(*buffer, 84) == 4);

  auto ptb_buffer = PreemptibleParams(*ptb, args, 0xabcdef00, grid);
  REQUIRE(ptb_buffer.ok());
  REQUIRE(ptb_buffer->size() == 92);
  CHECK(std::memcmp(ptb_buffer->data() + 16, &fence, sizeof fence) == 0);
  uint64_t state;
  std::memcpy(&state, ptb_buffer->data() + 72, 8);
  CHECK(state == 0xabcdef00);
  CHECK(u32_at(*ptb_buffer, 80) == 6);

  const void* without_fence[] = {&pointer, &n};
  CHECK_FALSE(SlicedParams(*sliced, without_fence, Slice{0, 1}, grid).ok());
}

TEST_CASE("PTB worker counts") {
  CHECK(PtbWorkerCount(2, 8, 1000, 0) == 16);    // all resident
  CHECK(PtbWorkerCount(2, 8, 1000, 4) == 4);     // as requested
  CHECK(PtbWorkerCount(2, 8, 1000, 100) == 16);  // never more than resident
  CHECK(PtbWorkerCount(2, 8, 5, 0) == 5);        // never more than tasks
  CHECK(PtbWorkerCount(0, 8, 5, 0) == 1);        // at least one
}

}  // namespace
}  // namespace tally::ptx
