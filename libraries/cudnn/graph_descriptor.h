// The descriptors of cuDNN's backend (graph) API as the stand-in keeps them: a kind, the
// attributes the application set (each checked against graph_schema's rules), the ones
// Finalize derived, and once finalized nothing changes. A descriptor set as another's attribute
// is copied (a snapshot), so the application may destroy its own afterwards.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

namespace tally::libraries::cudnn {

struct BackendDescriptor;
struct CompiledGraph;
using DescriptorSnapshot = std::shared_ptr<const BackendDescriptor>;

struct AttributeValue {
  cudnnBackendAttributeType_t type = CUDNN_TYPE_HANDLE;
  int64_t count = 0;
  std::vector<std::byte> bytes;               // the elements, but descriptors
  std::vector<DescriptorSnapshot> descriptors;  // CUDNN_TYPE_BACKEND_DESCRIPTOR elements
};

struct BackendDescriptor {
  static constexpr const char* kName = "the backend descriptor";
  cudnnBackendDescriptorType_t type = CUDNN_BACKEND_POINTWISE_DESCRIPTOR;
  bool finalized = false;
  std::map<cudnnBackendAttributeName_t, AttributeValue> attributes;
  // An engine's or execution plan's graph, ready to run.
  std::shared_ptr<const CompiledGraph> graph;

  bool Has(cudnnBackendAttributeName_t name) const { return attributes.count(name) != 0; }
  // The attribute's elements as T (the caller knows its type from the schema); BAD_PARAM when
  // it is missing.
  template <typename T>
  std::vector<T> Values(cudnnBackendAttributeName_t name) const;
  template <typename T>
  T Value(cudnnBackendAttributeName_t name) const;
  template <typename T>
  T ValueOr(cudnnBackendAttributeName_t name, T fallback) const {
    return Has(name) ? Value<T>(name) : fallback;
  }
  // A FLOAT or DOUBLE attribute (alpha, beta) as double.
  double Real(cudnnBackendAttributeName_t name, double fallback) const;
  // The descriptor(s) an attribute holds.
  const BackendDescriptor& Child(cudnnBackendAttributeName_t name) const;
  const std::vector<DescriptorSnapshot>& Children(cudnnBackendAttributeName_t name) const;

  // Sets a derived attribute (Finalize's results).
  template <typename T>
  void Derive(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
              const std::vector<T>& values);
  void DeriveDescriptors(cudnnBackendAttributeName_t name, std::vector<DescriptorSnapshot> values);

 private:
  const AttributeValue& Find(cudnnBackendAttributeName_t name) const;
};

// The bytes of one element of an attribute type; BAD_PARAM for an unknown type.
size_t AttributeElementBytes(cudnnBackendAttributeType_t type);

}  // namespace tally::libraries::cudnn

#include "libraries/cudnn/graph_descriptor_inl.h"
