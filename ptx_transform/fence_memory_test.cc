// Memory fencing (passes/fence_memory.h): what is checked and how, which kernels are refused and
// why (each stays unfenced, with its signature unchanged), and fenced callees. The golden file
// testdata/passes/fence_accesses.ptx holds the exact output for a small kernel.
#include <algorithm>
#include <catch2/catch.hpp>
#include <iterator>

#include "ptx_transform/kernel_signature.h"
#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"
#include "ptx_transform/test_util.h"
#include "ptx_transform/transform.h"

namespace tally::ptx {
namespace {

struct Fenced {
  Module module;
  TransformReport report;
  const KernelForms& Forms(const std::string& kernel = "k") const {
    for (const auto& k : report.kernels) {
      if (k.analysis.kernel == kernel) return k;
    }
    FAIL("no kernel " << kernel);
    throw;
  }
  // How many instructions of `function` have this opcode and modifiers (`st.global.u32`).
  int Count(const std::string& function, const std::string& spelling) const {
    const Function* f = module.FindFunction(function);
    REQUIRE(f != nullptr);
    return testing::CountInstructions(*f, spelling);
  }
};

Fenced Fence(const std::string& body, const std::string& header = "") {
  auto module = ParseModuleOrError(".version 8.0\n.target sm_90\n.address_size 64\n" + header +
                                   "\n.visible .entry k(.param .u64 p)\n{\n" + body + "\n}\n");
  INFO(module.status().message());
  REQUIRE(module.ok());
  Fenced out{*std::move(module), {}};
  TransformOptions options;
  options.fence = true;
  out.report = TransformModule(out.module, options);
  return out;
}

constexpr char kRegs[] =
    ".reg .b64 %rd<4>;\n.reg .b32 %r<4>;\n.reg .pred %p<2>;\n.reg .f32 %f<4>;\n";

// The kernel stays unfenced: no fence parameter, the reason recorded.
void CheckRefused(const Fenced& f, const std::string& reason) {
  const KernelForms& forms = f.Forms();
  CHECK_FALSE(forms.fenced);
  INFO(forms.fence_refusal);
  CHECK(forms.fence_refusal.find(reason) != std::string::npos);
  CHECK(f.module.FindFunction("k")->params.size() == 1);
}

// How many checks (each ends in one selp of the address) fencing `body` makes.
int Checks(const std::string& body) {
  Fenced f = Fence(std::string(kRegs) + "ld.param.u64 %rd1, [p];\n" + body + "\nret;");
  REQUIRE(f.Forms().fenced);
  return f.Count("k", "selp.b64");
}

TEST_CASE(
    "unguarded global accesses through one unchanged base in straight-line code share a check") {
  // One base, offsets spanning at most 4 KiB, negative ones too: one check.
  CHECK(Checks("ld.global.u32 %r1, [%rd1];\nst.global.u32 [%rd1+4088], %r1;\n"
               "atom.global.add.u32 %r2, [%rd1+-8], 1;") == 1);
  // A wider span splits; a redefined base, a label, a branch or a guard ends the group.
  CHECK(Checks("ld.global.u32 %r1, [%rd1];\nst.global.u32 [%rd1+4104], %r1;") == 2);
  CHECK(Checks("ld.global.u32 %r1, [%rd1];\nadd.s64 %rd1, %rd1, 4;\n"
               "st.global.u32 [%rd1], %r1;") == 2);
  CHECK(Checks("ld.global.u32 %r1, [%rd1];\nL:\nst.global.u32 [%rd1], %r1;") == 2);
  CHECK(Checks("ld.global.u32 %r1, [%rd1];\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 bra L;\n"
               "st.global.u32 [%rd1], %r1;\nL:") == 2);
  CHECK(Checks("ld.global.u32 %r1, [%rd1];\nsetp.eq.u32 %p1, %r1, 0;\n"
               "@%p1 st.global.u32 [%rd1], %r1;") == 2);
  // A load into the base register itself still uses the checked value; the next access is
  // checked again.
  CHECK(Checks("ld.global.u64 %rd2, [%rd1];\nld.global.u64 %rd1, [%rd1+8];\n"
               "st.global.u64 [%rd1], %rd2;") == 2);
  // Generic accesses are checked each (isspacep decides per address).
  CHECK(Checks("ld.u32 %r1, [%rd1];\nst.u32 [%rd1+4], %r1;") == 2);
  // Two bases interleaved: one check each.
  CHECK(Checks("ld.param.u64 %rd2, [p];\nld.global.u32 %r1, [%rd1];\n"
               "ld.global.u32 %r2, [%rd2];\nst.global.u32 [%rd1+4], %r2;\n"
               "st.global.u32 [%rd2+4], %r1;") == 2);
}

TEST_CASE("fencing appends one 56-byte parameter and checks every global access") {
  Fenced f = Fence(std::string(kRegs) + R"(
ld.param.u64 %rd1, [p];
ld.global.u32 %r1, [%rd1];
ld.u32 %r2, [%rd1+8];
st.global.v2.u32 [%rd1+16], {%r1, %r2};
atom.global.add.u32 %r3, [%rd1], 1;
red.add.u32 [%rd1], 1;
ldu.global.u32 %r3, [%rd1];
cp.async.ca.shared.global [tile], [%rd1], 16;
discard.global.L2 [%rd1], 128;
prefetch.global.L2 [%rd1];
ld.shared.u32 %r3, [tile];
ld.local.u32 %r3, [%rd1];
txq.width.b32 %r3, [%rd1];
ret;)",
                   ".shared .align 16 .b8 tile[64];");
  const KernelForms& forms = f.Forms();
  REQUIRE(forms.fenced);
  CHECK(forms.fence_refusal.empty());
  auto sig = ComputeSignature(*f.module.FindFunction("k"));
  REQUIRE(sig.ok());
  REQUIRE(sig->params.size() == 2);
  CHECK(sig->params[1].size == 56);
  CHECK(sig->params[1].alignment == 8);
  CHECK(sig->params[1].offset == 8);
  // The six global data accesses through %rd1 share one check of their span (fence_spans.h);
  // the two generic ones and the prefetch hint are checked each. One flag store per check (not
  // for the hint), one isspacep per generic access, one branch past the other ranges per check.
  CHECK(f.Count("k", "st.global.u32") == 3);
  CHECK(f.Count("k", "isspacep.global") == 2);
  CHECK(f.Count("k", "selp.b64") == 4);
  CHECK(f.Count("k", "bra") == 4);
  // Range 0 is read at entry, ranges 1 and 2 and the flag (five values) past each branch.
  CHECK(f.Count("k", "ld.param.u64") == 2 + 1 + 5 * 4);
  // Variants take the fence after the original parameters.
  for (const std::string& variant : {forms.sliced, forms.preemptible}) {
    REQUIRE_FALSE(variant.empty());
    auto v = ComputeSignature(*f.module.FindFunction(variant));
    REQUIRE(v.ok());
    CHECK(v->params[1].size == 56);
    CHECK(v->params.size() == 6);
  }
}

// The kernel's body as lines: instructions spelled with their guard (`@%p bra`, `ld.param.u64
// [__tally_fence+8]` with the address of a parameter load), labels as `NAME:`.
std::vector<std::string> Lines(const Fenced& f) {
  std::vector<std::string> lines;
  for (const Statement& s : f.module.FindFunction("k")->body->statements) {
    if (const auto* label = std::get_if<Label>(&s.value)) lines.push_back(label->name + ":");
    const auto* inst = std::get_if<Instruction>(&s.value);
    if (inst == nullptr) continue;
    std::string line = inst->guard.empty() ? "" : "@" + inst->guard + " ";
    line += inst->opcode;
    for (const auto& m : inst->modifiers) line += "." + m;
    if (inst->opcode == "ld" && inst->HasModifier("param")) {
      const Operand& address = inst->operands[1].elements[0];
      line += " " + address.name + "+" + std::to_string(address.offset);
    }
    lines.push_back(line);
  }
  return lines;
}

TEST_CASE("a check compares with range 0 and reads the other ranges only when that fails") {
  Fenced f = Fence(std::string(kRegs) +
                   "ld.param.u64 %rd1, [p];\nst.global.u32 [%rd1+8], 1;\n"
                   "ret;");
  REQUIRE(f.Forms().fenced);
  const std::vector<std::string> expected = {
      // Entry: range 0 only.
      "ld.param.u64 __tally_fence+0", "ld.param.u64 __tally_fence+24", "ld.param.u64 p+0",
      // The fast path: the address, its distance from base[0], in range 0: on to the access.
      "add.s64", "sub.s64", "setp.lt.u64", "@%__tally_fence_ok bra",
      // Outside range 0: ranges 1 and 2 and the flag read, compared, redirected, flagged.
      "ld.param.u64 __tally_fence+8", "ld.param.u64 __tally_fence+32",
      "ld.param.u64 __tally_fence+16", "ld.param.u64 __tally_fence+40",
      "ld.param.u64 __tally_fence+48", "sub.s64", "setp.ge.u64", "sub.s64", "setp.ge.and.u64",
      "selp.b64", "@%__tally_fence_bad st.global.u32", "__tally_fence_checked:", "st.global.u32",
      "ret"};
  CHECK(Lines(f) == expected);
}

TEST_CASE("accesses by name inside a .global variable of the module are not checked") {
  auto checks = [](const std::string& access) {
    Fenced f = Fence(std::string(kRegs) + access + "\nret;",
                     ".global .align 4 .u32 g[4];\n.extern .global .align 4 .u32 e[4];\n"
                     ".global .align 4 .b8 open[];\n.shared .align 4 .u32 s[4];");
    REQUIRE(f.Forms().fenced);
    return f.Count("k", "selp.b64");
  };
  CHECK(checks("ld.global.u32 %r1, [g];") == 0);
  CHECK(checks("st.global.u32 [g+12], 1;") == 0);
  CHECK(checks("atom.global.add.u32 %r1, [g+8], 1;") == 0);
  CHECK(checks("ld.u32 %r1, [g+4];") == 0);  // a generic access by the name of a global
  // Past either end, an extern or unsized variable, a shared one: checked as before.
  CHECK(checks("st.global.u32 [g+16], 1;") == 1);
  CHECK(checks("st.global.u32 [g+-4], 1;") == 1);
  CHECK(checks("ld.global.u32 %r1, [e];") == 1);
  CHECK(checks("ld.global.u32 %r1, [open];") == 1);
  CHECK(checks("ld.shared.u32 %r1, [s];") == 0);
}

// How many checks fencing `body` makes, and how many of them compare with range 2 first (their
// fast path: `setp.lt` against range 2's size).
struct VariableChecks {
  int checks, range2_first;
  bool operator==(const VariableChecks&) const = default;
};
std::ostream& operator<<(std::ostream& os, const VariableChecks& c) {
  return os << c.checks << " checks, " << c.range2_first << " range 2 first";
}
VariableChecks ChecksWithVariables(const std::string& body) {
  Fenced f = Fence(std::string(kRegs) + "ld.param.u64 %rd3, [p];\n" + body + "\nret;",
                   ".global .align 4 .u32 g[4];\n.extern .global .align 4 .u32 e[4];");
  REQUIRE(f.Forms().fenced);
  VariableChecks out{f.Count("k", "selp.b64"), 0};
  passes::ForEachInstruction(f.module.FindFunction("k")->body->statements,
                             [&](const Instruction& inst) {
                               if (inst.opcode == "setp" && inst.HasModifier("lt") &&
                                   inst.operands[2].name == "%__tally_fence_size2") {
                                 ++out.range2_first;
                               }
                             });
  return out;
}

TEST_CASE("accesses through a register holding a module variable's address plus a constant") {
  // mov of the variable, then mov, cvta.global, cvta.to.global, add or sub of immediates, in
  // straight-line code: a start inside the variable needs no check.
  CHECK(ChecksWithVariables("mov.u64 %rd1, g;\nld.global.u32 %r1, [%rd1];").checks == 0);
  CHECK(ChecksWithVariables("mov.u64 %rd1, g;\ncvta.global.u64 %rd2, %rd1;\n"
                            "st.u32 [%rd2+12], 1;")
            .checks == 0);
  CHECK(ChecksWithVariables("mov.u64 %rd1, g;\ncvta.to.global.u64 %rd2, %rd1;\n"
                            "add.s64 %rd2, %rd2, 16;\nsub.s64 %rd1, %rd2, 8;\n"
                            "atom.global.add.u32 %r1, [%rd1+-4], 1;")
            .checks == 0);
  CHECK(ChecksWithVariables("mov.u64 %rd1, g;\nadd.s64 %rd2, 4, %rd1;\nmov.b64 %rd1, %rd2;\n"
                            "ld.global.u32 %r1, [%rd1+8];")
            .checks == 0);
  // Past either end: checked, range 2 first (the register comes from the variable).
  CHECK(ChecksWithVariables("mov.u64 %rd1, g;\nst.global.u32 [%rd1+16], 1;") ==
        VariableChecks{1, 1});
  CHECK(ChecksWithVariables("mov.u64 %rd1, g;\nsub.s64 %rd1, %rd1, 4;\nst.global.u32 [%rd1], 1;") ==
        VariableChecks{1, 1});
  // An index added: checked, range 2 first.
  CHECK(ChecksWithVariables("mov.u64 %rd1, g;\nadd.s64 %rd2, %rd1, %rd3;\n"
                            "ld.global.u32 %r1, [%rd2];") == VariableChecks{1, 1});
  // An extern variable's size is unknown; a pointer loaded from memory is no address of one.
  CHECK(ChecksWithVariables("mov.u64 %rd1, e;\nld.global.u32 %r1, [%rd1];") ==
        VariableChecks{1, 0});
  CHECK(ChecksWithVariables("ld.global.u64 %rd1, [g];\nld.global.u32 %r1, [%rd1];") ==
        VariableChecks{1, 0});
  // Nothing else is known: another path may arrive at a label with any value in the register
  // (checked, range 2 first since one definition comes from the variable); a guarded or any
  // other write, a declaration of the name in an inner block (another, uninitialised register),
  // a definition inside a block (its names may be the block's own) all leave it checked.
  CHECK(ChecksWithVariables("mov.u64 %rd1, g;\nL:\nld.global.u32 %r1, [%rd1];") ==
        VariableChecks{1, 1});
  CHECK(ChecksWithVariables("setp.eq.u64 %p1, %rd3, 0;\n@%p1 mov.u64 %rd1, g;\n"
                            "ld.global.u32 %r1, [%rd1];")
            .checks == 1);
  CHECK(ChecksWithVariables("mov.u64 %rd1, g;\nld.param.u64 %rd1, [p];\n"
                            "ld.global.u32 %r1, [%rd1];")
            .checks == 1);
  CHECK(ChecksWithVariables("mov.u64 %rd1, g;\nshl.b64 %rd1, %rd1, 1;\n"
                            "ld.global.u32 %r1, [%rd1];")
            .checks == 1);
  CHECK(ChecksWithVariables("mov.u64 %rd1, g;\n{\n.reg .b64 %rd1;\nld.global.u32 %r1, [%rd1];\n}")
            .checks == 1);
  CHECK(ChecksWithVariables("{\n.reg .b64 %rd1;\nmov.u64 %rd1, g;\n}\nld.global.u32 %r1, [%rd1];")
            .checks == 1);
  // A name of the function's own hides the module's variable.
  CHECK(ChecksWithVariables(".local .align 4 .b8 g[16];\nmov.u64 %rd1, g;\n"
                            "ld.global.u32 %r1, [%rd1];")
            .checks == 1);
}

TEST_CASE("an address computed from a module variable compares with range 2 first") {
  Fenced f = Fence(std::string(kRegs) +
                       "ld.param.u64 %rd3, [p];\nmov.u64 %rd1, g;\nadd.s64 %rd2, %rd1, %rd3;\n"
                       "st.global.u32 [%rd2], 1;\nret;",
                   ".global .align 4 .u32 g[4];");
  REQUIRE(f.Forms().fenced);
  const std::vector<std::string> expected = {
      // Entry: ranges 0 and 2.
      "ld.param.u64 __tally_fence+0", "ld.param.u64 __tally_fence+24",
      "ld.param.u64 __tally_fence+16", "ld.param.u64 __tally_fence+40", "ld.param.u64 p+0",
      "mov.u64", "add.s64",
      // The fast path against range 2.
      "mov.u64", "sub.s64", "setp.lt.u64", "@%__tally_fence_ok bra",
      // Outside range 2: range 1 and the flag read, ranges 0 and 1 compared.
      "ld.param.u64 __tally_fence+8", "ld.param.u64 __tally_fence+32",
      "ld.param.u64 __tally_fence+48", "sub.s64", "setp.ge.u64", "sub.s64", "setp.ge.and.u64",
      "selp.b64", "@%__tally_fence_bad st.global.u32", "__tally_fence_checked:", "st.global.u32",
      "ret"};
  CHECK(Lines(f) == expected);
  const std::string printed = PrintModule(f.module);
  CHECK(printed.find("sub.s64\t%__tally_fence_difference, %__tally_fence_address, "
                     "%__tally_fence_base2;") < printed.find("@%__tally_fence_ok bra"));

  // Accesses through such a register that share one check of their span: range 2 first too.
  Fenced span = Fence(std::string(kRegs) +
                          "ld.param.u64 %rd3, [p];\nmov.u64 %rd1, g;\nadd.s64 %rd2, %rd1, %rd3;\n"
                          "ld.global.u32 %r1, [%rd2];\nst.global.u32 [%rd2+8], %r1;\nret;",
                      ".global .align 4 .u32 g[4];");
  REQUIRE(span.Forms().fenced);
  CHECK(span.Count("k", "selp.b64") == 1);
  std::string first_size;
  passes::ForEachInstruction(span.module.FindFunction("k")->body->statements,
                             [&](const Instruction& inst) {
                               if (first_size.empty() && inst.opcode == "setp")
                                 first_size = inst.operands[2].name;
                             });
  CHECK(first_size == "%__tally_fence_size2");
}

TEST_CASE("a vprintf format made from a string variable is passed unchecked") {
  Fenced f = Fence(std::string(kRegs) + R"(
mov.u64 %rd1, $str;
cvta.global.u64 %rd2, %rd1;
{
.param .b64 param0;
st.param.b64 [param0], %rd2;
.param .b64 param1;
st.param.b64 [param1], 0;
.param .b32 retval0;
call.uni (retval0), vprintf, (param0, param1);
}
ret;)",
                   ".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);\n"
                   ".global .align 1 .b8 $str[4] = {104, 105, 10, 0};");
  REQUIRE(f.Forms().fenced);
  CHECK(f.Count("k", "isspacep.global") == 0);
  CHECK(PrintModule(f.module).find("st.param.b64\t[param0], %rd2;") != std::string::npos);
}

