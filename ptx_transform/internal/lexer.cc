// PTX tokeniser. A single forward scan with a character-class table; tokens are views into the
// source, so lexing allocates only the token vector.
#include "ptx_transform/internal/lexer.h"

#include <array>
#include <string>

namespace tally::ptx::internal {
namespace {

enum CharClass : uint8_t {
  kOther = 0,
  kSpace = 1,
  kIdentStart = 2,  // letters, `_`, `$`, `%` (PTX ISA "Identifiers")
  kDigit = 4,
  kIdentRest = 8,  // letters, digits, `_`, `$`
  kHexDigit = 16,
};

constexpr std::array<uint8_t, 256> MakeClassTable() {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    uint8_t v = 0;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') v |= kSpace;
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    bool digit = c >= '0' && c <= '9';
    if (letter || c == '_' || c == '$' || c == '%') v |= kIdentStart;
    if (letter || digit || c == '_' || c == '$') v |= kIdentRest;
    if (digit) v |= kDigit;
    if (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) v |= kHexDigit;
    t[c] = v;
  }
  return t;
}
constexpr std::array<uint8_t, 256> kClass = MakeClassTable();

bool Has(char c, uint8_t cls) { return (kClass[static_cast<unsigned char>(c)] & cls) != 0; }

class Lexer {
 public:
  Lexer(std::string_view source, DiagnosticSink& sink) : src_(source), sink_(sink) {}

  std::vector<Token> Run() {
    std::vector<Token> tokens;
    tokens.reserve(src_.size() / 4 + 1);
    while (true) {
      SkipSpaceAndComments();
      Token token = Next();
      tokens.push_back(token);
      if (token.kind == TokenKind::kEnd) break;
    }
    return tokens;
  }

 private:
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
  }

  void Advance(size_t n = 1) {
    for (size_t i = 0; i < n && pos_ < src_.size(); ++i) {
      if (src_[pos_] == '\n') {
        ++line_;
        line_start_ = pos_ + 1;
      }
      ++pos_;
    }
  }

  // Advances over characters known not to be newlines.
  void AdvanceInLine(size_t n) { pos_ = std::min(pos_ + n, src_.size()); }

  SourceLocation Here() const { return {line_, static_cast<uint32_t>(pos_ - line_start_ + 1)}; }

