// cudnnCreate<Kind>Descriptor and cudnnDestroy<Kind>Descriptor for every classic descriptor kind,
// from one table: each pair is its kind's registry (registry.h), so they differ in the kind only.
// What each kind holds and how it is set: descriptors.h, rnn.h and the kinds' *_api.cc files.
#include "libraries/cudnn/descriptors.h"
#include "libraries/cudnn/rnn.h"

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below

// The entry points of the kind whose handle is cudnn<Kind>Descriptor_t and whose state `Object`.
#define TALLY_CUDNN_DESCRIPTOR_LIFETIME(Kind, Object)                            \
  cudnnStatus_t cudnnCreate##Kind##Descriptor(cudnn##Kind##Descriptor_t* desc) { \
    return Live<Object>::CreateEntry(__func__, desc);                            \
  }                                                                              \
  cudnnStatus_t cudnnDestroy##Kind##Descriptor(cudnn##Kind##Descriptor_t desc) { \
    return Live<Object>::DestroyEntry(__func__, desc);                           \
  }

extern "C" {

TALLY_CUDNN_DESCRIPTOR_LIFETIME(Tensor, TensorDescriptor)
TALLY_CUDNN_DESCRIPTOR_LIFETIME(Filter, FilterDescriptor)
TALLY_CUDNN_DESCRIPTOR_LIFETIME(Convolution, ConvolutionDescriptor)
TALLY_CUDNN_DESCRIPTOR_LIFETIME(Activation, ActivationDescriptor)
TALLY_CUDNN_DESCRIPTOR_LIFETIME(OpTensor, OpTensorDescriptor)
TALLY_CUDNN_DESCRIPTOR_LIFETIME(Pooling, PoolingDescriptor)
TALLY_CUDNN_DESCRIPTOR_LIFETIME(Dropout, DropoutDescriptor)
TALLY_CUDNN_DESCRIPTOR_LIFETIME(RNN, RnnDescriptor)
TALLY_CUDNN_DESCRIPTOR_LIFETIME(RNNData, RnnDataDescriptor)

}  // extern "C"

#undef TALLY_CUDNN_DESCRIPTOR_LIFETIME
