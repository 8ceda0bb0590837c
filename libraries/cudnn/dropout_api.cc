// cuDNN's dropout: the descriptor (create, set, restore, get, destroy), the sizes of its states
// and reserve space, and cudnnDropoutForward/Backward, on Tally's kernels (dropout_kernels.h).
// The states buffer holds the random stream's seed and position (dropout_bits.h): set writes it,
// restore takes it as it stands (PyTorch restores every descriptor from one states buffer), and
// every mask drawn, here or between RNN layers, moves it on.
#include <string>

#include "libraries/cudnn/rnn.h"
#include "libraries/kernels/dropout_bits.h"
#include "libraries/kernels/dropout_kernels.h"

namespace tally::libraries::cudnn {
namespace {

constexpr size_t kStatesBytes = sizeof(kernels::DropoutStates);

void SetDropout(cudnnDropoutDescriptor_t desc, cudnnHandle_t handle, float probability,
                void* states, size_t states_bytes, unsigned long long seed, bool initialise) {
  DropoutDescriptor& dropout = Live<DropoutDescriptor>::Find(desc);
  const Handle& live = FindHandle(handle);
  Require(probability >= 0 && probability < 1, CUDNN_STATUS_BAD_PARAM,
          "the dropout probability is not in [0, 1)");
  if (probability > 0) RequireNotNull(states, "the states buffer of a dropout above 0");
  Require(states == nullptr || states_bytes >= kStatesBytes, CUDNN_STATUS_INVALID_VALUE,
          "the states buffer is smaller than cudnnDropoutGetStatesSize says");
  if (initialise && states != nullptr) {
    CheckLaunch(kernels::LaunchDropoutStatesInit(states, seed, live.stream));
  }
  dropout = {true, probability, states, states_bytes, seed};
}

// The reserve space of a dropout on `x`: a mask byte per element.
size_t ReserveBytes(const TensorDescriptor& x) { return static_cast<size_t>(x.shape.Elements()); }

// out = in masked and scaled, as cudnnDropoutForward (drawing the mask into the reserve space) and
// cudnnDropoutBackward (the mask the forward call drew) do.
void Apply(cudnnHandle_t handle, cudnnDropoutDescriptor_t desc, cudnnTensorDescriptor_t in_desc,
           const void* in, cudnnTensorDescriptor_t out_desc, void* out, void* reserve,
           size_t reserve_bytes, bool draw) {
  const Handle& live = FindHandle(handle);
  const DropoutDescriptor& dropout = FindDropout(desc);
  const TensorDescriptor& from = FindTensor(in_desc);
  const TensorDescriptor& to = FindTensor(out_desc);
  bool same_dims = from.shape.rank == to.shape.rank;
  bool same_strides = same_dims;
  for (int d = 0; same_dims && d < from.shape.rank; ++d) {
    same_dims = from.shape.dims[d] == to.shape.dims[d];
    same_strides = same_strides && from.shape.strides[d] == to.shape.strides[d];
  }
  Require(from.type == to.type && same_dims, CUDNN_STATUS_BAD_PARAM,
          "the input and output tensors differ in type or dimensions");
  RequireNotNull(in, "the input");
  RequireNotNull(out, "the output");
  Require(in != out || same_strides, CUDNN_STATUS_BAD_PARAM,
          "in place with different strides for the input and the output");
  RequireNotNull(reserve, "the reserve space");
  Require(reserve_bytes >= ReserveBytes(from), CUDNN_STATUS_BAD_PARAM,
          "the reserve space is smaller than cudnnDropoutGetReserveSpaceSize says");
  auto* keep = static_cast<uint8_t*>(reserve);
  if (draw) {
    CheckLaunch(kernels::LaunchDropoutMask(dropout.states, dropout.probability, keep,
                                           from.shape.Elements(), live.stream));
  }
  CheckLaunch(kernels::LaunchDropoutApply(ElementTypeOf(from.type), dropout.probability, keep,
                                          {from.shape, const_cast<void*>(in)}, {to.shape, out},
                                          live.stream));
}

}  // namespace
}  // namespace tally::libraries::cudnn

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below

extern "C" {

cudnnStatus_t cudnnDropoutGetStatesSize(cudnnHandle_t handle, size_t* size) {
  return CudnnCall(__func__, [&] {
    FindHandle(handle);
    RequireNotNull(size, "the size pointer");
    *size = kStatesBytes;
  });
}

cudnnStatus_t cudnnDropoutGetReserveSpaceSize(cudnnTensorDescriptor_t x_desc, size_t* size) {
  return CudnnCall(__func__, [&] {
    const TensorDescriptor& x = FindTensor(x_desc);
    RequireNotNull(size, "the size pointer");
    *size = ReserveBytes(x);
  });
}

cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t desc, cudnnHandle_t handle,
                                        float probability, void* states, size_t states_bytes,
                                        unsigned long long seed) {
  return CudnnCall(
      __func__, [&] { SetDropout(desc, handle, probability, states, states_bytes, seed, true); });
}

cudnnStatus_t cudnnRestoreDropoutDescriptor(cudnnDropoutDescriptor_t desc, cudnnHandle_t handle,
                                            float probability, void* states, size_t states_bytes,
                                            unsigned long long seed) {
  return CudnnCall(
      __func__, [&] { SetDropout(desc, handle, probability, states, states_bytes, seed, false); });
}

cudnnStatus_t cudnnGetDropoutDescriptor(cudnnDropoutDescriptor_t desc, cudnnHandle_t handle,
                                        float* probability, void** states,
                                        unsigned long long* seed) {
  return CudnnCall(__func__, [&] {
    const DropoutDescriptor& dropout = FindDropout(desc);
    FindHandle(handle);
    PutIfWanted(probability, dropout.probability);
    PutIfWanted(states, dropout.states);
    PutIfWanted(seed, dropout.seed);
  });
}

cudnnStatus_t cudnnDropoutForward(cudnnHandle_t handle, const cudnnDropoutDescriptor_t desc,
                                  const cudnnTensorDescriptor_t x_desc, const void* x,
                                  const cudnnTensorDescriptor_t y_desc, void* y, void* reserve,
                                  size_t reserve_bytes) {
  return CudnnCall(
      __func__, [&] { Apply(handle, desc, x_desc, x, y_desc, y, reserve, reserve_bytes, true); });
}

cudnnStatus_t cudnnDropoutBackward(cudnnHandle_t handle, const cudnnDropoutDescriptor_t desc,
                                   const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                   const cudnnTensorDescriptor_t dx_desc, void* dx, void* reserve,
                                   size_t reserve_bytes) {
  return CudnnCall(__func__, [&] {
    Apply(handle, desc, dy_desc, dy, dx_desc, dx, reserve, reserve_bytes, false);
  });
}

}  // extern "C"
