// What the RNN descriptors make of a network for Tally's kernels (rnn.h).
#include "libraries/cudnn/rnn.h"

#include <string>

namespace tally::libraries::cudnn {
namespace {

kernels::RnnCell CellOf(cudnnRNNMode_t mode) {
  switch (mode) {
    case CUDNN_RNN_RELU:
      return kernels::RnnCell::kRelu;
    case CUDNN_RNN_TANH:
      return kernels::RnnCell::kTanh;
    case CUDNN_LSTM:
      return kernels::RnnCell::kLstm;
    case CUDNN_GRU:
      return kernels::RnnCell::kGru;
  }
  Refuse(CUDNN_STATUS_BAD_PARAM, "unknown RNN cell mode");
}

}  // namespace

const RnnDescriptor& FindRnn(cudnnRNNDescriptor_t desc) {
  return Live<RnnDescriptor>::FindSet(desc);
}
const RnnDataDescriptor& FindRnnData(cudnnRNNDataDescriptor_t desc) {
  return Live<RnnDataDescriptor>::FindSet(desc);
}
const DropoutDescriptor& FindDropout(cudnnDropoutDescriptor_t desc) {
  return Live<DropoutDescriptor>::FindSet(desc);
}

kernels::RnnProblem ProblemOf(const RnnDescriptor& rnn) {
  kernels::RnnProblem problem;
  problem.type = ElementTypeOf(rnn.type);
  problem.cell = CellOf(rnn.cell);
  problem.input_size = rnn.input_size;
  problem.hidden = rnn.hidden;
  problem.projection = rnn.projection;
  problem.layers = rnn.layers;
  problem.directions = rnn.direction == CUDNN_BIDIRECTIONAL ? 2 : 1;
  problem.input_bias = rnn.bias == CUDNN_RNN_DOUBLE_BIAS || rnn.bias == CUDNN_RNN_SINGLE_INP_BIAS;
  problem.recurrent_bias =
      rnn.bias == CUDNN_RNN_DOUBLE_BIAS || rnn.bias == CUDNN_RNN_SINGLE_REC_BIAS;
  return problem;
}

kernels::RnnProblem ProblemOf(const RnnDescriptor& rnn, const RnnDataDescriptor& data) {
  Require(data.type == rnn.type, CUDNN_STATUS_BAD_PARAM,
          "the RNN data's type is not the network's");
  Require(data.width == rnn.input_size, CUDNN_STATUS_BAD_PARAM,
          "the input's vector size is not the network's input size");
  kernels::RnnProblem problem = ProblemOf(rnn);
  problem.steps = data.max_steps;
  problem.batch = data.batch;
  return problem;
}

size_t ComputeBytes(const RnnDescriptor& rnn) { return rnn.type == CUDNN_DATA_DOUBLE ? 8 : 4; }

size_t WeightSpaceBytes(const RnnDescriptor& rnn) {
  return static_cast<size_t>(ProblemOf(rnn).WeightElements()) * ElementBytes(rnn.type);
}

std::vector<int64_t> SequenceTable(const RnnDataDescriptor& data) {
  const int64_t steps = data.max_steps, batch = data.batch;
  std::vector<int64_t> table(static_cast<size_t>(steps * batch + batch), -1);
  int64_t packed_rows = 0;  // the packed layout: the rows of the steps before t
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < batch; ++b) {
      int64_t& row = table[t * batch + b];
      switch (data.layout) {
        case CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED:
          row = t * batch + b;
          break;
        case CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED:
          row = b * steps + t;
          break;
        case CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED:
          // Sequences sorted longest first: the ones still running are the first ones.
          if (t < data.lengths[b]) row = packed_rows++;
          break;
      }
    }
  }
  for (int64_t b = 0; b < batch; ++b) table[steps * batch + b] = data.lengths[b];
  return table;
}

}  // namespace tally::libraries::cudnn
