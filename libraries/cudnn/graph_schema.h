// What each kind of backend descriptor accepts, as a table: its attributes, their types, which
// the application must set before Finalize, which Finalize derives (read-only), and which cuDNN
// has that Tally does not implement (refused as NOT_SUPPORTED, naming them; an attribute of no
// rule of the kind is BAD_PARAM, as cuDNN says). A kind the table lacks is NOT_SUPPORTED.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <span>

namespace tally::libraries::cudnn {

enum class Need : uint8_t {
  kRequired,  // Finalize refuses the descriptor without it
  kOptional,
  kDerived,   // Finalize sets it; SetAttribute refuses it
  kMissing,   // cuDNN has it, Tally does not (NOT_SUPPORTED); any other name is BAD_PARAM
};

struct AttributeRule {
  cudnnBackendAttributeName_t name;
  cudnnBackendAttributeType_t type;
  Need need;
  // A second type the attribute may have (alpha and beta: FLOAT or DOUBLE); else the first.
  cudnnBackendAttributeType_t other_type;
};

struct DescriptorRule {
  cudnnBackendDescriptorType_t type;
  const char* name;
  std::span<const AttributeRule> attributes;
};

// The rule of a kind, or null when Tally does not implement it.
const DescriptorRule* RuleFor(cudnnBackendDescriptorType_t type);
// The rule of one attribute of a kind, or null.
const AttributeRule* RuleFor(const DescriptorRule& kind, cudnnBackendAttributeName_t name);

}  // namespace tally::libraries::cudnn
