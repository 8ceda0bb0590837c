// cuDNN's recurrent networks as the stand-in keeps them: the RNN, RNN data and dropout
// descriptors (live in registry.h's registries), and what a call's descriptors make of them for
// Tally's kernels (libraries/kernels/rnn_kernels.h): the network and batch, the sequences' table,
// and the sizes of the weight, work and reserve spaces.
#pragma once

#include <cudnn.h>

#include <array>
#include <vector>

#include "libraries/cudnn/descriptors.h"
#include "libraries/kernels/rnn_kernels.h"

namespace tally::libraries::cudnn {

// A dropout's probability and states: the states are the application's device memory, which holds
// the random stream's seed and position (kernels/dropout_bits.h).
struct DropoutDescriptor {
  static constexpr const char* kName = "the dropout descriptor";
  bool set = false;
  float probability = 0;
  void* states = nullptr;
  size_t states_bytes = 0;
  unsigned long long seed = 0;
};

// cudnnSetRNNDescriptor_v8's arguments, as given (checked when set).
struct RnnDescriptor {
  static constexpr const char* kName = "the RNN descriptor";
  bool set = false;
  cudnnRNNAlgo_t algo = CUDNN_RNN_ALGO_STANDARD;
  cudnnRNNMode_t cell = CUDNN_LSTM;
  cudnnRNNBiasMode_t bias = CUDNN_RNN_DOUBLE_BIAS;
  cudnnDirectionMode_t direction = CUDNN_UNIDIRECTIONAL;
  cudnnRNNInputMode_t input = CUDNN_LINEAR_INPUT;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnDataType_t math_precision = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  int32_t input_size = 0, hidden = 0, projection = 0, layers = 0;
  cudnnDropoutDescriptor_t dropout = nullptr;
  uint32_t flags = 0;
  cudnnRNNClipMode_t clip = CUDNN_RNN_CLIP_NONE;
};

// A batch of sequences: maxSeqLength x batchSize vectors of vectorSize elements, laid out as
// `layout` says, each sequence's length.
struct RnnDataDescriptor {
  static constexpr const char* kName = "the RNN data descriptor";
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnRNNDataLayout_t layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED;
  int max_steps = 0, batch = 0, width = 0;
  std::vector<int> lengths;
  bool has_fill = false;  // paddingFill: one element of `type`, as given
  alignas(8) std::array<unsigned char, 8> fill{};  // aligned: read as the element type
};

const RnnDescriptor& FindRnn(cudnnRNNDescriptor_t desc);
const RnnDataDescriptor& FindRnnData(cudnnRNNDataDescriptor_t desc);
const DropoutDescriptor& FindDropout(cudnnDropoutDescriptor_t desc);

// The network alone (batch 0), and with the batch of `data` (which must fit the network:
// BAD_PARAM otherwise).
kernels::RnnProblem ProblemOf(const RnnDescriptor& rnn);
kernels::RnnProblem ProblemOf(const RnnDescriptor& rnn, const RnnDataDescriptor& data);
// The size of the computation's type of the network's data.
size_t ComputeBytes(const RnnDescriptor& rnn);
// The weight space's size in bytes.
size_t WeightSpaceBytes(const RnnDescriptor& rnn);
// The sequences' table of `data` (kernels::RnnSequences).
std::vector<int64_t> SequenceTable(const RnnDataDescriptor& data);

}  // namespace tally::libraries::cudnn
