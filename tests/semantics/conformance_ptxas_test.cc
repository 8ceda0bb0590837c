// Every module of the emulator's conformance suite (nvcc and NVRTC, sm_75/80/90), with the
// sliced and PTB variants of its kernels added, must be accepted by ptxas for its target.
#include <catch2/catch.hpp>

#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"
#include "ptx_transform/transform.h"
#include "tests/corpus/corpus_support.h"

namespace tally::ptx {
namespace {

TEST_CASE("transformed conformance modules are accepted by ptxas for sm_75, sm_80, sm_90") {
  corpus::ScratchDir scratch;
  std::set<std::string> archs;
  size_t variants = 0;
  for (const corpus::CorpusModule& m : corpus::ReadManifest()) {
    INFO(m.producer << " " << m.arch << " " << m.path.string());
    archs.insert(m.arch);
    auto module = ParseModuleOrError(corpus::ReadFile(m.path), m.path.string());
    REQUIRE(module.ok());
    TransformReport report = TransformModule(*module, {});
    for (const KernelForms& forms : report.kernels) {
      variants += !forms.sliced.empty() + !forms.preemptible.empty();
    }
    std::filesystem::path ptx =
        scratch.path() / (m.producer + "_" + m.arch + "_" + m.path.filename().string());
    std::filesystem::path cubin = ptx;
    cubin.replace_extension(".cubin");
    std::ofstream(ptx) << PrintModule(*module);
    corpus::Assembled assembled = corpus::RunPtxas(m.arch, ptx, cubin);
    INFO(assembled.output);
    CHECK(assembled.ok);
  }
  CHECK(archs == std::set<std::string>{"sm_75", "sm_80", "sm_90"});
  // Nearly every conformance kernel takes both forms (a few are refused on purpose).
  CHECK(variants > 6 * 2 * 70);
}

}  // namespace
}  // namespace tally::ptx
