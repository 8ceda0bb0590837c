// The IR linker: extern functions and variables resolve across units, clashing file-local names
// are renamed with their references, weak duplicates collapse, and what cannot be linked is an
// error naming the symbol.
#include "ptx_transform/link.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"

namespace tally::ptx {
namespace {

constexpr const char* kHeader = ".version 9.0\n.target sm_75\n.address_size 64\n";

Module Parse(const std::string& body) {
  auto module = ParseModuleOrError(std::string(kHeader) + body, "<test>");
  REQUIRE(module.ok());
  return *std::move(module);
}

// Links, prints and parses the result back (the printed module must be valid PTX for our parser).
std::string LinkToText(std::vector<std::string> sources) {
  std::vector<Module> units;
  for (const std::string& source : sources) units.push_back(Parse(source));
  auto linked = LinkModules(std::move(units));
  REQUIRE(linked.ok());
  std::string text = PrintModule(linked->module);
  REQUIRE(ParseModuleOrError(text, "<linked>").ok());
  return text;
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// What nvcc -rdc=true emits for a kernel in one file calling a function and reading a variable
// defined in another.
const std::string kCaller = R"(
.extern .func (.param .b32 func_retval0) _Z5twicei(.param .b32 _Z5twicei_param_0);
.extern .global .align 4 .u32 scale_factor;
.visible .entry _Z1kPi(.param .u64 _Z1kPi_param_0)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [_Z1kPi_param_0];
  mov.u32 %r1, %ctaid.x;
  {
  .param .b32 param0;
  st.param.b32 [param0+0], %r1;
  .param .b32 retval0;
  call.uni (retval0), _Z5twicei, (param0);
  ld.param.b32 %r2, [retval0+0];
  }
  ld.global.u32 %r3, [scale_factor];
  st.global.u32 [%rd1], %r3;
  ret;
}
)";
const std::string kCallee = R"(
.visible .global .align 4 .u32 scale_factor = 3;
.visible .func (.param .b32 func_retval0) _Z5twicei(.param .b32 _Z5twicei_param_0)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [_Z5twicei_param_0];
  shl.b32 %r2, %r1, 1;
  st.param.b32 [func_retval0+0], %r2;
  ret;
}
)";

TEST_CASE("extern functions and variables resolve to another unit's definitions") {
  for (const auto& order : {std::vector{kCaller, kCallee}, std::vector{kCallee, kCaller}}) {
    const std::string text = LinkToText(order);
    CHECK(Count(text, ".extern") == 0);
    CHECK(Count(text, "scale_factor = 3") == 1);
    // One prototype and one definition of the function, the prototype first.
    CHECK(Count(text, ".visible .func") == 2);
    CHECK(text.find(".visible .func") < text.find(".entry"));
    CHECK(text.find("scale_factor") < text.find(".entry"));
  }
}

TEST_CASE("file-local names that clash between units are renamed with their uses") {
  const std::string unit = R"(
.global .align 4 .u32 counter;
.func helper() { ret; }
.visible .entry K(.param .u64 p)
{
  .reg .b64 %rd<2>;
  mov.u64 %rd1, counter;
  call.uni helper, ();
  ret;
}
)";
  std::string other = unit;
  other.replace(other.find(".entry K"), 8, ".entry L");
  const std::string text = LinkToText({unit, other});
  CHECK(Count(text, "counter__tally_unit0") == 2);  // definition and use
  CHECK(Count(text, "counter__tally_unit1") == 2);
  CHECK(Count(text, "helper__tally_unit0") == 3);  // prototype, definition, call
  CHECK(Count(text, "helper__tally_unit1") == 3);
}

TEST_CASE("weak definitions in several units collapse to one") {
  const std::string unit = R"(
.weak .func inline_helper() { ret; }
.weak .global .align 4 .u32 shared_value = 1;
)";
  std::string other = unit + ".visible .entry K() { call.uni inline_helper, (); ret; }\n";
  const std::string text = LinkToText({unit, other});
  CHECK(Count(text, ".weak .func inline_helper") == 2);  // prototype and definition
  CHECK(Count(text, "shared_value") == 1);
}

TEST_CASE("functions the driver provides stay declared and are reported") {
  const std::string unit = R"(
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);
.visible .entry K() { ret; }
)";
  auto linked = LinkModules({Parse(unit), Parse(unit.substr(0, unit.find(".visible")))});
  REQUIRE(linked.ok());
  CHECK(linked->unresolved_functions == std::vector<std::string>{"vprintf"});
  CHECK(Count(PrintModule(linked->module), "vprintf") == 1);
}

TEST_CASE("what cannot be linked is an error naming the symbol") {
  auto missing = LinkModules({Parse(kCaller)});
  REQUIRE_FALSE(missing.ok());
  CHECK(std::string(missing.status().message()).find("scale_factor") != std::string::npos);

  auto twice = LinkModules({Parse(kCallee), Parse(kCallee)});
  REQUIRE_FALSE(twice.ok());
  CHECK(std::string(twice.status().message()).find("defined in translation units 0 and 1") !=
        std::string::npos);

  Module other_target = Parse(kCallee);
  other_target.targets = {"sm_80"};
  auto targets = LinkModules({Parse(kCaller), std::move(other_target)});
  REQUIRE_FALSE(targets.ok());
  CHECK(std::string(targets.status().message()).find("different targets") != std::string::npos);
  CHECK_FALSE(LinkModules({}).ok());
}

TEST_CASE("dynamic shared memory arrays are not references to other units") {
  const std::string unit = R"(
.extern .shared .align 16 .b8 smem[];
.visible .entry K() { ret; }
)";
  auto linked = LinkModules({Parse(unit)});
  REQUIRE(linked.ok());
  CHECK(Count(PrintModule(linked->module), ".extern .shared") == 1);
}

}  // namespace
}  // namespace tally::ptx
