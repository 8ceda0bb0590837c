// Round-trips every module of the PTX corpus (nvcc, NVRTC, clang, llc) through the front end
// and checks kernel signatures of known kernels against layouts computed by hand.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "ptx_transform/cubin_info.h"
#include "ptx_transform/kernel_signature.h"
#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"
#include "tests/corpus/corpus_support.h"

namespace tally::ptx {
namespace {

using corpus::Assembled;
using corpus::CorpusModule;
using corpus::ReadFile;
using corpus::ReadManifest;
using corpus::RunPtxas;
using corpus::ScratchDir;

// "" when equal, else the first differing line of both texts, for a readable failure.
std::string FirstTextDifference(const std::string& a, const std::string& b) {
  std::istringstream in_a(a), in_b(b);
  std::string line_a, line_b;
  for (int line = 1;; ++line) {
    bool more_a = static_cast<bool>(std::getline(in_a, line_a));
    bool more_b = static_cast<bool>(std::getline(in_b, line_b));
    if (!more_a && !more_b) return a == b ? "" : "trailing bytes differ";
    if (!more_a || !more_b || line_a != line_b) {
      return "line " + std::to_string(line) + ":\n  " + (more_a ? line_a : "<end>") + "\n  " +
             (more_b ? line_b : "<end>");
    }
  }
}

// "" when equal, else where two parses of one module first differ.
std::string FirstIrDifference(const Module& a, const Module& b) {
  if (a.version_major != b.version_major || a.version_minor != b.version_minor ||
      a.targets != b.targets || a.address_size != b.address_size ||
      a.has_address_size != b.has_address_size) {
    return "module header";
  }
  if (a.items.size() != b.items.size()) {
    return std::to_string(a.items.size()) + " versus " + std::to_string(b.items.size()) +
           " top-level items";
  }
  for (size_t i = 0; i < a.items.size(); ++i) {
    if (a.items[i] == b.items[i]) continue;
    const auto* fa = std::get_if<Function>(&a.items[i].value);
    const auto* fb = std::get_if<Function>(&b.items[i].value);
    if (fa == nullptr || fb == nullptr || !fa->body || !fb->body) {
      return "top-level item " + std::to_string(i);
    }
    const auto& sa = fa->body->statements;
    const auto& sb = fb->body->statements;
    for (size_t k = 0; k < std::min(sa.size(), sb.size()); ++k) {
      if (sa[k] == sb[k]) continue;
      std::string where = "function " + fa->name + ", statement " + std::to_string(k);
      const auto* ia = std::get_if<Instruction>(&sa[k].value);
      const auto* ib = std::get_if<Instruction>(&sb[k].value);
      if (ia != nullptr && ib != nullptr) {
        where += ":\n  " + PrintInstruction(*ia) + "\n  " + PrintInstruction(*ib);
      }
      return where;
    }
    return "function " + fa->name + " (header or statement count)";
  }
  return "";
}

Module ParseClean(std::string_view text, const std::string& file_name) {
  DiagnosticSink sink;
  Module module = ParseModule(text, sink);
  INFO(sink.Format(file_name));
  REQUIRE_FALSE(sink.HasErrors());
  return module;
}

// Kernel names read from the text with a pattern independent of the parser, so that a kernel
// the parser skipped or misnamed is noticed.
std::set<std::string> EntryNamesInText(const std::string& text) {
  static const std::regex kEntry(R"(\.entry\s+([A-Za-z_$%][A-Za-z0-9_$]*))");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kEntry);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[1].str());
  }
  return names;
}

std::set<std::string> EntryNamesInModule(const Module& module) {
  std::set<std::string> names;
  for (const TopLevel& item : module.items) {
    if (const auto* f = std::get_if<Function>(&item.value); f != nullptr && f->is_entry) {
      names.insert(f->name);
    }
  }
  return names;
}

