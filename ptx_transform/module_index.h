// Where each kernel's definition is in a module's PTX text, found by scanning the text rather
// than parsing it, so that a server can read a module's kernels and parameter layouts without
// parsing every kernel's body, and later parse one kernel alone when its forms are made.
//
// The scan follows only what delimits top-level items (comments, strings, braces and the
// `.entry` directive, PTX ISA "Syntax" and "Kernel and Function Directives"); everything it
// hands out is parsed by the ordinary parser. Texts it cannot follow are refused, and callers
// then parse the whole module as before.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tally::ptx {

// One `.entry` definition: [begin, end) is its whole text from its linkage directive (if any)
// to its closing brace; [begin, header_end) is the part up to its parameter list's `)`.
struct EntryText {
  std::string name;
  size_t begin = 0;
  size_t header_end = 0;
  size_t end = 0;
};

struct ModuleIndex {
  std::vector<EntryText> entries;  // in text order
};

// InvalidArgument for text the scan cannot follow (an unterminated comment or string, unbalanced
// braces, an `.entry` without a name or body).
absl::StatusOr<ModuleIndex> IndexModule(std::string_view ptx);

// The module with every kernel's definition turned into a declaration (its header and `;`):
// what registration parses for the module's variables, declarations and kernel signatures.
std::string DeclarationsText(std::string_view ptx, const ModuleIndex& index);

// The module with every kernel's definition but `entries[entry]`'s left out: what the
// transformation of that one kernel parses.
std::string KernelText(std::string_view ptx, const ModuleIndex& index, size_t entry);

}  // namespace tally::ptx
