// Tally's own recurrent-network kernels (libraries/kernels/dnn_rnn.cu): the RELU, TANH, LSTM and
// GRU cells of cuDNN's RNN API, forward, backward data and backward weights, one layer direction
// and one time step at a time (a plain kernel per step: correct first, no fused GEMMs yet). Host
// declarations, and the layout of the weight, work and reserve spaces, which the cuDNN stand-in
// and the kernels share.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "libraries/kernels/blas_kernels.h"

namespace tally::libraries::kernels {

enum class RnnCell : uint8_t { kRelu, kTanh, kLstm, kGru };

// The input (or the recurrent) linear layers of a cell: cuDNN's linLayerIDs 0..Gates()-1 are the
// input matrices, Gates()..2 Gates()-1 the recurrent ones.
constexpr int64_t GatesOf(RnnCell cell) {
  return cell == RnnCell::kLstm ? 4 : (cell == RnnCell::kGru ? 3 : 1);
}

// A network as cuDNN's RNN descriptor describes it, with a batch (from the data descriptor).
struct RnnProblem {
  ElementType type = ElementType::kF32;
  RnnCell cell = RnnCell::kLstm;
  int64_t input_size = 0, hidden = 0, layers = 1;
  // The width of h, and of each direction's output: LSTM's recurrent projection size (cuDNN's
  // projSize), the hidden size where there is no projection.
  int64_t projection = 0;
  int64_t directions = 1;
  bool input_bias = true, recurrent_bias = true;
  // The probability with which the output of every layer but the last is dropped before it feeds
  // the next one; only where the call's spaces hold dropout masks (training).
  float dropout = 0;
  int64_t steps = 0, batch = 0;  // maxSeqLength and batchSize

  int64_t Gates() const { return GatesOf(cell); }
  int64_t PseudoLayers() const { return layers * directions; }
  bool Projected() const { return projection != hidden; }
  // The width of layer l's input: the data's, or both directions' outputs of the layer below.
  int64_t InputWidth(int64_t layer) const {
    return layer == 0 ? input_size : directions * projection;
  }

  // The weight space, in elements of the data type: for each pseudo-layer (layer * directions +
  // direction) the input matrices (hidden x input width, row-major), the recurrent matrices
  // (hidden x projection), the input biases, the recurrent biases (hidden each), in linLayerID
  // order, so that the matrices of one kind, and the biases of one kind, follow each other; then
  // the projection matrix (projection x hidden) where there is one.
  int64_t InputMatrixElements(int64_t layer) const { return hidden * InputWidth(layer); }
  int64_t PseudoLayerElements(int64_t layer) const {
    return ProjectionOffset(layer) + (Projected() ? projection * hidden : 0);
  }
  int64_t PseudoLayerOffset(int64_t pseudo_layer) const {
    int64_t offset = 0;
    for (int64_t p = 0; p < pseudo_layer; ++p) offset += PseudoLayerElements(p / directions);
    return offset;
  }
  int64_t WeightElements() const { return PseudoLayerOffset(PseudoLayers()); }
  // Within a pseudo-layer of `layer`: where the recurrent matrices and the biases start.
  int64_t RecurrentMatricesOffset(int64_t layer) const {
    return Gates() * InputMatrixElements(layer);
  }
  int64_t InputBiasesOffset(int64_t layer) const {
    return RecurrentMatricesOffset(layer) + Gates() * hidden * projection;
  }
  int64_t RecurrentBiasesOffset(int64_t layer) const {
    return InputBiasesOffset(layer) + (input_bias ? Gates() * hidden : 0);
  }
  int64_t ProjectionOffset(int64_t layer) const {
    return RecurrentBiasesOffset(layer) + (recurrent_bias ? Gates() * hidden : 0);
  }

  // What a forward step keeps per (step, sequence), in the computation's type: h, c for LSTM, and
  // the gate activations (LSTM: i, f, c', o; GRU: r, z, h' and the recurrent term of h'; none for
  // the plain cells, whose derivative comes from h).
  int64_t GateSlots() const { return cell == RnnCell::kRelu || cell == RnnCell::kTanh ? 0 : 4; }
  int64_t ForwardKeptPerStep() const {
    return projection + hidden * ((cell == RnnCell::kLstm ? 1 : 0) + GateSlots());
  }
  // What backward data keeps for backward weights: the gradients of the input pre-activations,
  // and of the recurrent ones where they differ (GRU's h'), then h's (the projection's input).
  bool SeparateRecurrentGradient() const { return cell == RnnCell::kGru; }
  int64_t GradientsKeptPerStep() const {
    return hidden * Gates() * (SeparateRecurrentGradient() ? 2 : 1) +
           (Projected() ? projection : 0);
  }
  // The dropout masks of a training pass: a byte per element of the outputs of every layer but
  // the last, [layer][step][sequence][direction * projection + unit] (the order in which
  // dropout_bits.h numbers them from the states' offset).
  int64_t DropoutMaskElements() const {
    return (layers - 1) * steps * batch * directions * projection;
  }
};

// The spaces of a call, in bytes (`compute_bytes`: the size of the computation's type, 8 for f64
// data, 4 otherwise). What the forward steps keep comes first, then the gradients, then the
// dropout masks: training keeps all three in the reserve space, inference the forward part after
// the workspace. The workspace holds the sequence rows, the initial states and the backward
// pass's running gradients.
struct RnnSpaces {
  size_t workspace = 0;
  size_t forward_kept = 0;
  size_t gradients_kept = 0;
  size_t dropout_masks = 0;