// Compares our layouts with ptxas's own: the EIATTR_KPARAM_INFO records of the cubin that
// ptxas made from the same PTX (what `nvcc -cubin` would embed for these kernels).
void CheckAgainstCubin(const std::vector<KernelSignature>& signatures,
                       const std::filesystem::path& cubin_path) {
  const std::string cubin = ReadFile(cubin_path);
  auto kernels =
      ReadCubinKernelInfo(std::span(reinterpret_cast<const uint8_t*>(cubin.data()), cubin.size()));
  INFO(kernels.status().ToString());
  REQUIRE(kernels.ok());
  for (const KernelSignature& signature : signatures) {
    INFO("kernel " << signature.name);
    auto info = std::find_if(kernels->begin(), kernels->end(),
                             [&](const CubinKernelInfo& k) { return k.name == signature.name; });
    REQUIRE(info != kernels->end());
    REQUIRE(info->params.size() == signature.params.size());
    for (size_t k = 0; k < signature.params.size(); ++k) {
      INFO("param " << k);
      CHECK(info->params[k].ordinal == k);
      CHECK(info->params[k].offset == signature.params[k].offset);
      CHECK(info->params[k].size == signature.params[k].size);
    }
    if (info->param_cbank_size) CHECK(*info->param_cbank_size == signature.param_buffer_size);
  }
}

TEST_CASE("every corpus module round-trips through parser, printer and ptxas", "[corpus]") {
  const std::vector<CorpusModule> modules = ReadManifest();
  REQUIRE(modules.size() >= 100);
  ScratchDir scratch;
  for (const CorpusModule& m : modules) {
    const std::string label = m.producer + "/" + m.arch + "/" + m.path.filename().string();
    DYNAMIC_SECTION(label) {
      const std::string original = ReadFile(m.path);
      const std::filesystem::path stem =
          scratch.path() / (m.producer + "-" + m.arch + "-" + m.path.stem().string());
      // The corpus itself must be valid, or a printer failure below would mean nothing.
      Assembled reference = RunPtxas(m.arch, m.path, stem.string() + ".original.cubin");
      INFO("ptxas on the original:\n" << reference.output);
      REQUIRE(reference.ok);

      Module first = ParseClean(original, m.path.string());
      REQUIRE(first.targets.size() >= 1);
      CHECK(first.targets[0] == m.arch);
      const std::set<std::string> entries = EntryNamesInText(original);
      CHECK(EntryNamesInModule(first) == entries);
      auto signatures = ComputeSignatures(first);
      INFO(signatures.status().ToString());
      REQUIRE(signatures.ok());
      CHECK(signatures->size() == entries.size());
      CheckAgainstCubin(*signatures, stem.string() + ".original.cubin");

      const std::string printed = PrintModule(first);
      const std::filesystem::path printed_path = stem.string() + ".printed.ptx";
      std::ofstream(printed_path, std::ios::binary) << printed;
      Assembled assembled = RunPtxas(m.arch, printed_path, stem.string() + ".printed.cubin");
      INFO("ptxas on the printed module (reproduce with `tally-ptx print` on the original):\n"
           << assembled.output);
      REQUIRE(assembled.ok);

      Module second = ParseClean(printed, printed_path.string());
      CHECK(FirstIrDifference(first, second) == "");
      CHECK(second == first);
      CHECK(EntryNamesInModule(second) == entries);
      CHECK(FirstTextDifference(printed, PrintModule(second)) == "");

      // Identical machine code is the strongest evidence that printing kept the module's
      // meaning. Debug info embeds the PTX text and its line numbers, which printing changes,
      // so modules with `.loc` are compared without it; and at -G (target `debug`) ptxas's
      // unoptimised code even depends on spelling (`[%SP+0]` versus `[%SP]`), so those modules
      // are only required to assemble.
      const bool unoptimised_debug =
          std::find(first.targets.begin(), first.targets.end(), "debug") != first.targets.end();
      if (!unoptimised_debug) {
        if (original.find(".loc") != std::string::npos) {
          const std::string no_debug = "--suppress-debug-info";
          REQUIRE(RunPtxas(m.arch, m.path, stem.string() + ".original.cubin", no_debug).ok);
          REQUIRE(RunPtxas(m.arch, printed_path, stem.string() + ".printed.cubin", no_debug).ok);
        }
        const bool same_machine_code = ReadFile(stem.string() + ".original.cubin") ==
                                       ReadFile(stem.string() + ".printed.cubin");
        CHECK(same_machine_code);
      }
    }
  }
}

