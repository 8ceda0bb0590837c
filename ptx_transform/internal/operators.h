// Binary operators of PTX constant expressions and their C precedence (PTX ISA "Constant
// Expressions"), shared by the parser and the printer so that both agree on parentheses.
#pragma once

#include <string_view>

namespace tally::ptx::internal {

// Higher binds tighter (`*` is 10, `||` is 1); -1 for anything that is not a binary operator.
inline int BinaryPrecedence(std::string_view op) {
  if (op == "*" || op == "/" || op == "%") return 10;
  if (op == "+" || op == "-") return 9;
  if (op == "<<" || op == ">>") return 8;
  if (op == "<" || op == ">" || op == "<=" || op == ">=") return 7;
  if (op == "==" || op == "!=") return 6;
  if (op == "&") return 5;
  if (op == "^") return 4;
  if (op == "|") return 3;
  if (op == "&&") return 2;
  if (op == "||") return 1;
  return -1;
}

}  // namespace tally::ptx::internal
