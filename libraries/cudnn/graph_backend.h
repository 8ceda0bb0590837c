// The operations of cuDNN's backend API on the stand-in's descriptors (graph_descriptor.h):
// setting and reading attributes by graph_schema's rules, finalizing (checking a descriptor and
// deriving what cuDNN derives: the engine heuristics' configurations, a plan's workspace size)
// and executing a plan with a variant pack.
#pragma once

#include <cudnn.h>

#include "libraries/cudnn/graph_descriptor.h"

namespace tally::libraries::cudnn {

// A descriptor of a kind Tally implements (NOT_SUPPORTED for the others).
void CreateBackendDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* out);
void SetAttribute(BackendDescriptor& desc, cudnnBackendAttributeName_t name,
                  cudnnBackendAttributeType_t type, int64_t count, const void* elements);
// Writes at most `requested` elements (descriptors are copied into the caller's, which must be
// of the value's kind) and the attribute's element count.
void GetAttribute(const BackendDescriptor& desc, cudnnBackendAttributeName_t name,
                  cudnnBackendAttributeType_t type, int64_t requested, int64_t* count,
                  void* elements);
void Finalize(BackendDescriptor& desc);
void Execute(cudaStream_t stream, const BackendDescriptor& plan, const BackendDescriptor& pack);

}  // namespace tally::libraries::cudnn