  void SkipSpaceAndComments() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (Has(c, kSpace)) {
        Advance();
      } else if (c == '/' && Peek(1) == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else if (c == '/' && Peek(1) == '*') {
        SourceLocation start = Here();
        Advance(2);
        while (pos_ < src_.size() && !(src_[pos_] == '*' && Peek(1) == '/')) Advance();
        if (pos_ >= src_.size()) {
          sink_.Error(start, "unterminated /* comment");
          return;
        }
        Advance(2);
      } else {
        return;
      }
    }
  }

  Token Make(TokenKind kind, size_t start, SourceLocation loc) const {
    return Token{kind, src_.substr(start, pos_ - start), loc.line, loc.column,
                 static_cast<uint32_t>(start)};
  }

  void SkipIdentRest() {
    while (pos_ < src_.size() && Has(src_[pos_], kIdentRest)) ++pos_;
  }

  Token Next() {
    size_t start = pos_;
    SourceLocation loc = Here();
    if (pos_ >= src_.size()) return Make(TokenKind::kEnd, start, loc);
    char c = src_[pos_];

    if (Has(c, kIdentStart) && !(c == '%' && !Has(Peek(1), kIdentRest))) {
      ++pos_;
      SkipIdentRest();
      return Make(TokenKind::kIdentifier, start, loc);
    }
    if (c == '.' && Has(Peek(1), kIdentRest)) {
      ++pos_;
      // Modifiers may contain `::` (`.shared::cta`, `.L2::cache_hint`).
      while (true) {
        SkipIdentRest();
        if (Peek() == ':' && Peek(1) == ':' && Has(Peek(2), kIdentRest)) {
          pos_ += 2;
          continue;
        }
        break;
      }
      return Make(TokenKind::kDotName, start, loc);
    }
    if (Has(c, kDigit)) return Number(start, loc);
    if (c == '"') return String(start, loc);

    switch (c) {
      case ',':
      case ';':
      case ':':
      case '{':
      case '}':
      case '[':
      case ']':
      case '(':
      case ')':
      case '+':
      case '-':
      case '*':
      case '/':
      case '%':
      case '~':
      case '^':
      case '@':
      case '?':
        AdvanceInLine(1);
        return Make(TokenKind::kPunct, start, loc);
      case '<':
      case '>':
      case '&':
      case '|':
      case '=':
      case '!': {
        // `<<` `>>` `&&` `||` `==` `!=` `<=` `>=`
        char n = Peek(1);
        bool two = (n == c && c != '!') || (n == '=' && c != '&' && c != '|');
        AdvanceInLine(two ? 2 : 1);
        return Make(TokenKind::kPunct, start, loc);
      }
      default:
        AdvanceInLine(1);
        break;
    }
    sink_.Error(loc, std::string("unexpected character '") +
                         (c >= 32 && c < 127 ? std::string(1, c) : "\\x" + Hex(c)) + "'");
    return Make(TokenKind::kInvalid, start, loc);
  }

  static std::string Hex(char c) {
    static constexpr char kDigits[] = "0123456789abcdef";
    unsigned char u = static_cast<unsigned char>(c);
    return {kDigits[u >> 4], kDigits[u & 15]};
  }

  // Integer and floating-point constants (PTX ISA "Constants"). Value conversion and range
  // checks happen in the parser; here we only find the extent.
  Token Number(size_t start, SourceLocation loc) {
    char c1 = Peek(1);
    if (src_[pos_] == '0' && (c1 == 'f' || c1 == 'F' || c1 == 'd' || c1 == 'D') &&
        Has(Peek(2), kHexDigit)) {
      AdvanceInLine(2);
      while (Has(Peek(), kHexDigit)) ++pos_;
      return Make(TokenKind::kFloat, start, loc);
    }
    if (src_[pos_] == '0' && (c1 == 'x' || c1 == 'X' || c1 == 'b' || c1 == 'B') &&
        Has(Peek(2), kHexDigit)) {
      AdvanceInLine(2);
      while (Has(Peek(), kHexDigit)) ++pos_;
      if (Peek() == 'U' || Peek() == 'u') ++pos_;
      return Make(TokenKind::kInteger, start, loc);
    }
    while (Has(Peek(), kDigit)) ++pos_;
    bool is_float = false;
    if (Peek() == '.' && !Has(Peek(1), kIdentStart)) {
      is_float = true;
      ++pos_;
      while (Has(Peek(), kDigit)) ++pos_;
    }
    if ((Peek() == 'e' || Peek() == 'E') &&
        (Has(Peek(1), kDigit) || ((Peek(1) == '+' || Peek(1) == '-') && Has(Peek(2), kDigit)))) {
      is_float = true;
      pos_ += 2;
      while (Has(Peek(), kDigit)) ++pos_;
    }
    if (!is_float && (Peek() == 'U' || Peek() == 'u')) ++pos_;
    return Make(is_float ? TokenKind::kFloat : TokenKind::kInteger, start, loc);
  }

  Token String(size_t start, SourceLocation loc) {
    ++pos_;
    while (pos_ < src_.size() && src_[pos_] != '"' && src_[pos_] != '\n') {
      if (src_[pos_] == '\\' && pos_ + 1 < src_.size() && src_[pos_ + 1] != '\n') ++pos_;
      ++pos_;
    }
    if (Peek() != '"') {
      sink_.Error(loc, "unterminated string");
      return Make(TokenKind::kInvalid, start, loc);
    }
    ++pos_;
    return Make(TokenKind::kString, start, loc);
  }

  std::string_view src_;
  DiagnosticSink& sink_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  size_t line_start_ = 0;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view source, DiagnosticSink& sink) {
  return Lexer(source, sink).Run();
}

}  // namespace tally::ptx::internal