TEST_CASE("a guarded generic access that does not run takes the fast path") {
  // ok = in range 0, or no global address (isspacep negated), or the guard false (negated in
  // setp's third operand; a negated guard enters as it is).
  for (const char* guard : {"@%p1", "@!%p1"}) {
    INFO(guard);
    Fenced f = Fence(std::string(kRegs) + "ld.param.u64 %rd1, [p];\nsetp.eq.u64 %p1, %rd1, 0;\n" +
                     guard + " st.u32 [%rd1], 1;\nret;");
    REQUIRE(f.Forms().fenced);
    const std::vector<std::string> lines = Lines(f);
    const auto at = std::find(lines.begin(), lines.end(), "isspacep.global");
    REQUIRE(std::distance(at, lines.end()) > 5);
    CHECK(std::vector<std::string>(at, at + 6) ==
          std::vector<std::string>{"isspacep.global", "not.pred", "sub.s64", "setp.lt.or.u64",
                                   "or.pred", "@%__tally_fence_ok bra"});
    const Function* k = f.module.FindFunction("k");
    bool found = false;
    passes::ForEachInstruction(k->body->statements, [&](const Instruction& inst) {
      if (inst.opcode != "setp" || !inst.HasModifier("lt")) return;
      found = true;
      CHECK(inst.operands[3].name == "%p1");
      CHECK(inst.operands[3].negated == (std::string(guard) == "@%p1"));
    });
    CHECK(found);
  }
}