ParamLayout Param(const std::string& kernel, int index, uint32_t size, uint32_t alignment,
                  uint32_t offset) {
  return {kernel + "_param_" + std::to_string(index), size, alignment, offset};
}

struct ExpectedKernel {
  std::string name;
  std::string demangled;
  std::vector<ParamLayout> params;
  uint32_t buffer_size;
};

// Layouts of params.cu's kernels, computed by hand from the C++ declarations: each parameter
// at the next multiple of its alignment (CUDA C++ Programming Guide, "Function Parameters").
std::vector<ExpectedKernel> ExpectedParamsKernels() {
  return {
      {"MixedParams",
       "MixedParams",  // float*, int, double, Record24 (24 bytes, align 8)
       {Param("MixedParams", 0, 8, 8, 0), Param("MixedParams", 1, 4, 4, 8),
        Param("MixedParams", 2, 8, 8, 16), Param("MixedParams", 3, 24, 8, 24)},
       48},
      {"NarrowParams",
       "NarrowParams",  // char, short, int, long long, bool, float4, double*
       {Param("NarrowParams", 0, 1, 1, 0), Param("NarrowParams", 1, 2, 2, 2),
        Param("NarrowParams", 2, 4, 4, 4), Param("NarrowParams", 3, 8, 8, 8),
        Param("NarrowParams", 4, 1, 1, 16), Param("NarrowParams", 5, 16, 16, 32),
        Param("NarrowParams", 6, 8, 8, 48)},
       56},
      {"OddSizes",
       "OddSizes",  // Odd7 (7 bytes, align 1), int, short
       {Param("OddSizes", 0, 7, 1, 0), Param("OddSizes", 1, 4, 4, 8),
        Param("OddSizes", 2, 2, 2, 12)},
       14},
      {"BigStruct",
       "BigStruct",  // Big (260 bytes padded to 272, align 16), float*
       {Param("BigStruct", 0, 272, 16, 0), Param("BigStruct", 1, 8, 8, 272)},
       280},
      {"NoParams", "NoParams", {}, 0},
      {"_Z7BoundedPK8Record24Pfi",
       "Bounded(Record24 const*, float*, int)",
       {Param("_Z7BoundedPK8Record24Pfi", 0, 8, 8, 0),
        Param("_Z7BoundedPK8Record24Pfi", 1, 8, 8, 8),
        Param("_Z7BoundedPK8Record24Pfi", 2, 4, 4, 16)},
       20},
  };
}

std::vector<CorpusModule> ModulesNamed(const std::string& file_name) {
  std::vector<CorpusModule> found;
  for (const CorpusModule& m : ReadManifest()) {
    if (m.path.filename() == file_name) found.push_back(m);
  }
  return found;
}

TEST_CASE("kernel signatures of params.cu match hand-computed layouts", "[corpus]") {
  const std::vector<CorpusModule> modules = ModulesNamed("params.ptx");
  REQUIRE(modules.size() >= 3);  // nvcc for three archs, NVRTC when available
  for (const CorpusModule& m : modules) {
    DYNAMIC_SECTION(m.producer << "/" << m.arch) {
      Module module = ParseClean(ReadFile(m.path), m.path.string());
      auto signatures = ComputeSignatures(module);
      REQUIRE(signatures.ok());
      for (const ExpectedKernel& expected : ExpectedParamsKernels()) {
        INFO(expected.name);
        auto it = std::find_if(signatures->begin(), signatures->end(),
                               [&](const KernelSignature& s) { return s.name == expected.name; });
        REQUIRE(it != signatures->end());
        CHECK(it->demangled == expected.demangled);
        REQUIRE(it->params.size() == expected.params.size());
        for (size_t k = 0; k < expected.params.size(); ++k) {
          INFO("param " << k);
          CHECK(it->params[k].name == expected.params[k].name);
          CHECK(it->params[k].size == expected.params[k].size);
          CHECK(it->params[k].alignment == expected.params[k].alignment);
          CHECK(it->params[k].offset == expected.params[k].offset);
        }
        CHECK(it->param_buffer_size == expected.buffer_size);
      }
    }
  }
}

}  // namespace
}  // namespace tally::ptx
