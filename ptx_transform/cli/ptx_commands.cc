// `tally-ptx print` and `tally-ptx check`: PTX text in, PTX text (and a verdict) out.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "ptx_transform/cli/commands.h"
#include "ptx_transform/cli/ptxas.h"
#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"
#include "ptx_transform/transform.h"

namespace tally::ptx {
namespace {

bool ReadInput(const std::string& path, std::string& out) {
  if (path == "-") {
    out.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return true;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "tally-ptx: cannot open %s\n", path.c_str());
    return false;
  }
  std::ostringstream buffer;
  buffer << file.rdbuf();
  out = std::move(buffer).str();
  return true;
}

// Parses `path`; prints diagnostics (warnings too) and returns false on errors.
bool Parse(const std::string& path, Module& module) {
  std::string source;
  if (!ReadInput(path, source)) return false;
  DiagnosticSink sink;
  module = ParseModule(source, sink);
  std::fputs(sink.Format(path == "-" ? "<stdin>" : path).c_str(), stderr);
  return !sink.HasErrors();
}

}  // namespace

int PrintCommand(const std::string& ptx_file) {
  Module module;
  if (!Parse(ptx_file, module)) return kExitInvalidInput;
  std::string text = PrintModule(module);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

int CheckCommand(const std::string& ptx_file, const std::string& arch) {
  Module module;
  if (!Parse(ptx_file, module)) return kExitInvalidInput;
  std::string text = PrintModule(module);
  DiagnosticSink sink;
  Module again = ParseModule(text, sink);
  if (sink.HasErrors() || !(again == module)) {
    std::fprintf(stderr,
                 "tally-ptx: internal error: the printed module does not read back "
                 "as the same IR\n%s",
                 sink.Format("<printed>").c_str());
    return kExitInvalidInput;
  }
  std::string target = arch;
  if (target.empty()) {
    for (const auto& t : module.targets) {
      if (t.rfind("sm_", 0) == 0) target = t;
    }
  }
  auto ptxas = FindPtxas();
  if (!ptxas || target.empty()) {
    std::printf("%s: parsed and printed; not assembled (%s)\n", ptx_file.c_str(),
                ptxas ? "no sm_ target; pass --arch" : "no ptxas found");
    return kExitOk;
  }
  absl::Status status = RunPtxas(*ptxas, text, target);
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", ptx_file.c_str(), std::string(status.message()).c_str());
    return kExitPtxasRejected;
  }
  std::printf("%s: ok (parsed, printed, read back identically, accepted by ptxas -arch=%s)\n",
              ptx_file.c_str(), target.c_str());
  return kExitOk;
}

int TransformCommand(const std::string& ptx_file, bool slice, bool ptb, bool fence) {
  Module module;
  if (!Parse(ptx_file, module)) return kExitInvalidInput;
  TransformOptions options{slice, ptb, fence};
  TransformReport report = TransformModule(module, options);
  std::string text = PrintModule(module);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputs(report.Format(options).c_str(), stderr);
  return kExitOk;
}

}  // namespace tally::ptx
