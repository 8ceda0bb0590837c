// Creating backend descriptors and their attributes by graph_schema's rules (graph_backend.h).
#include <cstring>
#include <limits>
#include <string>

#include "libraries/cudnn/graph_backend.h"
#include "libraries/cudnn/graph_schema.h"
#include "libraries/cudnn/registry.h"

namespace tally::libraries::cudnn {
namespace {

const DescriptorRule& KindOf(const BackendDescriptor& desc) {
  const DescriptorRule* kind = RuleFor(desc.type);
  if (kind == nullptr) Refuse(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE, "unknown kind");
  return *kind;
}

// The rule of an attribute the descriptor's kind has, `type` being one of its types.
const AttributeRule& CheckedRule(const BackendDescriptor& desc, cudnnBackendAttributeName_t name,
                                 cudnnBackendAttributeType_t type) {
  const DescriptorRule& kind = KindOf(desc);
  const AttributeRule* rule = RuleFor(kind, name);
  if (rule == nullptr) {
    Refuse(CUDNN_STATUS_BAD_PARAM,
           "attribute " + std::to_string(name) + " is not one of " + kind.name);
  }
  if (rule->need == Need::kMissing) {
    RefuseUnsupported("attribute " + std::to_string(name) + " of " + kind.name);
  }
  Require(type == rule->type || type == rule->other_type, CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
          "the attribute type is not the attribute's");
  return *rule;
}

template <typename T>
void Default(BackendDescriptor& desc, cudnnBackendAttributeName_t name,
             cudnnBackendAttributeType_t type, T value) {
  desc.Derive<T>(name, type, {value});
}

// The values cuDNN's documentation gives the optional attributes that have one, read back as
// such before the application sets them.
void SetDefaults(BackendDescriptor& desc) {
  switch (desc.type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      Default<bool>(desc, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, false);
      Default<bool>(desc, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, false);
      Default<int64_t>(desc, CUDNN_ATTR_TENSOR_VECTOR_COUNT, CUDNN_TYPE_INT64, 1);
      Default<int64_t>(desc, CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION, CUDNN_TYPE_INT64, -1);
      Default(desc, CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE,
              CUDNN_TENSOR_REORDERING_NONE);
      return;
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
      Default<double>(desc, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, 0);
      Default<double>(desc, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE,
                      std::numeric_limits<double>::max());
      Default<double>(desc, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_DOUBLE, 0);
      Default<double>(desc, CUDNN_ATTR_POINTWISE_ELU_ALPHA, CUDNN_TYPE_DOUBLE, 1);
      Default<double>(desc, CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA, CUDNN_TYPE_DOUBLE, 1);
      Default<double>(desc, CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1);
      return;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      Default<bool>(desc, CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED, CUDNN_TYPE_BOOLEAN,
                    false);
      return;
    default:
      return;
  }
}

}  // namespace

void CreateBackendDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* out) {
  if (RuleFor(type) == nullptr) {
    RefuseUnsupported("backend descriptor type " + std::to_string(type));
  }
  Live<BackendDescriptor>::Create(out);
  BackendDescriptor& desc = Live<BackendDescriptor>::Find(*out);
  desc.type = type;
  SetDefaults(desc);
}

void SetAttribute(BackendDescriptor& desc, cudnnBackendAttributeName_t name,
                  cudnnBackendAttributeType_t type, int64_t count, const void* elements) {
  // cuDNN's documentation: NOT_INITIALIZED for a finalized descriptor here, and for one not
  // finalized in GetAttribute.
  Require(!desc.finalized, CUDNN_STATUS_NOT_INITIALIZED, "the descriptor is already finalized");
  const AttributeRule& rule = CheckedRule(desc, name, type);
  Require(rule.need != Need::kDerived, CUDNN_STATUS_BAD_PARAM,
          "the attribute is derived by cudnnBackendFinalize, not set");
  Require(count >= 0, CUDNN_STATUS_BAD_PARAM, "the element count is negative");
  if (count > 0) RequireNotNull(elements, "the element array");
  AttributeValue value;
  value.type = type;
  value.count = count;
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    const auto* handles = static_cast<const cudnnBackendDescriptor_t*>(elements);
    for (int64_t i = 0; i < count; ++i) {
      const BackendDescriptor& child = Live<BackendDescriptor>::Find(handles[i]);
      Require(child.finalized, CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
              "a descriptor set as an attribute is not finalized");
      value.descriptors.push_back(std::make_shared<const BackendDescriptor>(child));
    }
  } else {
    value.bytes.resize(static_cast<size_t>(count) * AttributeElementBytes(type));
    if (count > 0) std::memcpy(value.bytes.data(), elements, value.bytes.size());
  }
  desc.attributes[name] = std::move(value);
}

void GetAttribute(const BackendDescriptor& desc, cudnnBackendAttributeName_t name,
                  cudnnBackendAttributeType_t type, int64_t requested, int64_t* count,
                  void* elements) {
  Require(desc.finalized, CUDNN_STATUS_NOT_INITIALIZED, "the descriptor is not finalized");
  CheckedRule(desc, name, type);
  Require(requested >= 0, CUDNN_STATUS_BAD_PARAM, "the requested count is negative");
  auto it = desc.attributes.find(name);
  const int64_t available = it == desc.attributes.end() ? 0 : it->second.count;
  if (count != nullptr) *count = available;
  const int64_t written = std::min(requested, available);
  if (written == 0) return;
  RequireNotNull(elements, "the element array");
  const AttributeValue& value = it->second;
  Require(value.type == type, CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
          "the attribute holds another type");
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    auto* handles = static_cast<cudnnBackendDescriptor_t*>(elements);
    for (int64_t i = 0; i < written; ++i) {
      BackendDescriptor& target = Live<BackendDescriptor>::Find(handles[i]);
      Require(target.type == value.descriptors[i]->type, CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
              "a descriptor to copy into is of another kind");
      target = *value.descriptors[i];
    }
    return;
  }
  std::memcpy(elements, value.bytes.data(),
              static_cast<size_t>(written) * AttributeElementBytes(type));
}

}  // namespace tally::libraries::cudnn
