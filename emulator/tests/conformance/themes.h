// One case table per theme module (kernels/THEME.cu, its references in THEME_cases.cc).
#pragma once

#include <vector>

#include "emulator/tests/conformance/conformance.h"

namespace tally::emu::conformance {

#define TALLY_CONFORMANCE_THEME(theme, arch) std::vector<Case> theme##_cases();
#include "themes.def"

}  // namespace tally::emu::conformance