TEST_CASE("generic addresses of kernel parameters pass where the module makes them") {
  Fenced f = Fence(std::string(kRegs) + R"(
mov.u64 %rd1, p;
cvta.param.u64 %rd2, %rd1;
ld.u64 %rd3, [%rd2];
ret;)");
  REQUIRE(f.Forms().fenced);
  CHECK(f.Count("k", "isspacep.global") == 1);
  CHECK(f.Count("k", "isspacep.param") == 1);
  Fenced plain = Fence(std::string(kRegs) + "ld.u64 %rd3, [%rd2];\nret;");
  CHECK(plain.Count("k", "isspacep.param") == 0);
}

TEST_CASE("unfenced output is unchanged when fencing is off") {
  const std::string text =
      ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
      ".reg .b64 %rd1;\n.reg .b32 %r1;\nld.param.u64 %rd1, [p];\nld.global.u32 %r1, "
      "[%rd1];\nret;\n}\n";
  auto a = ParseModuleOrError(text);
  auto b = ParseModuleOrError(text);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  TransformReport report = TransformModule(*a, {});
  TransformModule(*b, TransformOptions{true, true, false});
  CHECK(PrintModule(*a) == PrintModule(*b));
  CHECK_FALSE(report.kernels[0].fenced);
  CHECK(report.kernels[0].fence_refusal.empty());
}

