// Transforms every module of the PTX corpus (nvcc for sm_75/80/90, NVRTC, clang, llc): the
// module with its sliced and PTB variants must print, read back identically, be accepted by
// ptxas for its target, and the variants' parameters must be the original ones followed by
// the documented extras, as ptxas itself lays them out. Once more with fencing: fenced kernels
// take the fence parameter after their own, and their variants their extras after the fence.
#include <catch2/catch.hpp>
#include <map>

#include "ptx_transform/cubin_info.h"
#include "ptx_transform/kernel_signature.h"
#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"
#include "ptx_transform/transform.h"
#include "tests/corpus/corpus_support.h"

namespace tally::ptx {
namespace {

// The variant's parameters are the original's, then extras of these sizes.
void CheckVariantSignature(const KernelSignature& original, const KernelSignature& variant,
                           std::vector<uint32_t> extra_sizes) {
  INFO(variant.name);
  REQUIRE(variant.params.size() == original.params.size() + extra_sizes.size());
  for (size_t i = 0; i < original.params.size(); ++i) {
    CHECK(variant.params[i].offset == original.params[i].offset);
    CHECK(variant.params[i].size == original.params[i].size);
  }
  for (size_t i = 0; i < extra_sizes.size(); ++i) {
    CHECK(variant.params[original.params.size() + i].size == extra_sizes[i]);
  }
}

// Transforms every corpus module with `options`; the counts of forms made and refused.
struct Counts {
  size_t sliced = 0, preemptible = 0, refused = 0, fenced = 0, fence_refused = 0;
};

Counts TransformCorpus(const TransformOptions& options) {
  corpus::ScratchDir scratch;
  Counts counts;
  auto& [sliced, preemptible, refused, fenced, fence_refused] = counts;
  for (const corpus::CorpusModule& m : corpus::ReadManifest()) {
    INFO(m.producer << " " << m.arch << " " << m.path.string());
    auto module = ParseModuleOrError(corpus::ReadFile(m.path), m.path.string());
    REQUIRE(module.ok());
    auto originals = ComputeSignatures(*module);
    REQUIRE(originals.ok());

    TransformReport report = TransformModule(*module, options);
    std::string printed = PrintModule(*module);
    auto again = ParseModuleOrError(printed, "<transformed>");
    REQUIRE(again.ok());
    CHECK(*again == *module);

    std::filesystem::path ptx =
        scratch.path() / (m.producer + "_" + m.arch + "_" + m.path.filename().string());
    std::filesystem::path cubin = ptx;
    cubin.replace_extension(".cubin");
    std::ofstream(ptx) << printed;
    corpus::Assembled assembled = corpus::RunPtxas(m.arch, ptx, cubin, "--suppress-debug-info");
    INFO(assembled.output);
    REQUIRE(assembled.ok);

    auto signatures = ComputeSignatures(*module);
    REQUIRE(signatures.ok());
    std::map<std::string, const KernelSignature*> by_name;
    for (const auto& sig : *signatures) by_name[sig.name] = &sig;
    std::map<std::string, const KernelSignature*> original_by_name;
    for (const auto& sig : *originals) original_by_name[sig.name] = &sig;
    for (const KernelForms& forms : report.kernels) {
      const KernelSignature* original = original_by_name.at(forms.analysis.kernel);
      // A fenced kernel keeps its name and takes the fence after its own parameters; its
      // variants take their extras after the fence.
      std::vector<uint32_t> fence;
      if (forms.fenced) {
        ++fenced;
        fence = {static_cast<uint32_t>(sizeof(FenceParams))};
        CheckVariantSignature(*original, *by_name.at(forms.analysis.kernel), fence);
      } else if (options.fence) {
        ++fence_refused;
        CHECK_FALSE(forms.fence_refusal.empty());
        CheckVariantSignature(*original, *by_name.at(forms.analysis.kernel), {});
      }
      auto with_fence = [&](std::vector<uint32_t> extras) {
        extras.insert(extras.begin(), fence.begin(), fence.end());
        return extras;
      };
      if (!forms.sliced.empty()) {
        ++sliced;
        CheckVariantSignature(*original, *by_name.at(forms.sliced), with_fence({4, 4, 4, 4}));
      }
      if (!forms.preemptible.empty()) {
        ++preemptible;
        CheckVariantSignature(*original, *by_name.at(forms.preemptible), with_fence({8, 4, 4, 4}));
      }
      refused += forms.sliced.empty() + forms.preemptible.empty();
    }

    // ptxas's own layout of the variants' parameters agrees with ours.
    std::string cubin_bytes = corpus::ReadFile(cubin);
    auto infos = ReadCubinKernelInfo(std::span<const uint8_t>(
        reinterpret_cast<const uint8_t*>(cubin_bytes.data()), cubin_bytes.size()));
    REQUIRE(infos.ok());
    for (const CubinKernelInfo& info : *infos) {
      auto it = by_name.find(info.name);
      if (it == by_name.end() || info.params.empty()) continue;
      REQUIRE(info.params.size() == it->second->params.size());
      for (size_t i = 0; i < info.params.size(); ++i) {
        CHECK(info.params[i].offset == it->second->params[i].offset);
        CHECK(info.params[i].size == it->second->params[i].size);
      }
    }
  }
  return counts;
}

TEST_CASE("every corpus module transforms into PTX that ptxas accepts") {
  Counts counts = TransformCorpus({});
  // The corpus is mostly ordinary kernels: nearly all take both forms; a few (grid sync,
  // clusters, mbarrier, polling, indirect calls, named partial barriers) must not.
  CHECK(counts.sliced > 300);
  CHECK(counts.preemptible > 300);
  CHECK(counts.refused > 20);
}

TEST_CASE("every corpus module fenced (original, sliced and PTB forms) is accepted by ptxas") {
  TransformOptions options;
  options.fence = true;
  Counts counts = TransformCorpus(options);
  std::printf("fenced %zu kernels, refused %zu\n", counts.fenced, counts.fence_refused);
  // 408 and 18 when wmma tiles and assert became fenceable (393 and 33 before).
  CHECK(counts.fenced > 400);
  CHECK(counts.fence_refused < 25);
  CHECK(counts.sliced > 300);
  CHECK(counts.preemptible > 300);
}

}  // namespace
}  // namespace tally::ptx
