// Kernel signature tests: parameter offsets, sizes and alignments as cuLaunchKernel expects
// them, demangling, and refusal of parameters whose size cannot be known.
#include "ptx_transform/kernel_signature.h"

#include <catch2/catch.hpp>

#include "ptx_transform/parser.h"

namespace tally::ptx {
namespace {

Module Parse(const std::string& entries) {
  auto m = ParseModuleOrError(".version 8.0\n.target sm_80\n.address_size 64\n" + entries);
  REQUIRE(m.ok());
  return *std::move(m);
}

TEST_CASE("layouts follow each parameter's alignment") {
  // Parameters as nvcc declares them for scalars, a pointer and structs (Blob is
  // {double d; int i[4];}, the last one a 4-byte struct with 4-byte alignment).
  Module m = Parse(R"(
.visible .entry _Z1kPfid4Blobcs(
  .param .u64 .ptr .align 1 p0,
  .param .u32 p1,
  .param .f64 p2,
  .param .align 8 .b8 p3[24],
  .param .u8 p4,
  .param .align 4 .b8 p5[4]
) { ret; }
.visible .entry empty() { ret; }
.visible .entry vec(.param .v2 .u32 v, .param .b16 h, .param .align 16 .b8 w[16]) { ret; }
.func not_a_kernel(.param .b32 x) { ret; }
)");
  auto sigs = ComputeSignatures(m);
  REQUIRE(sigs.ok());
  REQUIRE(sigs->size() == 3);

  const KernelSignature& k = (*sigs)[0];
  CHECK(k.name == "_Z1kPfid4Blobcs");
  CHECK(k.demangled == "k(float*, int, double, Blob, char, short)");
  std::vector<ParamLayout> expected = {
      {"p0", 8, 8, 0},   {"p1", 4, 4, 8},  {"p2", 8, 8, 16},
      {"p3", 24, 8, 24}, {"p4", 1, 1, 48}, {"p5", 4, 4, 52},
  };
  CHECK(k.params == expected);
  CHECK(k.param_buffer_size == 56);

  CHECK((*sigs)[1].params.empty());
  CHECK((*sigs)[1].param_buffer_size == 0);
  CHECK((*sigs)[1].demangled == "empty");

  std::vector<ParamLayout> vec = {{"v", 8, 8, 0}, {"h", 2, 2, 8}, {"w", 16, 16, 16}};
  CHECK((*sigs)[2].params == vec);
  CHECK((*sigs)[2].param_buffer_size == 32);
}

TEST_CASE("parameters of unknown size are refused") {
  auto unsized = ComputeSignatures(Parse(".visible .entry k(.param .b8 p[]) { ret; }"));
  REQUIRE_FALSE(unsized.ok());
  CHECK(std::string(unsized.status().message()) == "kernel k: parameter p is an unsized array");

  auto texref = ComputeSignatures(Parse(".visible .entry k(.param .texref t) { ret; }"));
  REQUIRE_FALSE(texref.ok());
  CHECK(std::string(texref.status().message()) ==
        "kernel k: parameter t has unsupported type .texref");

  auto huge = ComputeSignatures(Parse(".visible .entry k(.param .b64 p[4294967295]) { ret; }"));
  CHECK_FALSE(huge.ok());
}

TEST_CASE("scalar type sizes") {
  CHECK(ScalarTypeSize("u8") == 1);
  CHECK(ScalarTypeSize("bf16") == 2);
  CHECK(ScalarTypeSize("f16x2") == 4);
  CHECK(ScalarTypeSize("s64") == 8);
  CHECK(ScalarTypeSize("b128") == 16);
  CHECK(ScalarTypeSize("f8") == 0);
  CHECK(ScalarTypeSize("pred") == 0);
  CHECK(ScalarTypeSize("u128") == 0);
}

}  // namespace
}  // namespace tally::ptx
