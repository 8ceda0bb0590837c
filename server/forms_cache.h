// Transformed code found in the code cache (server/code_cache.h), or made and stored there: the
// module registry's one seam for "make a kernel's (or a module's) transformed forms".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "ptx_transform/kernel_signature.h"
#include "ptx_transform/transform.h"
#include "server/code_cache.h"

namespace tally::server {

// Transformed code as the device loads it: the variants (ptx_transform/transform.h) and the
// originals they were made from, in one module.
struct TransformedCode {
  std::string ptx;
  std::vector<ptx::KernelForms> forms;
  std::vector<ptx::KernelSignature> variant_signatures;
};

// What the cache keeps of `code`: everything the registry reads of it when it loads the forms
// (of each kernel's analysis only its name: why a kernel was not transformed is logged when it
// is made). Decoding fails on anything else.
std::string EncodeTransformedCode(const TransformedCode& code);
absl::StatusOr<TransformedCode> DecodeTransformedCode(std::string_view bytes);

class FormsCache {
 public:
  // Without `cache` (--code-cache none) every call makes the forms. `device` and
  // `driver_version` are the keys' device identity.
  FormsCache(std::shared_ptr<CodeCache> cache, std::string device, int driver_version)
      : cache_(std::move(cache)), device_(std::move(device)), driver_version_(driver_version) {}

  using Make = absl::FunctionRef<std::optional<TransformedCode>()>;
  // The forms made from the PTX hashed `ptx_hash` with `options`, of `kernel` alone (empty: the
  // whole module's, with device output redirected where `redirect_output`): from the cache, else
  // by `make` (stored when it made some).
  std::optional<TransformedCode> FindOrMake(uint64_t ptx_hash, const std::string& kernel,
                                            const ptx::TransformOptions& options,
                                            bool redirect_output, Make make) const;
  // Null without a cache.
  CodeCache* cache() const { return cache_.get(); }

 private:
  std::shared_ptr<CodeCache> cache_;
  std::string device_;
  int driver_version_ = 0;
};

}  // namespace tally::server
