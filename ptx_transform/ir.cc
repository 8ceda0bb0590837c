// Small IR queries.
#include "ptx_transform/ir.h"

namespace tally::ptx {

Function* Module::FindFunction(std::string_view name) {
  for (auto& item : items) {
    auto* f = std::get_if<Function>(&item.value);
    if (f != nullptr && f->name == name) return f;
  }
  return nullptr;
}

const Function* Module::FindFunction(std::string_view name) const {
  return const_cast<Module*>(this)->FindFunction(name);
}

}  // namespace tally::ptx
