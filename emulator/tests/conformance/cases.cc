// The registry of conformance cases: one function per theme, listed in the generated
// themes.def (only themes whose features the emulator implements are registered).
#include "emulator/tests/conformance/conformance.h"
#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {

const char* const kProducers[] = {"nvcc", "nvrtc", nullptr};

std::string ModulePath(const std::string& producer, const std::string& module) {
  return std::string(TALLY_CONFORMANCE_PTX_DIR) + "/" + producer + "/" + TALLY_CONFORMANCE_ARCH +
         "/" + module + ".ptx";
}

const std::vector<Case>& AllCases() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> all;
#define TALLY_CONFORMANCE_THEME(theme)                         \
  for (Case c : theme##_cases()) {                             \
    c.module = #theme;                                         \
    all.push_back(std::move(c));                               \
  }
#include "themes.def"
    return all;
  }();
  return cases;
}

}  // namespace tally::emu::conformance
