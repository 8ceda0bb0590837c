// `__managed__` variables under Tally: the server's PTX rewrite (ptx_transform/managed.h) makes
// every kernel reach such a variable through a pointer, a module variable of this name; the
// client points it at memory both the program and kernels reach (client/managed_variables.h).
#pragma once

#include <string>
#include <string_view>

namespace tally {

inline std::string ManagedPointerName(std::string_view variable) {
  return std::string(variable) + "__tally_managed";
}

}  // namespace tally
