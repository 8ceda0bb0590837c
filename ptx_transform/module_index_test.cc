// The module index: on every PTX file of the corpus, the kernel signatures read from the
// declarations text equal those of the whole module, and each kernel's text parses to the whole
// module less the other kernels; texts the scan cannot follow are refused.
#include "ptx_transform/module_index.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ptx_transform/kernel_signature.h"
#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"

namespace tally::ptx {
namespace {

Module Parse(const std::string& text) {
  absl::StatusOr<Module> module = ParseModuleOrError(text);
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  return *std::move(module);
}

// The whole module with every kernel definition but `name`'s removed, printed.
std::string PrintWithOnly(const Module& module, const std::string& name) {
  Module alone = module;
  std::erase_if(alone.items, [&](const TopLevel& item) {
    const auto* function = std::get_if<Function>(&item.value);
    return function != nullptr && function->is_entry && function->body && function->name != name;
  });
  return PrintModule(alone);
}

void CheckAgainstWholeParse(const std::string& text) {
  const Module whole = Parse(text);
  absl::StatusOr<ModuleIndex> index = IndexModule(text);
  REQUIRE(index.ok());
  absl::StatusOr<std::vector<KernelSignature>> expected = ComputeSignatures(whole);
  REQUIRE(expected.ok());
  absl::StatusOr<std::vector<KernelSignature>> read =
      ComputeSignatures(Parse(DeclarationsText(text, *index)));
  REQUIRE(read.ok());
  REQUIRE(read->size() == expected->size());
  for (size_t i = 0; i < read->size(); ++i) {
    CHECK((*read)[i].name == (*expected)[i].name);
    CHECK((*read)[i].params == (*expected)[i].params);
    CHECK((*read)[i].param_buffer_size == (*expected)[i].param_buffer_size);
  }
  for (size_t i = 0; i < index->entries.size(); ++i) {
    const std::string& name = index->entries[i].name;
    INFO(name);
    CHECK(PrintModule(Parse(KernelText(text, *index, i))) == PrintWithOnly(whole, name));
  }
}

// A corpus file's module (a golden file of the passes holds its expected output after a marker).
std::string ReadModule(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  return all.substr(0, all.find("// ---- expected ----"));
}

TEST_CASE("every corpus module reads the same through the index as parsed whole") {
  std::vector<std::filesystem::path> files;
  for (const char* dir : {TALLY_PTX_TESTDATA, TALLY_PTX_TESTDATA "/passes", TALLY_PTX_SEEDS}) {
    for (const auto& file : std::filesystem::directory_iterator(dir)) {
      if (file.path().extension() == ".ptx") files.push_back(file.path());
    }
  }
  REQUIRE(files.size() >= 10);
  for (const std::filesystem::path& file : files) {
    INFO(file.string());
    CheckAgainstWholeParse(ReadModule(file));
  }
}

constexpr const char* kHeader = ".version 8.0\n.target sm_80\n.address_size 64\n";

TEST_CASE("comments, strings, declarations and performance directives are followed") {
  const std::string text = std::string(kHeader) + R"(
// .entry in_a_comment() { }
/* .visible .entry in_a_block_comment() { { */
.extern .entry declared(.param .u64 p);
.global .align 1 .b8 message[6] = {104, 105, 123, 125, 0, 0};
.func (.param .b32 r) helper(.param .b32 x) { st.param.b32 [r], 1; ret; }
.visible .entry first(.param .u64 p, .param .u32 n) .maxntid 128, 1, 1 .minnctapersm 2
{
  .reg .b32 %r<3>;
  { .param .b32 a; .param .b32 b; st.param.b32 [a], 0; call.uni (b), helper, (a); }
  ret; // } a brace in a comment
}
.weak .entry
  second
{
  ret;
}
.entry third() { ret; }
)";
  absl::StatusOr<ModuleIndex> index = IndexModule(text);
  REQUIRE(index.ok());
  REQUIRE(index->entries.size() == 3);
  CHECK(index->entries[0].name == "first");
  CHECK(text.substr(index->entries[0].begin).starts_with(".visible .entry first("));
  CHECK(text.substr(index->entries[1].begin).starts_with(".weak .entry"));
  CHECK(index->entries[1].name == "second");
  CHECK(index->entries[2].name == "third");
  CHECK(text.substr(index->entries[2].end).starts_with("\n"));
  CheckAgainstWholeParse(text);
}

TEST_CASE("text the scan cannot follow is refused") {
  const std::string header = kHeader;
  CHECK_FALSE(IndexModule(header + ".entry k() { ret; /* }").ok());
  CHECK_FALSE(IndexModule(header + ".entry k() { ret;").ok());
  CHECK_FALSE(IndexModule(header + "}").ok());
  CHECK_FALSE(IndexModule(header + ".entry k()").ok());
  CHECK_FALSE(IndexModule(header + ".entry (.param .u32 x) { ret; }").ok());
  CHECK_FALSE(IndexModule(header + ".global .b8 s[2] = \"x").ok());
  CHECK(IndexModule(header).ok());
  CHECK(IndexModule(header)->entries.empty());
}

}  // namespace
}  // namespace tally::ptx
