// Helpers of the ptx_transform tests: read a test file, analyse one kernel of a hand-written
// module, count a function's instructions.
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ptx_transform/kernel_analysis.h"
#include "ptx_transform/parser.h"
#include "ptx_transform/passes/ir_walk.h"

namespace tally::ptx::testing {

// The contents of `path` (empty when it cannot be read; the parse that follows says so).
inline std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

// Analyses `kernel` of `module_text` (a module without its .version/.target header).
inline KernelAnalysis Analyze(const std::string& module_text, const std::string& kernel = "k") {
  auto module = ParseModuleOrError(".version 8.0\n.target sm_80\n.address_size 64\n" + module_text);
  REQUIRE(module.ok());
  const Function* f = module->FindFunction(kernel);
  REQUIRE(f != nullptr);
  return AnalyzeKernel(*module, *f);
}

// Whether one of `reasons` contains `text`.
inline bool Mentions(const std::vector<std::string>& reasons, const std::string& text) {
  for (const auto& r : reasons)
    if (r.find(text) != std::string::npos) return true;
  return false;
}

// How many instructions of `function` (nested blocks included) are spelled `spelling`: the
// opcode and its modifiers (`st.global.u32`).
inline int CountInstructions(const Function& function, const std::string& spelling) {
  int n = 0;
  passes::ForEachInstruction(function.body->statements, [&](const Instruction& inst) {
    std::string text = inst.opcode;
    for (const auto& m : inst.modifiers) text += "." + m;
    n += text == spelling;
  });
  return n;
}

}  // namespace tally::ptx::testing
