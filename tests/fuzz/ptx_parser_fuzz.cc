// libFuzzer target for the PTX front end. Besides "no crash, no hang, no sanitizer report" it
// checks the round-trip property: whatever parses without errors prints to text that parses
// back into the same IR and prints identically.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tally::ptx;
  std::string_view source(reinterpret_cast<const char*>(data), size);
  DiagnosticSink sink;
  Module module = ParseModule(source, sink);
  std::string printed = PrintModule(module);  // printing a partial module must be safe too
  if (sink.HasErrors()) return 0;
  DiagnosticSink again_sink;
  Module again = ParseModule(printed, again_sink);
  if (again_sink.HasErrors() || !(again == module) || PrintModule(again) != printed) {
    std::fprintf(stderr, "round trip failed:\n%s\n--- printed:\n%s\n",
                 again_sink.Format("<printed>").c_str(), printed.c_str());
    std::abort();
  }
  return 0;
}
