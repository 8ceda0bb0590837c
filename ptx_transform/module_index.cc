#include "ptx_transform/module_index.h"

#include <optional>

#include "absl/strings/str_format.h"

namespace tally::ptx {
namespace {

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '%' || c == '.';
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// Walks a module's text; every method leaves `pos` after what it consumed and fails with a
// message where the text cannot be followed.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  ModuleIndex& index() { return index_; }
  bool AtEnd() const { return pos_ >= text_.size(); }

  // One step at the top level: a comment, a string, a braced body, an `.entry` or any other
  // word or character.
  absl::Status Step() {
    if (std::optional<absl::Status> skipped = SkipCommentOrString(); skipped) return *skipped;
    const char c = text_[pos_];
    if (c == '{') return SkipBody();
    if (c == '}') return Error("a '}' without its '{'");
    if (!IsWordChar(c)) {
      ++pos_;
      return absl::OkStatus();
    }
    const size_t word_begin = pos_;
    const std::string_view word = Word();
    if (word == ".entry") return Entry(word_begin);
    return absl::OkStatus();
  }

 private:
  // Skips a comment or string at `pos_` (nullopt when there is none there).
  std::optional<absl::Status> SkipCommentOrString() {
    const std::string_view rest = text_.substr(pos_);
    if (rest.starts_with("//")) {
      const size_t newline = text_.find('\n', pos_);
      pos_ = newline == std::string_view::npos ? text_.size() : newline + 1;
      return absl::OkStatus();
    }
    if (rest.starts_with("/*")) {
      const size_t close = text_.find("*/", pos_ + 2);
      if (close == std::string_view::npos) return Error("an unterminated comment");
      pos_ = close + 2;
      return absl::OkStatus();
    }
    if (rest.starts_with("\"")) {
      for (size_t i = pos_ + 1; i < text_.size(); ++i) {
        if (text_[i] == '\\') {
          ++i;
        } else if (text_[i] == '"') {
          pos_ = i + 1;
          return absl::OkStatus();
        }
      }
      return Error("an unterminated string");
    }
    return std::nullopt;
  }

  void SkipTrivia() {
    while (!AtEnd()) {
      if (IsSpace(text_[pos_])) {
        ++pos_;
      } else if (text_[pos_] == '/' &&
                 (text_.substr(pos_).starts_with("//") || text_.substr(pos_).starts_with("/*"))) {
        if (!SkipCommentOrString()->ok()) return;  // the caller meets the end
      } else {
        return;
      }
    }
  }

  std::string_view Word() {
    const size_t begin = pos_;
    while (!AtEnd() && IsWordChar(text_[pos_])) ++pos_;
    return text_.substr(begin, pos_ - begin);
  }

  // From an opening `open` at `pos_` to after its matching `close`.
  absl::Status SkipBalanced(char open, char close) {
    int depth = 0;
    while (!AtEnd()) {
      if (std::optional<absl::Status> skipped = SkipCommentOrString(); skipped) {
        if (!skipped->ok()) return *skipped;
        continue;
      }
      const char c = text_[pos_++];
      if (c == open) ++depth;
      if (c == close && --depth == 0) return absl::OkStatus();
    }
    return Error(absl::StrFormat("a '%c' without its '%c'", open, close));
  }

  absl::Status SkipBody() { return SkipBalanced('{', '}'); }

  // An `.entry` whose directive word starts at `word_begin` (`pos_` is after it).
  absl::Status Entry(size_t word_begin) {
    EntryText entry;
    entry.begin = LinkageBefore(word_begin);
    SkipTrivia();
    entry.name = std::string(Word());
    if (entry.name.empty() || entry.name[0] == '.') return Error("an .entry without a name");
    SkipTrivia();
    if (!AtEnd() && text_[pos_] == '(') {
      if (absl::Status params = SkipBalanced('(', ')'); !params.ok()) return params;
    }
    entry.header_end = pos_;
    // Performance directives (.maxntid, ...) up to the body, or `;` for a declaration.
    while (!AtEnd() && text_[pos_] != '{' && text_[pos_] != ';') {
      if (std::optional<absl::Status> skipped = SkipCommentOrString(); skipped) {
        if (!skipped->ok()) return *skipped;
        continue;
      }
      if (text_[pos_] == '}') return Error("a '}' without its '{'");
      ++pos_;
    }
    if (AtEnd()) return Error(absl::StrFormat(".entry %s has no body", entry.name));
    if (text_[pos_] == ';') {  // a declaration: it stays where it is
      ++pos_;
      return absl::OkStatus();
    }
    if (absl::Status body = SkipBody(); !body.ok()) return body;
    entry.end = pos_;
    index_.entries.push_back(std::move(entry));
    return absl::OkStatus();
  }

  // Where an `.entry` directive at `word_begin` starts with its linkage (.visible, .weak,
  // .extern), when one stands right before it.
  size_t LinkageBefore(size_t word_begin) const {
    size_t end = word_begin;
    while (end > 0 && IsSpace(text_[end - 1])) --end;
    size_t begin = end;
    while (begin > 0 && IsWordChar(text_[begin - 1])) --begin;
    const std::string_view word = text_.substr(begin, end - begin);
    return word == ".visible" || word == ".weak" || word == ".extern" ? begin : word_begin;
  }

  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot index the module: %s (byte %d)", what, pos_));
  }

  std::string_view text_;
  size_t pos_ = 0;
  ModuleIndex index_;
};

}  // namespace

absl::StatusOr<ModuleIndex> IndexModule(std::string_view ptx) {
  Scanner scanner(ptx);
  while (!scanner.AtEnd()) {
    if (absl::Status step = scanner.Step(); !step.ok()) return step;
  }
  return std::move(scanner.index());
}

std::string DeclarationsText(std::string_view ptx, const ModuleIndex& index) {
  std::string text;
  size_t from = 0;
  for (const EntryText& entry : index.entries) {
    text.append(ptx.substr(from, entry.header_end - from));
    text.append(";");
    from = entry.end;
  }
  text.append(ptx.substr(from));
  return text;
}

std::string KernelText(std::string_view ptx, const ModuleIndex& index, size_t entry) {
  std::string text;
  size_t from = 0;
  for (size_t i = 0; i < index.entries.size(); ++i) {
    if (i == entry) continue;
    text.append(ptx.substr(from, index.entries[i].begin - from));
    from = index.entries[i].end;
  }
  text.append(ptx.substr(from));
  return text;
}

}  // namespace tally::ptx