TEST_CASE("fenced callees get the fence as a parameter, and calls pass it") {
  Fenced f = Fence(std::string(kRegs) + R"(
ld.param.u64 %rd1, [p];
{
  .param .b64 param0;
  st.param.b64 [param0], %rd1;
  call.uni g, (param0);
}
ret;)",
                   ".func g(.param .b64 q)\n{\n.reg .b64 %rd1;\n.reg .b32 %r1;\n"
                   "ld.param.u64 %rd1, [q];\nst.u32 [%rd1], %r1;\nret;\n}\n");
  REQUIRE(f.Forms().fenced);
  const Function* clone = f.module.FindFunction("g__tally_fence");
  REQUIRE(clone != nullptr);
  REQUIRE(clone->params.size() == 2);
  CHECK(clone->params[1].dims == std::vector<std::optional<uint64_t>>{56});
  CHECK(f.Count("g__tally_fence", "isspacep.global") == 1);
  CHECK(f.Count("g", "isspacep.global") == 0);  // the original stays for unfenced kernels
  CHECK(f.Count("k", "st.param.b64") == 1 + 7);
  std::string printed = PrintModule(f.module);
  CHECK(printed.find("call.uni\tg__tally_fence, (param0, __tally_fence_arg);") !=
        std::string::npos);
}

