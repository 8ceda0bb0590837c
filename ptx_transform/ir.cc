// Small IR queries.
#include "ptx_transform/ir.h"

namespace tally::ptx {

Function* Module::FindFunction(std::string_view name) {
  // A function may be declared (prototype) before it is defined: prefer the definition.
  Function* declaration = nullptr;
  for (auto& item : items) {
    auto* f = std::get_if<Function>(&item.value);
    if (f == nullptr || f->name != name) continue;
    if (f->body) return f;
    if (declaration == nullptr) declaration = f;
  }
  return declaration;
}

const Function* Module::FindFunction(std::string_view name) const {
  return const_cast<Module*>(this)->FindFunction(name);
}

}  // namespace tally::ptx
