// The managed-variable redirection: every use of a `.attribute(.managed)` variable goes through
// its pointer variable (initialised to the variable's own address), the result is PTX that ptxas
// accepts, a module without managed variables is untouched, and uses the rewrite cannot follow
// are refused with their line, leaving the module unchanged.
#include "ptx_transform/managed.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"

namespace tally::ptx {
namespace {

Module Parse(const std::string& body) {
  auto module = ParseModuleOrError(".version 8.0\n.target sm_75\n.address_size 64\n" + body);
  REQUIRE(module.ok());
  return *std::move(module);
}

// What nvcc emits for `__managed__ int counter = 5; __managed__ float table[4];` and a kernel
// that adds to the one and doubles an element of the other; plus direct address forms.
const std::string kManaged = R"(
.global .attribute(.managed) .align 4 .u32 counter = 5;
.global .attribute(.managed) .align 4 .b8 table[16] = {0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64};
.global .align 4 .u32 plain;
.visible .entry k(.param .u32 k_param_0)
{
  .reg .pred %p<2>;
  .reg .f32 %f<3>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<5>;
  ld.param.u32 %r1, [k_param_0];
  mov.u64 %rd1, counter;
  atom.global.add.u32 %r2, [%rd1], %r1;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd2, %r3, 4;
  mov.u64 %rd3, table;
  add.s64 %rd4, %rd3, %rd2;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, %f1;
  st.global.f32 [%rd4], %f2;
  setp.eq.u32 %p1, %r3, 0;
  @%p1 st.global.u32 [table+12], %r1;
  {
  ld.global.u32 %r4, [counter];
  }
  ld.global.u32 %r5, [plain];
  ret;
}
)";

TEST_CASE("Every use of a managed variable goes through its pointer variable") {
  Module module = Parse(kManaged);
  auto redirected = RedirectManagedVariables(module);
  REQUIRE(redirected.ok());
  CHECK(*redirected == std::vector<std::string>{"counter", "table"});
  std::string text = PrintModule(module);
  std::ranges::replace(text, '\t', ' ');
  INFO(text);
  CHECK(text.find(".global .align 8 .u64 counter__tally_managed = generic(counter);") !=
        std::string::npos);
  CHECK(text.find(".global .align 8 .u64 table__tally_managed = generic(table);") !=
        std::string::npos);
  CHECK(text.find("mov.u64 %rd1, %__tally_managed;") != std::string::npos);
  CHECK(text.find("ld.global.u64 %__tally_managed, [counter__tally_managed];") !=
        std::string::npos);
  CHECK(text.find("mov.u64 %rd3, %__tally_managed_1;") != std::string::npos);
  CHECK(text.find("@%p1 st.global.u32 [%__tally_managed_1+12], %r1;") != std::string::npos);
  CHECK(text.find("ld.global.u32 %r4, [%__tally_managed];") != std::string::npos);
  CHECK(text.find("ld.global.u32 %r5, [plain];") != std::string::npos);  // not managed
  // Four uses, four loads of a pointer.
  size_t loads = 0;
  for (size_t at = text.find("ld.global.u64"); at != std::string::npos;
       at = text.find("ld.global.u64", at + 1)) {
    ++loads;
  }
  CHECK(loads == 4);
  REQUIRE(ParseModuleOrError(text, "<redirected>").ok());
  // What a GPU's driver would compile: ptxas must accept it.
  const std::string path = "/tmp/tally_managed_test_" + std::to_string(getpid()) + ".ptx";
  std::ofstream(path) << text;
  const int status =
      std::system((std::string(TALLY_TEST_PTXAS) + " -arch=sm_75 -o /dev/null " + path).c_str());
  std::remove(path.c_str());
  CHECK(status == 0);
}

TEST_CASE("A module without managed variables is left as it is") {
  const std::string body = R"(
.global .align 4 .u32 plain = 1;
.visible .entry k() { .reg .b64 %rd<2>; mov.u64 %rd1, plain; ret; }
)";
  Module module = Parse(body);
  const Module before = module;
  auto redirected = RedirectManagedVariables(module);
  REQUIRE(redirected.ok());
  CHECK(redirected->empty());
  CHECK(module == before);
}

TEST_CASE("Uses the rewrite cannot follow are refused with their line, the module unchanged") {
  const std::string declaration = ".global .attribute(.managed) .align 4 .u32 counter = 5;\n";
  struct Case {
    std::string body;
    std::string says;
  };
  const Case cases[] = {
      {".visible .entry k() { .reg .b64 %rd<2>; mov.u64 %rd1, counter+4; ret; }",
       "line 5: the managed variable counter is used in a constant expression"},
      {".global .align 8 .u64 where = generic(counter);",
       "line 5: the managed variable counter is used in a variable's initialiser"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    Module module = Parse(declaration + c.body);
    const Module before = module;
    auto redirected = RedirectManagedVariables(module);
    REQUIRE_FALSE(redirected.ok());
    CHECK_THAT(std::string(redirected.status().message()), Catch::Contains(c.says));
    CHECK(module == before);
  }
  Module taken = Parse(declaration + ".global .u64 counter__tally_managed;\n");
  auto redirected = RedirectManagedVariables(taken);
  REQUIRE_FALSE(redirected.ok());
  CHECK_THAT(std::string(redirected.status().message()),
             Catch::Contains("already names counter__tally_managed"));
}

}  // namespace
}  // namespace tally::ptx
