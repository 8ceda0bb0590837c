// Golden-file tests of the passes: each testdata/passes/*.ptx holds `// RUN: <forms>` lines,
// the input module, a `// ---- expected ----` line and the exact module the transformation
// must print. TALLY_UPDATE_GOLDEN=1 rewrites the expected part (review the diff!).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"
#include "ptx_transform/transform.h"

namespace tally::ptx {
namespace {

constexpr std::string_view kSeparator = "// ---- expected ----\n";

TEST_CASE("pass golden files") {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(TALLY_PTX_TESTDATA "/passes")) {
    if (entry.path().extension() == ".ptx") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 4);
  bool update = std::getenv("TALLY_UPDATE_GOLDEN") != nullptr;
  for (const auto& path : files) {
    INFO(path.string());
    std::ifstream in(path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string text = buffer.str();
    size_t split = text.find(kSeparator);
    REQUIRE((split != std::string::npos || update));  // a new file gets its expected part
    std::string input = text.substr(0, split);
    std::string expected = split == std::string::npos ? "" : text.substr(split + kSeparator.size());
    TransformOptions options{input.find("// RUN: --slice") != std::string::npos,
                             input.find("// RUN: --ptb") != std::string::npos,
                             input.find("// RUN: --fence") != std::string::npos};
    REQUIRE((options.slice || options.preemptible));

    auto module = ParseModuleOrError(input, path.string());
    REQUIRE(module.ok());
    TransformReport report = TransformModule(*module, options);
    std::string actual = "// report:\n";
    std::istringstream lines(report.Format(options));
    for (std::string line; std::getline(lines, line);) actual += "//   " + line + "\n";
    actual += PrintModule(*module);
    if (update) {
      std::ofstream(path) << input << kSeparator << actual;
      continue;
    }
    CHECK(actual == expected);
  }
}

}  // namespace
}  // namespace tally::ptx