TEST_CASE("a called function that touches no memory through the fence is called as it is") {
  // fib recurses and computes; a and b call each other and only a stores: b still passes the
  // fence on to a.
  constexpr char kFunctions[] = R"(
.func (.param .b32 r) fib(.param .b32 n)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [n];
  {
    .param .b32 n1;
    st.param.b32 [n1], %r1;
    .param .b32 r1;
    call.uni (r1), fib, (n1);
    ld.param.b32 %r2, [r1];
  }
  st.param.b32 [r], %r2;
  ret;
}
.func b(.param .b64 q);
.func a(.param .b64 q)
{
  .reg .b64 %rd1;
  ld.param.u64 %rd1, [q];
  st.u32 [%rd1], 1;
  {
    .param .b64 q1;
    st.param.b64 [q1], %rd1;
    call.uni b, (q1);
  }
  ret;
}
.func b(.param .b64 q)
{
  .reg .b64 %rd1;
  ld.param.u64 %rd1, [q];
  {
    .param .b64 q1;
    st.param.b64 [q1], %rd1;
    call.uni a, (q1);
  }
  ret;
}
)";
  Fenced f = Fence(std::string(kRegs) + R"(
ld.param.u64 %rd1, [p];
{
  .param .b32 n1;
  st.param.b32 [n1], 5;
  .param .b32 r1;
  call.uni (r1), fib, (n1);
}
{
  .param .b64 q1;
  st.param.b64 [q1], %rd1;
  call.uni b, (q1);
}
ret;)",
                   kFunctions);
  REQUIRE(f.Forms().fenced);
  CHECK(f.module.FindFunction("fib__tally_fence") == nullptr);
  CHECK(f.module.FindFunction("a__tally_fence") != nullptr);
  CHECK(f.module.FindFunction("b__tally_fence") != nullptr);
  const std::string printed = PrintModule(f.module);
  CHECK(printed.find("call.uni\t(r1), fib, (n1);") != std::string::npos);
  CHECK(printed.find("call.uni\tb__tally_fence, (q1, __tally_fence_arg);") != std::string::npos);
  CHECK(f.Count("k", "st.param.b64") == 1 + 7);
}

