// cuDNN's backend (graph) API entry points (graph_backend.h does the work).
#include "libraries/cudnn/descriptors.h"
#include "libraries/cudnn/graph_backend.h"

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below

extern "C" {

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t* desc) {
  return CudnnCall(__func__, [&] { CreateBackendDescriptor(type, desc); });
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t desc) {
  return Live<BackendDescriptor>::DestroyEntry(__func__, desc);
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void* elements) {
  return CudnnCall(__func__, [&] {
    SetAttribute(Live<BackendDescriptor>::Find(desc), name, type, count, elements);
  });
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested,
                                       int64_t* count, void* elements) {
  return CudnnCall(__func__, [&] {
    GetAttribute(Live<BackendDescriptor>::Find(desc), name, type, requested, count, elements);
  });
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t desc) {
  return CudnnCall(__func__, [&] { Finalize(Live<BackendDescriptor>::Find(desc)); });
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t pack) {
  return CudnnCall(__func__, [&] {
    const Handle& live = FindHandle(handle);
    Execute(live.stream, Live<BackendDescriptor>::Find(plan), Live<BackendDescriptor>::Find(pack));
  });
}

}  // extern "C"
