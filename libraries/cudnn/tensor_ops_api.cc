// cuDNN's tensor operations: add (with broadcast), set, scale, transform (between layouts) and
// op-tensor with its descriptor.
#include "libraries/cudnn/descriptors.h"

namespace tally::libraries::cudnn {
namespace {

// Each of `operand`'s dimensions is `full`'s or 1.
bool Broadcasts(const TensorDescriptor& operand, const TensorDescriptor& full) {
  bool fits = operand.shape.rank == full.shape.rank;
  for (int d = 0; fits && d < full.shape.rank; ++d) {
    fits = operand.shape.dims[d] == full.shape.dims[d] || operand.shape.dims[d] == 1;
  }
  return fits;
}

kernels::PointwiseMode ModeOf(cudnnOpTensorOp_t op) {
  switch (op) {
    case CUDNN_OP_TENSOR_ADD:
      return kernels::PointwiseMode::kAdd;
    case CUDNN_OP_TENSOR_MUL:
      return kernels::PointwiseMode::kMul;
    case CUDNN_OP_TENSOR_MIN:
      return kernels::PointwiseMode::kMin;
    case CUDNN_OP_TENSOR_MAX:
      return kernels::PointwiseMode::kMax;
    case CUDNN_OP_TENSOR_SQRT:
      return kernels::PointwiseMode::kSqrt;
    default:
      break;
  }
  RefuseUnsupported("op-tensor operation " + std::to_string(op));
}

kernels::PointwiseOperand OperandOf(const TensorDescriptor& desc, const void* data,
                                    const char* what) {
  kernels::PointwiseOperand operand;
  operand.type = ElementTypeOf(desc.type);
  operand.shape = desc.shape;
  operand.data = TensorAt(desc, data, what).data;
  return operand;
}

}  // namespace
}  // namespace tally::libraries::cudnn

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below
namespace kernels = tally::libraries::kernels;

extern "C" {

cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void* alpha,
                             const cudnnTensorDescriptor_t a_desc, const void* a,
                             const void* beta, const cudnnTensorDescriptor_t c_desc, void* c) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const TensorDescriptor& added = FindTensor(a_desc);
    const TensorDescriptor& sum = FindTensor(c_desc);
    Require(added.type == sum.type, CUDNN_STATUS_BAD_PARAM, "A and C differ in data type");
    Require(Broadcasts(added, sum), CUDNN_STATUS_BAD_PARAM,
            "each of A's dimensions must be C's or 1");
    CheckLaunch(kernels::LaunchAddTensor(ElementTypeOf(sum.type), ReadBlend(alpha, beta, sum.type),
                                         TensorAt(added, a, "A"), TensorAt(sum, c, "C"),
                                         live.stream));
  });
}

cudnnStatus_t cudnnSetTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t y_desc, void* y,
                             const void* value) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const TensorDescriptor& tensor = FindTensor(y_desc);
    CheckLaunch(kernels::LaunchSetTensor(ElementTypeOf(tensor.type), TensorAt(tensor, y, "y"),
                                         ReadHostElement(value, ElementTypeOf(tensor.type)), live.stream));
  });
}

cudnnStatus_t cudnnScaleTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t y_desc, void* y,
                               const void* alpha) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const TensorDescriptor& tensor = FindTensor(y_desc);
    CheckLaunch(kernels::LaunchScaleTensor(ElementTypeOf(tensor.type), TensorAt(tensor, y, "y"),
                                           ReadScalar(alpha, tensor.type, "alpha"), live.stream));
  });
}

cudnnStatus_t cudnnTransformTensor(cudnnHandle_t handle, const void* alpha,
                                   const cudnnTensorDescriptor_t x_desc, const void* x,
                                   const void* beta, const cudnnTensorDescriptor_t y_desc,
                                   void* y) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const auto [in, out] = FindSameShape(x_desc, y_desc);
    CheckLaunch(kernels::LaunchAddTensor(ElementTypeOf(out.type), ReadBlend(alpha, beta, out.type),
                                         TensorAt(in, x, "x"), TensorAt(out, y, "y"),
                                         live.stream));
  });
}

cudnnStatus_t cudnnSetOpTensorDescriptor(cudnnOpTensorDescriptor_t desc, cudnnOpTensorOp_t op,
                                         cudnnDataType_t compute, cudnnNanPropagation_t nan) {
  return CudnnCall(__func__, [&] {
    OpTensorDescriptor& op_tensor = Live<OpTensorDescriptor>::Find(desc);
    Require(op >= CUDNN_OP_TENSOR_ADD && op <= CUDNN_OP_TENSOR_NOT, CUDNN_STATUS_BAD_PARAM,
            "unknown op-tensor operation");
    Require(compute == CUDNN_DATA_FLOAT || compute == CUDNN_DATA_DOUBLE, CUDNN_STATUS_BAD_PARAM,
            "the compute type is not float or double");
    Require(nan == CUDNN_NOT_PROPAGATE_NAN || nan == CUDNN_PROPAGATE_NAN, CUDNN_STATUS_BAD_PARAM,
            "unknown NaN propagation");
    op_tensor = {true, op, compute, nan};
  });
}

cudnnStatus_t cudnnGetOpTensorDescriptor(const cudnnOpTensorDescriptor_t desc,
                                         cudnnOpTensorOp_t* op, cudnnDataType_t* compute,
                                         cudnnNanPropagation_t* nan) {
  return CudnnCall(__func__, [&] {
    const OpTensorDescriptor& op_tensor = FindOpTensor(desc);
    PutIfWanted(op, op_tensor.op);
    PutIfWanted(compute, op_tensor.compute);
    PutIfWanted(nan, op_tensor.nan);
  });
}

// C = op(alpha1 A, alpha2 B) + beta C, B broadcast (and not read for SQRT).
cudnnStatus_t cudnnOpTensor(cudnnHandle_t handle, const cudnnOpTensorDescriptor_t desc,
                            const void* alpha1, const cudnnTensorDescriptor_t a_desc,
                            const void* a, const void* alpha2,
                            const cudnnTensorDescriptor_t b_desc, const void* b,
                            const void* beta, const cudnnTensorDescriptor_t c_desc, void* c) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const OpTensorDescriptor& op_tensor = FindOpTensor(desc);
    const TensorDescriptor& first = FindTensor(a_desc);
    const TensorDescriptor& out = FindTensor(c_desc);
    RequireSameShape(first, out, "A and C");
    kernels::PointwiseProblem problem;
    problem.mode = ModeOf(op_tensor.op);
    problem.in_double = op_tensor.compute == CUDNN_DATA_DOUBLE;
    // Scalars are double for double data, float otherwise (as for every cuDNN call).
    problem.alpha1 = ReadScalar(alpha1, out.type, "alpha1");
    problem.beta = ReadScalar(beta, out.type, "beta");
    problem.x = OperandOf(first, a, "A");
    if (kernels::IsBinary(problem.mode)) {
      const TensorDescriptor& second = FindTensor(b_desc);
      Require(second.type == out.type && Broadcasts(second, out), CUDNN_STATUS_BAD_PARAM,
              "B is not of C's type, or one of its dimensions is neither C's nor 1");
      problem.alpha2 = ReadScalar(alpha2, out.type, "alpha2");
      problem.b = OperandOf(second, b, "B");
    }
    problem.y_type = ElementTypeOf(out.type);
    problem.y_shape = out.shape;
    problem.y = TensorAt(out, c, "C").data;
    CheckLaunch(kernels::LaunchPointwise(problem, live.stream));
  });
}

}  // extern "C"
