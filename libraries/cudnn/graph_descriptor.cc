// Backend descriptors' attribute storage (graph_descriptor.h).
#include "libraries/cudnn/graph_descriptor.h"

#include <string>

namespace tally::libraries::cudnn {

const AttributeValue& BackendDescriptor::Find(cudnnBackendAttributeName_t name) const {
  auto it = attributes.find(name);
  if (it == attributes.end()) {
    Refuse(CUDNN_STATUS_BAD_PARAM, "attribute " + std::to_string(name) + " was never set");
  }
  return it->second;
}

double BackendDescriptor::Real(cudnnBackendAttributeName_t name, double fallback) const {
  if (!Has(name)) return fallback;
  if (Find(name).type == CUDNN_TYPE_DOUBLE) return Value<double>(name);
  return Value<float>(name);
}

const BackendDescriptor& BackendDescriptor::Child(cudnnBackendAttributeName_t name) const {
  const std::vector<DescriptorSnapshot>& children = Children(name);
  if (children.size() != 1) {
    Refuse(CUDNN_STATUS_BAD_PARAM, "attribute " + std::to_string(name) + " is not one descriptor");
  }
  return *children[0];
}

const std::vector<DescriptorSnapshot>& BackendDescriptor::Children(
    cudnnBackendAttributeName_t name) const {
  const AttributeValue& value = Find(name);
  if (value.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    Refuse(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE, "an attribute read as descriptors");
  }
  return value.descriptors;
}

void BackendDescriptor::DeriveDescriptors(cudnnBackendAttributeName_t name,
                                          std::vector<DescriptorSnapshot> values) {
  AttributeValue& value = attributes[name];
  value.type = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  value.count = static_cast<int64_t>(values.size());
  value.bytes.clear();
  value.descriptors = std::move(values);
}

size_t AttributeElementBytes(cudnnBackendAttributeType_t type) {
  switch (type) {
    case CUDNN_TYPE_HANDLE:
      return sizeof(cudnnHandle_t);
    case CUDNN_TYPE_BOOLEAN:
      return sizeof(bool);
    case CUDNN_TYPE_INT64:
      return sizeof(int64_t);
    case CUDNN_TYPE_FLOAT:
      return sizeof(float);
    case CUDNN_TYPE_DOUBLE:
      return sizeof(double);
    case CUDNN_TYPE_VOID_PTR:
      return sizeof(void*);
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
      return sizeof(cudnnBackendDescriptor_t);
    case CUDNN_TYPE_CHAR:
      return sizeof(char);
    case CUDNN_TYPE_FRACTION:
      return sizeof(cudnnFraction_t);
    case CUDNN_TYPE_INT32:
      return sizeof(int32_t);
    default:
      break;
  }
  // Every other attribute type is an enumeration.
  if (type >= CUDNN_TYPE_DATA_TYPE && type <= CUDNN_TYPE_MOE_GROUPED_MATMUL_MODE) return sizeof(int32_t);
  Refuse(CUDNN_STATUS_BAD_PARAM, "unknown attribute type " + std::to_string(type));
}

}  // namespace tally::libraries::cudnn
