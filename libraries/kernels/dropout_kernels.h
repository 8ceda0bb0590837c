// Tally's dropout kernels (libraries/kernels/dnn_dropout.cu): a dropout descriptor's states,
// masks drawn from them (dropout_bits.h) and masks applied. A mask holds a byte per element, 1
// where the element is kept; kept elements are scaled by 1 / (1 - p). Host declarations.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "libraries/kernels/dnn_kernels.h"

namespace tally::libraries::kernels {

// Writes `seed` and a zero offset into a states buffer (DropoutStates).
cudaError_t LaunchDropoutStatesInit(void* states, uint64_t seed, cudaStream_t stream);

// Draws `n` mask bytes for drop probability p from the states' offset on, and advances the
// offset by n. Null states (a descriptor set without them, at p 0) keep everything.
cudaError_t LaunchDropoutMask(void* states, float probability, uint8_t* keep, int64_t n,
                              cudaStream_t stream);

// out = in where `keep` says (in the tensors' dimension order), scaled; 0 elsewhere. `in` and `out`
// have the same dimensions and may be the same memory.
cudaError_t LaunchDropoutApply(ElementType type, float probability, const uint8_t* keep,
                               const Tensor& in, const Tensor& out, cudaStream_t stream);

}  // namespace tally::libraries::kernels
