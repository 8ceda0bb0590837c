// Transformed code through the code cache: what is stored reads back as it was made, and a made
// form is found by a second FormsCache (another server) on the same folder instead of made again.
#include "server/forms_cache.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "ipc/testing/temp_dir.h"

namespace tally::server {
namespace {

TransformedCode Sample() {
  TransformedCode code;
  code.ptx = ".version 8.0\n.target sm_80\n// the forms\n";
  ptx::KernelForms forms;
  forms.analysis.kernel = "k";
  forms.fenced = false;
  forms.fence_refusal = "not asked";
  forms.sliced = "k__sliced";
  forms.preemptible = "k__ptb";
  code.forms.push_back(forms);
  ptx::KernelSignature signature{
      .name = "k__sliced", .demangled = "k__sliced", .params = {}, .param_buffer_size = 24};
  signature.params.push_back({.name = "p0", .size = 8, .alignment = 8, .offset = 0});
  signature.params.push_back({.name = "offset", .size = 12, .alignment = 4, .offset = 8});
  code.variant_signatures.push_back(signature);
  return code;
}

void CheckSame(const TransformedCode& a, const TransformedCode& b) {
  CHECK(a.ptx == b.ptx);
  REQUIRE(a.forms.size() == b.forms.size());
  CHECK(a.forms[0].analysis.kernel == b.forms[0].analysis.kernel);
  CHECK(a.forms[0].fence_refusal == b.forms[0].fence_refusal);
  CHECK(a.forms[0].sliced == b.forms[0].sliced);
  CHECK(a.forms[0].preemptible == b.forms[0].preemptible);
  REQUIRE(a.variant_signatures.size() == b.variant_signatures.size());
  CHECK(a.variant_signatures[0].name == b.variant_signatures[0].name);
  CHECK(a.variant_signatures[0].params == b.variant_signatures[0].params);
  CHECK(a.variant_signatures[0].param_buffer_size == b.variant_signatures[0].param_buffer_size);
}

TEST_CASE("transformed code reads back as it was written; anything else is an error") {
  auto decoded = DecodeTransformedCode(EncodeTransformedCode(Sample()));
  REQUIRE(decoded.ok());
  CheckSame(*decoded, Sample());
  CHECK_FALSE(DecodeTransformedCode("not json").ok());
  CHECK_FALSE(DecodeTransformedCode(R"({"ptx": "x"})").ok());
}

TEST_CASE("forms made once are found by another server on the same folder, per key") {
  const ipc::testing::TempDir temp;
  REQUIRE_FALSE(temp.path().empty());
  const std::filesystem::path dir = temp.path();
  auto open = [&] { return std::shared_ptr<CodeCache>(*CodeCache::Open(dir, 1 << 20)); };
  const ptx::TransformOptions options{.slice = true, .preemptible = true};
  int made = 0;
  auto make = [&]() -> std::optional<TransformedCode> {
    ++made;
    return Sample();
  };
  FormsCache first(open(), "emulated sm_80", 12040);
  CheckSame(*first.FindOrMake(7, "k", options, false, make), Sample());
  FormsCache second(open(), "emulated sm_80", 12040);
  CheckSame(*second.FindOrMake(7, "k", options, false, make), Sample());
  CHECK(made == 1);
  CHECK(second.cache()->counters().hits == 1);
  // Another driver, option or kernel is another entry.
  FormsCache newer_driver(open(), "emulated sm_80", 12050);
  newer_driver.FindOrMake(7, "k", options, false, make);
  second.FindOrMake(7, "k", {.slice = true, .preemptible = true, .fence = true}, false, make);
  second.FindOrMake(7, "other", options, false, make);
  CHECK(made == 4);
  // Nothing is stored for forms that could not be made; without a cache every call makes them.
  second.FindOrMake(8, "k", options, false, [] { return std::optional<TransformedCode>(); });
  CHECK(second.cache()->Usage().entries == 4);
  FormsCache none(nullptr, "emulated sm_80", 12040);
  none.FindOrMake(7, "k", options, false, make);
  CHECK(made == 5);
}

}  // namespace
}  // namespace tally::server
