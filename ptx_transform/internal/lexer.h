// PTX lexer: splits source text into tokens with line:column (PTX ISA "Syntax" chapter:
// identifiers, `.`-prefixed directives and modifiers, integer and floating-point constants,
// strings, punctuation). Comments are skipped.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ptx_transform/diagnostics.h"

namespace tally::ptx::internal {

enum class TokenKind : uint8_t {
  kEnd,
  kIdentifier,  // `%r1`, `$L__BB0_2`, `_Z3fooPf`, `ld`, `_` (the sink)
  kDotName,     // `.reg`, `.u32`, `.L2::128B`, `.1d` (text includes the dot)
  kInteger,     // `42`, `0x1F`, `017`, `0b101`, with optional `U` suffix
  kFloat,       // `0f3F800000`, `0d3FF0000000000000`, `1.5`, `2e-3`
  kString,      // `"..."` (text includes the quotes)
  kPunct,       // `,` `;` `:` `{` `}` `[` `]` `(` `)` `<` `>` `+` `-` `*` `/` `%` `!` `~` `&` `|`
                // `^` `=` `@` `?` and `<<` `>>` `&&` `||` `==` `!=` `<=` `>=`
  kInvalid,     // a character PTX does not allow
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string_view text;
  uint32_t line = 0;
  uint32_t column = 0;
  uint32_t offset = 0;  // byte offset of text in the source

  bool IsPunct(char c) const {
    return kind == TokenKind::kPunct && text.size() == 1 && text[0] == c;
  }
  SourceLocation location() const { return {line, column}; }
};

// Tokenises the whole source; the last token is always kEnd. Lexical errors (unterminated
// strings and comments, stray characters) are reported to `sink` and yield kInvalid tokens.
std::vector<Token> Tokenize(std::string_view source, DiagnosticSink& sink);

}  // namespace tally::ptx::internal
