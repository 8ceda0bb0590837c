// Expect: the non-template expectations and the check of all of them.
#include "emulator/tests/conformance/conformance.h"

namespace tally::emu::conformance {

void Expect::Printed(std::vector<std::string> lines) {
  std::sort(lines.begin(), lines.end());
  checkers_.push_back([lines = std::move(lines)](const Outputs& out, std::string& errors) {
    std::vector<std::string> printed = out.printed;
    std::sort(printed.begin(), printed.end());
    if (printed == lines) return;
    errors += "printed " + std::to_string(printed.size()) + " lines, expected " +
              std::to_string(lines.size()) + ":\n";
    for (size_t i = 0; i < std::max(printed.size(), lines.size()); ++i) {
      if (i >= static_cast<size_t>(internal::kMaxReported)) break;
      errors += "  got \"" + (i < printed.size() ? printed[i] : "") + "\" expected \"" +
                (i < lines.size() ? lines[i] : "") + "\"\n";
    }
  });
}

void Expect::Satisfies(std::function<std::string(const Values& outputs)> check) {
  checkers_.push_back([check = std::move(check)](const Outputs& out, std::string& errors) {
    std::string problem = check(out.args);
    if (!problem.empty()) errors += problem + "\n";
  });
}

std::string Expect::Check(const Outputs& outputs) const {
  std::string errors;
  for (const Checker& checker : checkers_) checker(outputs, errors);
  if (checkers_.empty()) errors = "the case's reference registers no expectation\n";
  return errors;
}

}  // namespace tally::emu::conformance
