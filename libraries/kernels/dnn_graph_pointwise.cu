// The pointwise operations of cuDNN's graphs and cudnnOpTensor (dnn_kernels.h, LaunchPointwise): one kernel for
// every mode and every mix of operand types, which it reads and writes by their run-time types
// (a graph's tensors may each have their own), in a grid-stride loop over y.
#include <cmath>

#include "libraries/kernels/dnn.cuh"

namespace tally::libraries::kernels {
namespace {

template <typename A>
__device__ A Load(const void* data, ElementType type, int64_t offset) {
  switch (type) {
    case ElementType::kF32:
      return static_cast<A>(static_cast<const float*>(data)[offset]);
    case ElementType::kF64:
      return static_cast<A>(static_cast<const double*>(data)[offset]);
    case ElementType::kF16:
      return static_cast<A>(__half2float(static_cast<const __half*>(data)[offset]));
    case ElementType::kBF16:
      return static_cast<A>(__bfloat162float(static_cast<const __nv_bfloat16*>(data)[offset]));
  }
  return A{0};
}

template <typename A>
__device__ void StoreAs(void* data, ElementType type, int64_t offset, A value) {
  switch (type) {
    case ElementType::kF32:
      static_cast<float*>(data)[offset] = static_cast<float>(value);
      return;
    case ElementType::kF64:
      static_cast<double*>(data)[offset] = static_cast<double>(value);
      return;
    case ElementType::kF16:
      static_cast<__half*>(data)[offset] = __float2half_rn(static_cast<float>(value));
      return;
    case ElementType::kBF16:
      static_cast<__nv_bfloat16*>(data)[offset] = __float2bfloat16_rn(static_cast<float>(value));
      return;
  }
}

// Operand `op` at element `index` of y (in y's dimension order), broadcast.
template <typename A>
__device__ A Operand(const PointwiseOperand& op, const TensorShape& y, int64_t index) {
  if (op.by_value) return static_cast<A>(op.value);
  int64_t offset = 0;
  for (int d = y.rank - 1; d >= 0; --d) {
    if (op.shape.dims[d] != 1) offset += (index % y.dims[d]) * op.shape.strides[d];
    index /= y.dims[d];
  }
  return Load<A>(op.data, op.type, offset);
}

template <typename A>
__device__ A Apply(const PointwiseProblem& p, A x, A b) {
  switch (p.mode) {
    case PointwiseMode::kAdd:
      return x + b;
    case PointwiseMode::kSub:
      return x - b;
    case PointwiseMode::kMul:
      return x * b;
    case PointwiseMode::kDiv:
      return x / b;
    case PointwiseMode::kMax:
      return x > b ? x : b;
    case PointwiseMode::kMin:
      return x < b ? x : b;
    case PointwiseMode::kIdentity:
      return x;
    case PointwiseMode::kNeg:
      return -x;
    case PointwiseMode::kAbs:
      return fabs(x);
    case PointwiseMode::kExp:
      return exp(x);
    case PointwiseMode::kLog:
      return log(x);
    case PointwiseMode::kSqrt:
      return sqrt(x);
    case PointwiseMode::kRsqrt:
      return A{1} / sqrt(x);
    case PointwiseMode::kReciprocal:
      return A{1} / x;
    case PointwiseMode::kRelu: {
      const A lower = static_cast<A>(p.relu_lower);
      if (x > static_cast<A>(p.relu_upper)) return static_cast<A>(p.relu_upper);
      return x >= lower ? x : lower + static_cast<A>(p.relu_slope) * (x - lower);
    }
    case PointwiseMode::kTanh:
      return tanh(x);
    case PointwiseMode::kSigmoid:
      return Sigmoid(x);
    case PointwiseMode::kElu:
      return x > A{0} ? x : static_cast<A>(p.elu_alpha) * (exp(x) - A{1});
    case PointwiseMode::kGelu:
      return A{0.5} * x * (A{1} + erf(x / sqrt(A{2})));
    case PointwiseMode::kGeluTanh:
      return A{0.5} * x *
             (A{1} + tanh(A{0.7978845608028654} * (x + A{0.044715} * x * x * x)));
    case PointwiseMode::kSwish:
      return x * Sigmoid(static_cast<A>(p.swish_beta) * x);
    case PointwiseMode::kSoftplus: {
      const A beta = static_cast<A>(p.softplus_beta);
      return log(A{1} + exp(beta * x)) / beta;
    }
  }
  return x;
}

template <typename A>
__global__ void Pointwise(PointwiseProblem p, int64_t total) {
  const bool binary = p.mode <= PointwiseMode::kMin;  // IsBinary, which is host code
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    const A x = static_cast<A>(p.alpha1) * Operand<A>(p.x, p.y_shape, i);
    const A b = binary ? static_cast<A>(p.alpha2) * Operand<A>(p.b, p.y_shape, i) : A{0};
    const int64_t out = OffsetOf(p.y_shape, i);
    A value = Apply(p, x, b);
    if (p.beta != 0) value += static_cast<A>(p.beta) * Load<A>(p.y, p.y_type, out);
    StoreAs(p.y, p.y_type, out, value);
  }
}

}  // namespace

cudaError_t LaunchPointwise(const PointwiseProblem& problem, cudaStream_t stream) {
  const int64_t total = problem.y_shape.Elements();
  if (problem.in_double) {
    return LaunchKernel(Pointwise<double>, BlocksFor(total), kThreads, stream, problem, total);
  }
  return LaunchKernel(Pointwise<float>, BlocksFor(total), kThreads, stream, problem, total);
}

}  // namespace tally::libraries::kernels
