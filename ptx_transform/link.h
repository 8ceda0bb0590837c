// Linking the PTX of several translation units (programs built with `nvcc -rdc=true`) into one
// module, on the IR: `.extern` declarations resolve to the `.visible`/`.weak` definitions of
// other units, file-local names that clash are renamed. One module (rather than the driver's
// cuLink*) is what the kernel transformations need: they follow calls into other units.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ptx_transform/ir.h"

namespace tally::ptx {

struct LinkedModule {
  Module module;
  // `.extern .func`s no unit defines, kept as declarations for the driver to resolve
  // (`vprintf`, `malloc`, ... are the driver's); a load failure should name them.
  std::vector<std::string> unresolved_functions;
};

// Errors (naming the symbol and the units, numbered from 0): an `.extern` variable no unit
// defines, a symbol defined `.visible` in two units, units for different targets or address
// sizes. Line information (`.file`, `.loc`) and debug sections are dropped: their file numbers
// clash between units.
absl::StatusOr<LinkedModule> LinkModules(std::vector<Module> units);

}  // namespace tally::ptx