TEST_CASE("wmma tiles are checked at their first and last byte, with the dense stride as sink") {
  Fenced f = Fence(
      ".reg .b64 %rd<2>;\n.reg .b32 %r<9>;\n.reg .f32 %f<8>;\n"
      "ld.param.u64 %rd0, [p];\n"
      "wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r0, %r1, %r2, %r3, "
      "%r4, %r5, %r6, %r7}, [%rd0], %r8;\n"
      "wmma.store.d.sync.aligned.col.m16n16k16.f32 [%rd0+1024], {%f0, %f1, %f2, "
      "%f3, %f4, %f5, %f6, %f7}, 32;\nret;");
  const KernelForms& forms = f.Forms();
  INFO(forms.fence_refusal);
  CHECK(forms.fenced);
  CHECK(f.Count("k", "mul.wide.u32") == 2);        // the stride times the lines before the last
  CHECK(f.Count("k", "setp.ge.or.u64") == 2 * 3);  // the last byte, in each range
  CHECK(f.Count("k", "setp.lt.or.s32") == 2);      // a negative stride is outside
  CHECK(f.Count("k", "selp.b32") == 2);            // the dense stride for the sink
  CHECK(f.Count("k", "isspacep.global") == 1);     // the generic store only
  CHECK(f.Count("k", "st.global.u32") == 2);       // the flag
  std::string printed = PrintModule(f.module);
  // The store's last byte: 15 lines of stride 4 bytes on, plus one line of 16 floats.
  CHECK(printed.find("mul.wide.u32\t%__tally_fence_end, %__tally_fence_stride, 60;") !=
        std::string::npos);
  CHECK(printed.find("add.s64\t%__tally_fence_end, %__tally_fence_end, 63;") != std::string::npos);
  CHECK(printed.find("selp.b32\t%__tally_fence_stride, 16, %__tally_fence_stride, "
                     "%__tally_fence_bad;") != std::string::npos);
  CHECK(printed.find("[%__tally_fence_address], {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, "
                     "%__tally_fence_stride;") != std::string::npos);
}

