// Parser tests: the IR built for each syntactic form, diagnostics with line:column, recovery,
// and hostile input (deep nesting, huge constants).
#include "ptx_transform/parser.h"

#include <catch2/catch.hpp>

#include "ptx_transform/printer.h"
#include "ptx_transform/test_util.h"

namespace tally::ptx {
namespace {

using testing::ReadFile;

// Wraps a kernel body in a minimal module.
std::string Kernel(const std::string& body) {
  return ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n" + body + "\n}\n";
}

const Instruction& NthInstruction(const Module& m, size_t n) {
  const Function* f = m.FindFunction("k");
  REQUIRE(f != nullptr);
  size_t seen = 0;
  for (const auto& s : f->body->statements) {
    if (const auto* inst = std::get_if<Instruction>(&s.value)) {
      if (seen++ == n) return *inst;
    }
  }
  FAIL("no instruction " << n);
  throw;
}

Module ParseClean(const std::string& source) {
  DiagnosticSink sink;
  Module m = ParseModule(source, sink);
  INFO(sink.Format("<test>"));
  REQUIRE_FALSE(sink.HasErrors());
  return m;
}

TEST_CASE("module header") {
  Module m = ParseClean(".version 9.1\n.target sm_90a, debug\n.address_size 64\n");
  CHECK(m.version_major == 9);
  CHECK(m.version_minor == 1);
  CHECK(m.targets == std::vector<std::string>{"sm_90a", "debug"});
  CHECK(m.address_size == 64);
}

TEST_CASE("the syntax tour module parses into the expected IR") {
  Module m = ParseClean(ReadFile(TALLY_PTX_TESTDATA "/syntax_tour.ptx"));
  const Function* tour = m.FindFunction("tour");
  REQUIRE(tour != nullptr);
  CHECK(tour->is_entry);
  CHECK(tour->linkage == "visible");
  REQUIRE(tour->params.size() == 3);
  CHECK(tour->params[0].is_ptr);
  CHECK(tour->params[0].ptr_space == "global");
  CHECK(tour->params[0].ptr_align == 16u);
  CHECK(tour->params[2].align == 8u);
  CHECK(tour->params[2].dims == std::vector<std::optional<uint64_t>>{24});
  REQUIRE(tour->performance_directives.size() == 2);
  CHECK(tour->performance_directives[0].name == "maxntid");
  CHECK(tour->performance_directives[0].args == "128, 1, 1");

  const Function* twice = m.FindFunction("twice");
  REQUIRE(twice != nullptr);
  CHECK(twice->has_return_list);
  CHECK(twice->returns.size() == 1);
  const Function* vprintf = m.FindFunction("vprintf");
  REQUIRE(vprintf != nullptr);
  CHECK_FALSE(vprintf->body.has_value());
  CHECK(vprintf->linkage == "extern");

  // Globals: initialisers, attributes, multi-dimensional arrays, extern unsized arrays.
  std::vector<const VarDecl*> globals;
  for (const auto& item : m.items) {
    if (const auto* v = std::get_if<VarDecl>(&item.value)) globals.push_back(v);
  }
  REQUIRE(globals.size() == 7);
  CHECK(globals[0]->initializer->int_value == 7);
  const Expr& table = *globals[1]->initializer;
  REQUIRE(table.kind == Expr::Kind::kList);
  CHECK(table.children[0].kind == Expr::Kind::kCall);
  CHECK(table.children[0].text == "generic");
  CHECK(table.children[1].kind == Expr::Kind::kBinary);
  const Expr& weights = *globals[2]->initializer;
  CHECK(weights.children[0].float_form == Expr::FloatForm::kHexF32);
  CHECK(weights.children[0].float_bits == 0x3F800000u);
  CHECK(weights.children[2].float_form == Expr::FloatForm::kDecimal);
  CHECK(globals[3]->dims == std::vector<std::optional<uint64_t>>{2, 2});
  CHECK(globals[3]->initializer->children[1].children[1].int_value == 0x7FFFFFFF);
  CHECK(globals[4]->attributes == std::vector<std::string>{"managed"});
  CHECK(globals[6]->linkage == "extern");
  CHECK(globals[6]->dims == std::vector<std::optional<uint64_t>>{std::nullopt});

  // Walk the body for a few interesting statements.
  const auto& body = tour->body->statements;
  auto find = [&](auto pred) -> const Instruction* {
    for (const auto& s : body) {
      const auto* inst = std::get_if<Instruction>(&s.value);
      if (inst != nullptr && pred(*inst)) return inst;
    }
    return nullptr;
  };
  const Instruction* st = find([](const Instruction& i) {
    return i.opcode == "st" && i.HasModifier("shared") && i.operands[0].elements[0].offset != 0 &&
           i.operands[0].elements[0].name == "%rd5";
  });
  REQUIRE(st != nullptr);
  CHECK(st->operands[0].elements[0].offset == -4);

  const Instruction* setp = find([](const Instruction& i) { return i.HasModifier("and"); });
  REQUIRE(setp != nullptr);
  CHECK(setp->operands[0].kind == Operand::Kind::kPair);
  CHECK(setp->operands[2].expr->int_value == -1);
  CHECK(setp->operands[3].negated);

  const Instruction* ld4 =
      find([](const Instruction& i) { return i.HasModifier("L1::no_allocate"); });
  REQUIRE(ld4 != nullptr);
  CHECK(ld4->modifiers == std::vector<std::string>{"global", "nc", "L1::no_allocate", "v4", "u32"});
  CHECK(ld4->operands[0].elements[3].kind == Operand::Kind::kSink);

  const Instruction* guarded = find([](const Instruction& i) { return i.guard_negated; });
  REQUIRE(guarded != nullptr);
  CHECK(guarded->guard == "%p3");
  CHECK(guarded->operands[2].expr->int_value == -2147483648LL);

  const Instruction* tid =
      find([](const Instruction& i) { return i.opcode == "mov" && i.operands[1].name == "%tid"; });
  REQUIRE(tid != nullptr);
  CHECK(tid->operands[1].component == 'x');

  size_t blocks = 0, labels = 0, locs = 0;
  for (const auto& s : body) {
    blocks += std::holds_alternative<Block>(s.value);
    labels += std::holds_alternative<Label>(s.value);
    if (const auto* d = std::get_if<Directive>(&s.value); d != nullptr && d->name == "loc") {
      ++locs;
      CHECK(d->args == "1 10 3");
    }
  }
  CHECK(blocks == 2);
  CHECK(labels == 5);  // $L__loop, ts, $L__a, $L__b, $L__exit
  CHECK(locs == 1);

  const Block* call_block = nullptr;
  for (const auto& s : body) {
    if (const auto* b = std::get_if<Block>(&s.value)) call_block = b;  // the second one
  }
  REQUIRE(call_block != nullptr);
  const auto& call = std::get<Instruction>(call_block->statements[3].value);
  CHECK(call.opcode == "call");
  CHECK(call.operands[0].kind == Operand::Kind::kParenList);
  CHECK(call.operands[1].name == "twice");
  CHECK(call.operands[2].elements[0].name == "call_arg");
}

TEST_CASE("printing and parsing again gives the same IR and the same text") {
  std::string source = ReadFile(TALLY_PTX_TESTDATA "/syntax_tour.ptx");
  Module first = ParseClean(source);
  std::string printed = PrintModule(first);
  Module second = ParseClean(printed);
  CHECK(first == second);
  CHECK(PrintModule(second) == printed);
}

// Found by the fuzzer: `+%r2` is an expression whose printed form `%r2` read back as a
// register; expressions that start with a name keep their parentheses when printed.
TEST_CASE("expression operands that start with a name print back to the same IR") {
  for (std::string body : {"\tmov.u32 %r1, +%r2;", "\tmov.u32 %r1, (%r2)+4;",
                           "\tmov.u32 %r1, (%r2)*2;", "\tld.u32 %r1, [(%rd1)];",
                           "\tld.u32 %r1, [+generic(g)];", "\tmov.u64 %rd1, generic(g)+4;"}) {
    INFO(body);
    Module first = ParseClean(Kernel(body));
    std::string printed = PrintModule(first);
    Module second = ParseClean(printed);
    CHECK(first == second);
    CHECK(PrintModule(second) == printed);
  }
}

// PTX ISA, "Identifiers": WARP_SZ is the one predefined constant; nvcc writes it for warpSize.
TEST_CASE("WARP_SZ is a constant expression that prints as written") {
  for (std::string body : {"\tmov.u32 %r1, WARP_SZ;", "\tmul.lo.u32 %r1, %r2, WARP_SZ*2;",
                           "\tadd.u32 %r1, %r2, WARP_SZ-1;"}) {
    INFO(body);
    Module first = ParseClean(Kernel(body));
    std::string printed = PrintModule(first);
    CHECK(printed.find("WARP_SZ") != std::string::npos);
    Module second = ParseClean(printed);
    CHECK(first == second);
    CHECK(PrintModule(second) == printed);
  }
  const Module mov_module = ParseClean(Kernel("\tmov.u32 %r1, WARP_SZ;"));
  const Instruction& mov = NthInstruction(mov_module, 0);
  REQUIRE(mov.operands[1].kind == Operand::Kind::kImmediate);
  CHECK(mov.operands[1].expr->kind == Expr::Kind::kSymbol);
  CHECK(PrintOperand(mov.operands[1]) == "WARP_SZ");
  // An address offset is a number: WARP_SZ there is its value.
  const Module ld_module = ParseClean(Kernel("\tld.u32 %r1, [%rd1+WARP_SZ];"));
  CHECK(NthInstruction(ld_module, 0).operands[1].elements[0].offset == kWarpSize);
}

// Every predefined identifier of the PTX ISA ("Special Registers") parses as a name operand and
// prints back unchanged, also the vector special registers read whole.
TEST_CASE("special registers parse and print back unchanged") {
  const std::string body =
      "\tmov.u32 %r1, %tid.w;\n\tmov.v4.u32 {%r1, %r2, %r3, %r4}, %ctaid;\n"
      "\tmov.u32 %r1, %pm0;\n\tmov.u64 %rd1, %pm7_64;\n\tmov.u32 %r1, %envreg31;\n"
      "\tmov.u32 %r1, %reserved_smem_offset_begin;\n\tmov.u32 %r1, %reserved_smem_offset_1;\n"
      "\tmov.u32 %r1, %aggr_smem_size;\n\tmov.u64 %rd1, %current_graph_exec;\n"
      "\tmov.u32 %r1, %clock_hi;\n\tmov.u32 %r1, %globaltimer_lo;\n"
      "\tmov.u32 %r1, %cluster_ctarank;\n\tmov.u16 %rs1, %tid.x;";
  Module first = ParseClean(Kernel(body));
  std::string printed = PrintModule(first);
  for (const char* name :
       {"%tid.w", "%ctaid;", "%pm0", "%pm7_64", "%envreg31", "%reserved_smem_offset_begin",
        "%reserved_smem_offset_1", "%aggr_smem_size", "%current_graph_exec", "%clock_hi",
        "%globaltimer_lo", "%cluster_ctarank"}) {
    INFO(name);
    CHECK(printed.find(name) != std::string::npos);
  }
  CHECK(ParseClean(printed) == first);
}

TEST_CASE("IR equality notices edits") {
  Module a = ParseClean(Kernel("\tmov.u32 %r1, 1;"));
  Module b = a;
  CHECK(a == b);
  std::get<Instruction>(b.FindFunction("k")->body->statements[0].value).operands[1] =
      Operand::Imm(2);
  CHECK_FALSE(a == b);
}

TEST_CASE("constant expressions keep their structure and precedence") {
  auto printed = [](const std::string& expr) {
    Module m = ParseClean(Kernel("\tmov.u32 %r1, " + expr + ";"));
    return PrintOperand(NthInstruction(m, 0).operands[1]);
  };
  CHECK(printed("1+2*3") == "1+2*3");
  CHECK(printed("(1+2)*3") == "(1+2)*3");
  CHECK(printed("1-(2-3)") == "1-(2-3)");
  CHECK(printed("(1-2)-3") == "1-2-3");
  CHECK(printed("- -5") == "5");
  CHECK(printed("~(1<<3)") == "~(1<<3)");
  CHECK(printed("0x10U") == "16U");
  CHECK(printed("0b101") == "5");
  CHECK(printed("017") == "15");
  CHECK(printed("0d3FF0000000000000") == "0d3FF0000000000000");
  CHECK(printed("2e3") == "2000.0");
}

TEST_CASE("syntax errors carry line and column") {
  DiagnosticSink sink;
  ParseModule(Kernel("\tmov.u32 %r1, 1\n\tmov.u32 %r2, 2;"), sink);
  REQUIRE(sink.error_count() == 1);
  const Diagnostic& d = sink.diagnostics()[0];
  CHECK(d.location.line == 7);
  CHECK(d.location.column == 2);
  CHECK(d.message == "expected ';', found 'mov'");
  CHECK(sink.Format("x.ptx").rfind("x.ptx:7:2: error: expected ';'", 0) == 0);
}

TEST_CASE("the parser recovers and reports every bad statement") {
  DiagnosticSink sink;
  Module m = ParseModule(Kernel("\tadd.s32 %r1, , 2;\n"
                                "\tmov.u32 %r2, 3;\n"
                                "\tld.global.u32 %r3, [%rd1+%r2];\n"
                                "\tmov.u32 %r4, 4;"),
                         sink);
  CHECK(sink.error_count() == 2);
  CHECK(sink.diagnostics()[0].location.line == 6);
  CHECK(sink.diagnostics()[1].location.line == 8);
  // The good statements around the bad ones are kept.
  const auto& body = m.FindFunction("k")->body->statements;
  REQUIRE(body.size() == 2);
  CHECK(PrintInstruction(std::get<Instruction>(body[1].value)) == "mov.u32\t%r4, 4;");
}

TEST_CASE("recovery at module scope resumes at the next function") {
  DiagnosticSink sink;
  Module m = ParseModule(
      ".version 8.0\n.target sm_80\n"
      ".global .u32 broken =\n"
      ".visible .entry k() { ret; }\n",
      sink);
  CHECK(sink.error_count() == 1);
  CHECK(sink.diagnostics()[0].location.line == 4);
  CHECK(m.FindFunction("k") != nullptr);
}

TEST_CASE("lexical errors") {
  DiagnosticSink sink;
  ParseModule(Kernel("\tmov.u32 %r1, #;\n\t.pragma \"open"), sink);
  REQUIRE(sink.error_count() >= 2);
  CHECK(sink.diagnostics()[0].message == "unexpected character '#'");
  CHECK(sink.diagnostics()[0].location.line == 6);
  CHECK(sink.diagnostics()[0].location.column == 15);
  bool unterminated = false;
  for (const auto& d : sink.diagnostics()) unterminated |= d.message == "unterminated string";
  CHECK(unterminated);
}

TEST_CASE("missing module header directives are errors") {
  DiagnosticSink sink;
  ParseModule(".address_size 64\n", sink);
  CHECK(sink.error_count() == 2);
}

TEST_CASE("semantic limits are diagnosed") {
  auto first_error = [](const std::string& source) {
    DiagnosticSink sink;
    ParseModule(source, sink);
    REQUIRE(sink.HasErrors());
    return sink.diagnostics()[0].message;
  };
  CHECK(first_error(Kernel("\tmov.u64 %rd1, 0x1FFFFFFFFFFFFFFFF;")) ==
        "integer constant out of range: 0x1FFFFFFFFFFFFFFFF");
  CHECK(first_error(Kernel("\t.shared .align 3 .b8 s[4];")) == "alignment must be a power of two");
  CHECK(first_error(".version 8.0\n.target sm_80\n.address_size 48\n") ==
        ".address_size must be 32 or 64");
  CHECK(first_error(Kernel("\t.reg %r<4>;")) == ".reg declaration without a type");
  CHECK(first_error(Kernel("\tmovv.u32 %r1, 1;")) == "unknown instruction 'movv'");
}

TEST_CASE("hostile nesting is an error, not a stack overflow") {
  DiagnosticSink sink;
  ParseModule(Kernel(std::string(100000, '{')), sink);
  CHECK(sink.HasErrors());
  DiagnosticSink sink2;
  ParseModule(Kernel("\tmov.u32 %r1, " + std::string(100000, '(') + "1;"), sink2);
  CHECK(sink2.HasErrors());
  DiagnosticSink sink3;
  ParseModule(Kernel("\tmov.u32 %r1, " + std::string(100000, '-') + "1;"), sink3);
  CHECK(sink3.HasErrors());
}

TEST_CASE("ParseModuleOrError formats diagnostics into the status") {
  auto result = ParseModuleOrError(Kernel("\tbogus bogus;"), "bad.ptx");
  REQUIRE_FALSE(result.ok());
  CHECK(std::string(result.status().message()).find("bad.ptx:6:2: error: unknown instruction") !=
        std::string::npos);
  CHECK(ParseModuleOrError(Kernel("\tret;")).ok());
}

}  // namespace
}  // namespace tally::ptx
