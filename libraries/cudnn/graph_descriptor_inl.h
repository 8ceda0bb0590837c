// The templates of graph_descriptor.h.
#pragma once

#include <cstring>

#include "libraries/cudnn/status.h"

namespace tally::libraries::cudnn {

template <typename T>
std::vector<T> BackendDescriptor::Values(cudnnBackendAttributeName_t name) const {
  const AttributeValue& value = Find(name);
  if (value.bytes.size() != value.count * sizeof(T)) {
    Refuse(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE, "an attribute read as the wrong type");
  }
  std::vector<T> out(value.count);
  for (size_t i = 0; i < out.size(); ++i) {  // element by element: T may be bool
    T element;
    std::memcpy(&element, value.bytes.data() + i * sizeof(T), sizeof(T));
    out[i] = element;
  }
  return out;
}

template <typename T>
T BackendDescriptor::Value(cudnnBackendAttributeName_t name) const {
  const AttributeValue& value = Find(name);
  if (value.count != 1 || value.bytes.size() != sizeof(T)) {
    Refuse(CUDNN_STATUS_BAD_PARAM, "attribute " + std::to_string(name) + " is not one value");
  }
  T out;
  std::memcpy(&out, value.bytes.data(), sizeof(T));
  return out;
}

template <typename T>
void BackendDescriptor::Derive(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                               const std::vector<T>& values) {
  AttributeValue& value = attributes[name];
  value.type = type;
  value.count = static_cast<int64_t>(values.size());
  value.bytes.resize(values.size() * sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {  // element by element: T may be bool
    const T element = values[i];
    std::memcpy(value.bytes.data() + i * sizeof(T), &element, sizeof(T));
  }
  value.descriptors.clear();
}

}  // namespace tally::libraries::cudnn