TEST_CASE("__assertfail's string pointers are fenced before they are passed") {
  Fenced f = Fence(kRegs + std::string("{\n.param .b64 param0;\nst.param.b64 [param0+0], %rd0;\n"
                                       ".param .b64 param1;\nst.param.b64 [param1+0], %rd1;\n"
                                       ".param .b32 param2;\nst.param.b32 [param2+0], 1;\n"
                                       ".param .b64 param3;\nst.param.b64 [param3+0], %rd2;\n"
                                       ".param .b64 param4;\nst.param.b64 [param4+0], 1;\n"
                                       "call.uni __assertfail, (param0, param1, param2, param3, "
                                       "param4);\n}\nret;"),
                   ".extern .func __assertfail(.param .b64 m, .param .b64 f, .param .b32 l, "
                   ".param .b64 fn, .param .b64 c);");
  const KernelForms& forms = f.Forms();
  INFO(forms.fence_refusal);
  CHECK(forms.fenced);
  CHECK(f.Count("k", "isspacep.global") == 3);  // message, file, function: not line, char size
  CHECK(f.Count("k", "st.global.u32") == 3);
  std::string printed = PrintModule(f.module);
  CHECK(printed.find("st.param.b64\t[param0], %__tally_fence_address;") != std::string::npos);
  CHECK(printed.find("st.param.b64\t[param4], 1;") != std::string::npos);
}

