// Transformed code in the code cache: JSON (nlohmann-json) of the module's PTX, each kernel's
// forms and the variants' parameter layouts.
#include "server/forms_cache.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "common/log.h"

namespace tally::server {
namespace {

using nlohmann::json;

// The payload's layout: part of every key, so that a server with another layout never reads
// an entry of this one.
constexpr std::string_view kFormat = "forms-json-1";

json EncodeSignature(const ptx::KernelSignature& signature) {
  json params = json::array();
  for (const ptx::ParamLayout& param : signature.params) {
    params.push_back({param.name, param.size, param.alignment, param.offset});
  }
  return {{"name", signature.name},
          {"demangled", signature.demangled},
          {"params", std::move(params)},
          {"param_buffer_size", signature.param_buffer_size}};
}

ptx::KernelSignature DecodeSignature(const json& value) {
  ptx::KernelSignature signature;
  value.at("name").get_to(signature.name);
  value.at("demangled").get_to(signature.demangled);
  for (const json& param : value.at("params")) {
    signature.params.push_back({.name = param.at(0).get<std::string>(),
                                .size = param.at(1).get<uint32_t>(),
                                .alignment = param.at(2).get<uint32_t>(),
                                .offset = param.at(3).get<uint32_t>()});
  }
  value.at("param_buffer_size").get_to(signature.param_buffer_size);
  return signature;
}

std::string OptionsText(const ptx::TransformOptions& options, bool redirect_output) {
  return absl::StrFormat("%s slice=%d ptb=%d fence=%d redirect_output=%d", kFormat, options.slice,
                         options.preemptible, options.fence, redirect_output);
}

}  // namespace

std::string EncodeTransformedCode(const TransformedCode& code) {
  json forms = json::array();
  for (const ptx::KernelForms& kernel : code.forms) {
    forms.push_back({{"kernel", kernel.analysis.kernel},
                     {"fenced", kernel.fenced},
                     {"fence_refusal", kernel.fence_refusal},
                     {"sliced", kernel.sliced},
                     {"preemptible", kernel.preemptible}});
  }
  json signatures = json::array();
  for (const ptx::KernelSignature& signature : code.variant_signatures) {
    signatures.push_back(EncodeSignature(signature));
  }
  return json{{"ptx", code.ptx}, {"forms", std::move(forms)}, {"signatures", std::move(signatures)}}
      .dump();
}

absl::StatusOr<TransformedCode> DecodeTransformedCode(std::string_view bytes) {
  try {
    const json value = json::parse(bytes);
    TransformedCode code;
    value.at("ptx").get_to(code.ptx);
    for (const json& kernel : value.at("forms")) {
      ptx::KernelForms forms;
      kernel.at("kernel").get_to(forms.analysis.kernel);
      kernel.at("fenced").get_to(forms.fenced);
      kernel.at("fence_refusal").get_to(forms.fence_refusal);
      kernel.at("sliced").get_to(forms.sliced);
      kernel.at("preemptible").get_to(forms.preemptible);
      code.forms.push_back(std::move(forms));
    }
    for (const json& signature : value.at("signatures")) {
      code.variant_signatures.push_back(DecodeSignature(signature));
    }
    return code;
  } catch (const json::exception& error) {
    return absl::DataLossError(absl::StrFormat("transformed code: %s", error.what()));
  }
}

std::optional<TransformedCode> FormsCache::FindOrMake(uint64_t ptx_hash, const std::string& kernel,
                                                      const ptx::TransformOptions& options,
                                                      bool redirect_output, Make make) const {
  if (cache_ == nullptr) return make();
  const CodeKey key{.ptx_hash = ptx_hash,
                    .kernel = kernel,
                    .transform_version = ptx::FormsVersion(options.fence),
                    .options = OptionsText(options, redirect_output),
                    .device = device_,
                    .driver_version = driver_version_};
  if (std::optional<std::string> found = cache_->Find(key)) {
    absl::StatusOr<TransformedCode> code = DecodeTransformedCode(*found);
    if (code.ok()) return *std::move(code);
    // Whole (its checksum held) but not ours to read: made again, and replaced below.
    TALLY_LOG_WARN("code cache: an entry is not transformed code ({}): made again",
                   code.status().ToString());
  }
  std::optional<TransformedCode> made = make();
  if (made) cache_->Store(key, EncodeTransformedCode(*made));
  return made;
}

}  // namespace tally::server
