// The device-output redirection: nvcc's calls to vprintf go to the added __tally_vprintf, a failed
// assert's message is written before the runtime's __assertfail still runs, the result is PTX
// ptxas accepts, and modules it cannot or need not rewrite are left as they are. In fenced code
// both go to fenced forms that read the client's memory only inside the fence. (What the added
// code writes is checked by running it: server/device_output_ring_test.cc.)
#include "ptx_transform/device_output.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "cuda_abi/device_output_ring.h"
#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"
#include "ptx_transform/test_util.h"
#include "ptx_transform/transform.h"

namespace tally::ptx {
namespace {

std::string ReadTestdata(const std::string& name) {
  std::ifstream file(std::string(TALLY_PTX_TESTDATA) + "/" + name);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

Module ParseText(const std::string& text) {
  auto module = ParseModuleOrError(text);
  REQUIRE(module.ok());
  return *std::move(module);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

bool PtxasAccepts(const std::string& text) {
  const std::string path = "/tmp/tally_device_output_test_" + std::to_string(getpid()) + ".ptx";
  std::ofstream(path) << text;
  const int status =
      std::system((std::string(TALLY_TEST_PTXAS) + " -arch=sm_80 -o /dev/null " + path).c_str());
  std::remove(path.c_str());
  return status == 0;
}

TEST_CASE("printf and assert of nvcc's PTX go to the client's ring") {
  Module module = ParseText(ReadTestdata("device_output.ptx"));
  REQUIRE(UsesDeviceOutput(module));
  auto redirected = RedirectDeviceOutput(module);
  REQUIRE(redirected.ok());
  CHECK(*redirected);
  std::string text = PrintModule(module);
  std::ranges::replace(text, '\t', ' ');
  INFO(text);
  CHECK(Count(text, " vprintf,") == 0);         // no call of the runtime's printf is left
  CHECK(Count(text, "__tally_vprintf,") == 3);  // the kernel's two, __tally_assertfail's
  CHECK(Count(text, "__tally_assertfail,") == 1);
  // The runtime's __assertfail: declared once, called by the added function only.
  CHECK(Count(text, ".extern .func __assertfail") == 1);
  CHECK(Count(text, " __assertfail,") == 1);  // in __tally_assertfail
  CHECK(Count(text, "vprintf") == Count(text, "__tally_vprintf"));
  CHECK(text.find(std::string(".global .align 8 .u64 ") + kDeviceOutputVariable + "[3];") !=
        std::string::npos);
  // Declared before the kernel that calls it.
  CHECK(text.find(") __tally_vprintf(") < text.find(".entry _Z6reportidPKcx"));
  REQUIRE(ParseModuleOrError(text, "<redirected>").ok());
  CHECK(PtxasAccepts(text));
}

TEST_CASE("printf alone: the assert function is not added") {
  std::string source = ReadTestdata("device_output.ptx");
  Module module = ParseText(source);
  // Drop the assert: its declaration and the call block.
  std::erase_if(module.items, [](const TopLevel& item) {
    const auto* function = std::get_if<Function>(&item.value);
    return function != nullptr && function->name == "__assertfail";
  });
  Function& kernel = std::get<Function>(module.items.back().value);
  std::erase_if(kernel.body->statements, [](const Statement& statement) {
    const auto* block = std::get_if<Block>(&statement.value);
    if (block == nullptr) return false;
    for (const Statement& inner : block->statements) {
      const auto* inst = std::get_if<Instruction>(&inner.value);
      if (inst != nullptr && inst->opcode == "call" &&
          std::ranges::any_of(inst->operands,
                              [](const Operand& op) { return op.name == "__assertfail"; })) {
        return true;
      }
    }
    return false;
  });
  auto redirected = RedirectDeviceOutput(module);
  REQUIRE(redirected.ok());
  const std::string text = PrintModule(module);
  INFO(text);
  CHECK(text.find("__assertfail") == std::string::npos);
  CHECK(PtxasAccepts(text));
}

// device_output.ptx fenced (as the server fences under --isolation fenced), then redirected.
Module FencedAndRedirected(bool fence_device_output) {
  Module module = ParseText(ReadTestdata("device_output.ptx"));
  TransformOptions options;
  options.fence = true;
  options.fence_device_output = fence_device_output;
  const TransformReport report = TransformModule(module, options);
  REQUIRE(report.kernels.size() == 1);
  REQUIRE(report.kernels[0].fenced);
  auto redirected = RedirectDeviceOutput(module);
  REQUIRE(redirected.ok());
  REQUIRE(*redirected);
  return module;
}

TEST_CASE("Fenced code's printf and assert read the client's memory only inside the fence") {
  const Module module = FencedAndRedirected(true);
  std::string text = PrintModule(module);
  std::ranges::replace(text, '\t', ' ');
  INFO(text);
  const std::string printf_clone = "__tally_vprintf__tally_fence";
  const std::string assert_clone = "__tally_assertfail__tally_fence";
  const Function* fenced_printf = module.FindFunction(printf_clone);
  REQUIRE(fenced_printf != nullptr);
  REQUIRE(module.FindFunction(assert_clone) != nullptr);
  const Function& unfenced = *module.FindFunction("__tally_vprintf");
  // Every kernel form calls the fenced functions only.
  for (const TopLevel& item : module.items) {
    const auto* kernel = std::get_if<Function>(&item.value);
    if (kernel == nullptr || !kernel->is_entry) continue;
    passes::ForEachInstruction(kernel->body->statements, [&](const Instruction& inst) {
      if (inst.opcode != "call") return;
      const std::string& callee = passes::CallTarget(inst)->name;
      CHECK((callee == printf_clone || callee == assert_clone));
    });
  }
  // The fenced assert prints through the fenced printf, then calls the runtime's __assertfail.
  CHECK(testing::CountInstructions(*module.FindFunction(assert_clone), "call.uni") == 2);
  CHECK(Count(text, "call.uni (taken), " + printf_clone + ", (format, arguments, ") == 1);
  CHECK(Count(text, " __assertfail,") == 2);
  // Each of the five generic loads (format, arguments, strings) is checked, and reads 0 from
  // outside the ranges; the ring's .global accesses are as they were.
  using testing::CountInstructions;
  CHECK(CountInstructions(*fenced_printf, "isspacep.global") == 5);
  CHECK(CountInstructions(*fenced_printf, "st.global.u32") == 5);  // the violation flag
  int zeroed = 0;  // `@!ok mov %value, 0` after a load (ok: in a range, or not redirected)
  passes::ForEachInstruction(fenced_printf->body->statements, [&](const Instruction& inst) {
    zeroed +=
        inst.opcode == "mov" && inst.guard.starts_with("%__tally_fence_ok") && inst.guard_negated;
  });
  CHECK(zeroed == 5);
  for (const char* ring : {"ld.global.u64", "ld.volatile.global.u64", "atom.global.cas.b64",
                           "st.global.u8", "st.global.u64", "st.volatile.global.u64"}) {
    INFO(ring);
    CHECK(CountInstructions(*fenced_printf, ring) == CountInstructions(unfenced, ring));
    CHECK(CountInstructions(*fenced_printf, ring) > 0);
  }
  CHECK(PtxasAccepts(text));
}

TEST_CASE("Without fenced output calls, the fenced module's printf is the unfenced one") {
  const Module fenced = FencedAndRedirected(false);
  CHECK(fenced.FindFunction("__tally_vprintf__tally_fence") == nullptr);
  Module plain = ParseText(ReadTestdata("device_output.ptx"));
  REQUIRE(RedirectDeviceOutput(plain).ok());
  CHECK(*fenced.FindFunction("__tally_vprintf") == *plain.FindFunction("__tally_vprintf"));
  CHECK(*fenced.FindFunction("__tally_assertfail") == *plain.FindFunction("__tally_assertfail"));
}

TEST_CASE("A call of an undeclared __assertfail is left for the driver to refuse") {
  Module module = ParseText(
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);\n"
      ".visible .entry k() {\n.param .b64 a;\ncall.uni __assertfail, (a, a, a, a, a, "
      "a);\nret;\n}\n");
  auto redirected = RedirectDeviceOutput(module);
  REQUIRE(redirected.ok());
  CHECK(module.FindFunction("__tally_assertfail__tally_fence") == nullptr);
}

TEST_CASE("A module without printf or assert is left as it is") {
  Module module = ParseText(
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry k() { ret; }\n");
  const Module before = module;
  CHECK_FALSE(UsesDeviceOutput(module));
  auto redirected = RedirectDeviceOutput(module);
  REQUIRE(redirected.ok());
  CHECK_FALSE(*redirected);
  CHECK(module == before);
}

TEST_CASE("Modules the rewrite cannot take are refused, unchanged") {
  const std::string declaration =
      ".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);\n";
  struct Case {
    std::string text;
    std::string says;
  };
  const Case cases[] = {
      {".version 8.0\n.target sm_80\n.address_size 32\n" + declaration, "32-bit addresses"},
      {".version 8.0\n.target sm_80\n.address_size 64\n" + declaration +
           ".global .u32 __tally_null_string;\n",
       "already names __tally_null_string"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    Module module = ParseText(c.text);
    const Module before = module;
    auto redirected = RedirectDeviceOutput(module);
    REQUIRE_FALSE(redirected.ok());
    CHECK_THAT(std::string(redirected.status().message()), Catch::Contains(c.says));
    CHECK(module == before);
  }
}

}  // namespace
}  // namespace tally::ptx
