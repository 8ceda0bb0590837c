// IR -> PTX text that ptxas accepts, and that ParseModule reads back into an equal IR.
#pragma once

#include <string>

#include "ptx_transform/ir.h"

namespace tally::ptx {

std::string PrintModule(const Module& module);
void PrintModule(const Module& module, std::string& out);  // appends

std::string PrintInstruction(const Instruction& instruction);
std::string PrintOperand(const Operand& operand);
std::string PrintExpr(const Expr& expr);

}  // namespace tally::ptx