TEST_CASE("kernels that reach memory without a checkable address are refused, with a reason") {
  const std::string regs = kRegs;
  SECTION("texture") {
    CheckRefused(Fence(regs + ".reg .b64 %t;\ntex.2d.v4.f32.f32 {%f0, %f1, %f2, %f3}, [%t, {%f0, "
                              "%f1}];\nret;"),
                 "texture/surface instruction tex");
  }
  SECTION("surface store") {
    CheckRefused(Fence(regs + ".reg .b64 %s;\nsust.b.1d.b32.trap [%s, {%r0}], {%r1};\nret;"),
                 "texture/surface instruction sust");
  }
  SECTION("bulk copy") {
    CheckRefused(Fence(regs + "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                              "[%rd0], [%rd1], %r0, [%rd2];\nret;"),
                 "bulk or tensor copy");
  }
  SECTION("multimem") {
    CheckRefused(Fence(regs + "multimem.red.relaxed.gpu.global.add.u32 [%rd0], %r0;\nret;"),
                 "multimem");
  }
  SECTION("malloc") {
    CheckRefused(Fence(regs + "{\n.param .b64 param0;\nst.param.b64 [param0], 16;\n.param .b64 "
                              "retval0;\ncall.uni (retval0), malloc, (param0);\n}\nret;",
                       ".extern .func (.param .b64 r) malloc(.param .b64 n);"),
                 "calls external function malloc");
  }
  SECTION("indirect call") {
    CheckRefused(Fence(regs + "proto: .callprototype ()_ ();\ncall %rd0, proto;\nret;"),
                 "indirect call");
  }
  SECTION("wmma load without a stride (the default is not assumed)") {
    CheckRefused(Fence(".reg .b64 %rd<2>;\n.reg .b32 %r<9>;\n"
                       "wmma.load.a.sync.aligned.row.m16n16k16.f16 {%r0, %r1, %r2, %r3, %r4, "
                       "%r5, %r6, %r7}, [%rd0];\nret;"),
                 "without a stride operand");
  }
  SECTION("wmma of sub-byte elements") {
    CheckRefused(Fence(".reg .b64 %rd<2>;\n.reg .b32 %r<9>;\n"
                       "wmma.load.a.sync.aligned.row.m8n8k32.s4 {%r0}, [%rd0], 32;\nret;"),
                 "a tile shape or type the fence does not know");
  }
  SECTION("assert with a pointer argument stored from an immediate") {
    CheckRefused(Fence(regs + "{\n.param .b64 param0;\nst.param.b64 [param0], 0;\n.param .b64 "
                              "param1;\nst.param.b64 [param1], %rd0;\n.param .b32 param2;\n"
                              "st.param.b32 [param2], 1;\n.param .b64 param3;\nst.param.b64 "
                              "[param3], %rd0;\n.param .b64 param4;\nst.param.b64 [param4], 1;\n"
                              "call.uni __assertfail, (param0, param1, param2, param3, param4);\n}"
                              "\nret;",
                       ".extern .func __assertfail(.param .b64 m, .param .b64 f, .param .b32 l, "
                       ".param .b64 fn, .param .b64 c);"),
                 "pointer argument of __assertfail/vprintf not stored from a 64-bit register");
  }
  SECTION("grid-sync workspace") {
    CheckRefused(Fence(regs + "mov.u32 %r0, %envreg1;\nret;"), "reads %envreg1");
  }
  SECTION("32-bit register as an address") {
    CheckRefused(Fence(regs + "ld.global.u32 %r1, [%r0];\nret;"), "not a 64-bit address");
  }
  SECTION("in a called function: the reason names it") {
    CheckRefused(Fence(regs + "call.uni g, ();\nret;",
                       ".func g()\n{\n.reg .b64 %t;\n.reg .f32 %f<4>;\ntex.1d.v4.f32.s32 {%f0, "
                       "%f1, %f2, %f3}, [%t, {%f0}];\nret;\n}\n"),
                 "in called function g");
  }
}

}  // namespace
}  // namespace tally::ptx