  size_t Reserve() const { return forward_kept + gradients_kept + dropout_masks; }
};
inline size_t RoundUp(size_t bytes) { return (bytes + 255) / 256 * 256; }
// The sequences' table (RnnSequences) in entries.
inline size_t SequenceTableEntries(const RnnProblem& problem) {
  return static_cast<size_t>(problem.steps * problem.batch + problem.batch);
}
inline RnnSpaces SpacesOf(const RnnProblem& problem, size_t compute_bytes) {
  const auto cells = static_cast<size_t>(problem.steps * problem.batch);
  const auto per_cell = static_cast<size_t>(problem.PseudoLayers()) * compute_bytes;
  const auto state = static_cast<size_t>(problem.batch * problem.hidden) * compute_bytes;
  const auto layer_output = cells * problem.directions * problem.projection * compute_bytes;
  RnnSpaces spaces;
  spaces.forward_kept = RoundUp(cells * per_cell * problem.ForwardKeptPerStep());
  spaces.gradients_kept = RoundUp(cells * per_cell * problem.GradientsKeptPerStep());
  spaces.dropout_masks = RoundUp(static_cast<size_t>(problem.DropoutMaskElements()));
  spaces.workspace = RoundUp(SequenceTableEntries(problem) * sizeof(int64_t)) +
                     2 * RoundUp(state * problem.PseudoLayers()) +  // h0, c0
                     RoundUp(layer_output) +                        // a layer's input gradient
                     4 * RoundUp(state);  // dh, dh', dc, and the gradient of o tanh(c)
  return spaces;
}

// The sequences of a call: `table`, a host array of SequenceTableEntries (the launchers copy it
// into the workspace), holds for each step t and sequence b the row of x, y (and dx, dy) in
// device memory where that step's vector is, at [t * batch + b] (-1 where the layout has none),
// then each sequence's length at [steps * batch + b]: rows past a sequence's end are padding. h
// tensors are pseudo-layer x batch x projection, c tensors pseudo-layer x batch x hidden, packed;
// null states are zeros (or not wanted).
struct RnnSequences {
  const int64_t* table = nullptr;
  const void* x = nullptr;
  void* y = nullptr;
  bool fill_padding = false;  // write `padding` at y's padding rows
  double padding = 0;
};
struct RnnSpacePointers {
  const void* weights = nullptr;
  void* workspace = nullptr;
  void* kept = nullptr;  // the forward part, then the gradients (SpacesOf)
  // Where a training pass with dropout keeps its masks (DropoutMaskElements); null: no dropout.
  uint8_t* dropout_masks = nullptr;
};

struct RnnForwardCall {
  RnnSequences data;
  const void* hx = nullptr;
  void* hy = nullptr;
  const void* cx = nullptr;
  void* cy = nullptr;
  void* dropout_states = nullptr;  // what the masks are drawn from (dropout_kernels.h)
  RnnSpacePointers spaces;
};
cudaError_t LaunchRnnForward(const RnnProblem& problem, const RnnForwardCall& call,
                             cudaStream_t stream);

// After a training forward pass with the same reserve space: dx, dhx, dcx from dy, dhy, dcy
// (null gradients are zeros); keeps the pre-activation gradients for LaunchRnnBackwardWeights.
struct RnnBackwardDataCall {
  RnnSequences data;  // data.x is dy, data.y is dx (fill_padding unused)
  const void* hx = nullptr;
  const void* dhy = nullptr;
  void* dhx = nullptr;
  const void* cx = nullptr;
  const void* dcy = nullptr;
  void* dcx = nullptr;
  RnnSpacePointers spaces;
};
cudaError_t LaunchRnnBackwardData(const RnnProblem& problem, const RnnBackwardDataCall& call,
                                  cudaStream_t stream);

// After LaunchRnnBackwardData with the same reserve space: the weights' gradients, added to
// `d_weights` or written over it (`add`).
struct RnnBackwardWeightsCall {
  RnnSequences data;  // data.x is x
  const void* hx = nullptr;
  void* d_weights = nullptr;
  bool add = true;
  RnnSpacePointers spaces;  // spaces.weights unused
};
cudaError_t LaunchRnnBackwardWeights(const RnnProblem& problem, const RnnBackwardWeightsCall& call,
                                     cudaStream_t stream);

}  // namespace tally::libraries::kernels
