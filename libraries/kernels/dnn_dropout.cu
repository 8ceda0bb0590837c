// Dropout (dropout_kernels.h): the mask is drawn by one launch and the states advanced by
// another, so that every thread of the first reads the offset before it changes.
#include "libraries/kernels/dnn.cuh"
#include "libraries/kernels/dropout_bits.h"
#include "libraries/kernels/dropout_kernels.h"

namespace tally::libraries::kernels {
namespace {

__global__ void InitStates(DropoutStates* states, uint64_t seed) {
  if (FirstIndex() == 0) *states = {seed, 0};
}

__global__ void DrawMask(const DropoutStates* states, uint32_t threshold, uint8_t* keep,
                         int64_t n) {
  const uint64_t seed = states == nullptr ? 0 : states->seed;
  const uint64_t offset = states == nullptr ? 0 : states->offset;
  for (int64_t i = FirstIndex(); i < n; i += GridStep()) {
    keep[i] = DropoutKeeps(seed, offset + i, threshold) ? 1 : 0;
  }
}

__global__ void AdvanceStates(DropoutStates* states, int64_t n) {
  if (FirstIndex() == 0) states->offset += n;
}

template <typename T>
__global__ void ApplyMask(Tensor in, Tensor out, const uint8_t* keep, Compute<T> scale, int64_t n) {
  using A = Compute<T>;
  const auto* x = static_cast<const T*>(in.data);
  auto* y = static_cast<T*>(out.data);
  for (int64_t e = FirstIndex(); e < n; e += GridStep()) {
    const A kept = keep[e] != 0 ? ToAcc<A>(x[OffsetOf(in.shape, e)]) * scale : A{0};
    y[OffsetOf(out.shape, e)] = FromAcc<T>(kept);
  }
}

}  // namespace

cudaError_t LaunchDropoutStatesInit(void* states, uint64_t seed, cudaStream_t stream) {
  return LaunchKernel(InitStates, 1, 1, stream, static_cast<DropoutStates*>(states), seed);
}

cudaError_t LaunchDropoutMask(void* states, float probability, uint8_t* keep, int64_t n,
                              cudaStream_t stream) {
  auto* typed = static_cast<DropoutStates*>(states);
  const cudaError_t drawn = LaunchKernel(DrawMask, BlocksFor(n), kThreads, stream, typed,
                                         DropThreshold(probability), keep, n);
  if (drawn != cudaSuccess || typed == nullptr) return drawn;
  return LaunchKernel(AdvanceStates, 1, 1, stream, typed, n);
}

cudaError_t LaunchDropoutApply(ElementType type, float probability, const uint8_t* keep,
                               const Tensor& in, const Tensor& out, cudaStream_t stream) {
  const int64_t n = in.shape.Elements();
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    return LaunchKernel(ApplyMask<T>, BlocksFor(n), kThreads, stream, in, out, keep,
                        static_cast<Compute<T>>(KeptScale(probability)), n);
  });
}

}  // namespace tally::libraries::kernels
