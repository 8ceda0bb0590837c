// The registry of conformance cases: one function per theme, listed in the generated
// themes.def (only themes whose features the emulator implements are registered).
#include "emulator/tests/conformance/conformance.h"
#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {

const char* const kProducers[] = {"nvcc", "nvrtc", nullptr};

std::string ModulePath(const std::string& producer, const std::string& module) {
  std::string arch = "sm_80";
#define TALLY_CONFORMANCE_THEME(theme, theme_arch) \
  if (module == #theme) arch = theme_arch;
#include "themes.def"
  return std::string(TALLY_CONFORMANCE_PTX_DIR) + "/" + producer + "/" + arch + "/" + module +
         ".ptx";
}

const std::vector<Case>& AllCases() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> all;
#define TALLY_CONFORMANCE_THEME(theme, arch)                   \
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
