// cuDNN's RNN computations: cudnnRNNForward, cudnnRNNBackwardData_v8,
// cudnnRNNBackwardWeights_v8, on Tally's kernels (rnn_kernels.h). The sequence lengths come from
// the data descriptors (devSeqLengths, their device copy, may be null: frameworks pass none). A
// training pass with dropout between layers draws its masks into the reserve space, where the
// backward calls find them.
#include <initializer_list>
#include <string>
#include <vector>

#include "libraries/cudnn/rnn.h"

namespace tally::libraries::cudnn {
namespace {

// The network with the batch of x, y describing the same sequences with the outputs' width.
kernels::RnnProblem CheckSequences(const RnnDescriptor& rnn, const RnnDataDescriptor& x,
                                   const RnnDataDescriptor& y) {
  const kernels::RnnProblem problem = ProblemOf(rnn, x);
  Require(y.type == x.type && y.layout == x.layout && y.max_steps == x.max_steps &&
              y.batch == x.batch && y.lengths == x.lengths,
          CUDNN_STATUS_BAD_PARAM, "the output sequences are not the input's");
  Require(y.width == problem.directions * problem.projection, CUDNN_STATUS_BAD_PARAM,
          "the output's vector size is not the directions times the projection size (the hidden "
          "size without a projection)");
  return problem;
}

// A state tensor where one of `tensors` is given: pseudo-layers x batch x `width` (h: the
// projection size; c: the hidden size), packed, any further dimensions 1.
void CheckState(const RnnDescriptor& rnn, const kernels::RnnProblem& problem, int64_t width,
                cudnnTensorDescriptor_t desc, std::initializer_list<const void*> tensors,
                const char* what) {
  bool given = false;
  for (const void* tensor : tensors) given = given || tensor != nullptr;
  if (!given) return;
  const TensorDescriptor& state = FindTensor(desc);
  const kernels::TensorShape& s = state.shape;
  const int64_t B = problem.batch;
  bool fits = state.type == rnn.type && s.rank >= 3 && s.dims[0] == problem.PseudoLayers() &&
              s.dims[1] == B && s.dims[2] == width && s.strides[0] == B * width &&
              s.strides[1] == width && s.strides[2] == 1;
  for (int d = 3; d < s.rank; ++d) fits = fits && s.dims[d] == 1;
  if (!fits) {
    Refuse(CUDNN_STATUS_BAD_PARAM,
           std::string(what) +
               " is not a packed (layers x directions) x batch x width tensor of the network's "
               "type");
  }
}

// The h and c tensors where any of theirs is given.
void CheckStates(const RnnDescriptor& rnn, const kernels::RnnProblem& problem,
                 cudnnTensorDescriptor_t h_desc, std::initializer_list<const void*> h_tensors,
                 cudnnTensorDescriptor_t c_desc, std::initializer_list<const void*> c_tensors) {
  CheckState(rnn, problem, problem.projection, h_desc, h_tensors, "the hidden state descriptor");
  if (problem.cell == kernels::RnnCell::kLstm) {
    CheckState(rnn, problem, problem.hidden, c_desc, c_tensors, "the cell state descriptor");
  }
}

// The spaces a call is given, against what cudnnGetRNNWeightSpaceSize and
// cudnnGetRNNTempSpaceSizes say.
struct GivenSpaces {
  size_t weight_bytes;
  const void* weights;
  size_t workspace_bytes;
  void* workspace;
  size_t reserve_bytes;
  void* reserve;
};

kernels::RnnSpacePointers CheckSpaces(const RnnDescriptor& rnn, const kernels::RnnProblem& problem,
                                      bool training, const GivenSpaces& given) {
  Require(given.weight_bytes >= WeightSpaceBytes(rnn), CUDNN_STATUS_BAD_PARAM,
          "the weight space is smaller than cudnnGetRNNWeightSpaceSize says");
  RequireNotNull(given.weights, "the weight space");
  const kernels::RnnSpaces spaces = kernels::SpacesOf(problem, ComputeBytes(rnn));
  const size_t workspace = spaces.workspace + (training ? 0 : spaces.forward_kept);
  Require(given.workspace_bytes >= workspace, CUDNN_STATUS_BAD_PARAM,
          "the workspace is smaller than cudnnGetRNNTempSpaceSizes says");
  RequireNotNull(given.workspace, "the workspace");
  if (!training) {
    return {given.weights, given.workspace, static_cast<char*>(given.workspace) + spaces.workspace};
  }
  Require(given.reserve_bytes >= spaces.Reserve(), CUDNN_STATUS_BAD_PARAM,
          "the reserve space is smaller than cudnnGetRNNTempSpaceSizes says for training");
  RequireNotNull(given.reserve, "the reserve space");
  auto* reserve = static_cast<uint8_t*>(given.reserve);
  uint8_t* masks =
      problem.dropout > 0 ? reserve + spaces.forward_kept + spaces.gradients_kept : nullptr;
  return {given.weights, given.workspace, reserve, masks};
}

// The dropout between the layers of a training pass: its descriptor where it drops anything
// (several layers, a probability above 0), else null.
const DropoutDescriptor* DropoutBetweenLayers(const RnnDescriptor& rnn) {
  if (rnn.layers < 2 || rnn.dropout == nullptr) return nullptr;
  const DropoutDescriptor& dropout = Live<DropoutDescriptor>::Find(rnn.dropout);
  return dropout.set && dropout.probability > 0 ? &dropout : nullptr;
}

// The network with the dropout between its layers: for a training pass, and for the backward
// calls after one (which find its masks).
kernels::RnnProblem WithDropout(const RnnDescriptor& rnn, kernels::RnnProblem problem) {
  if (const DropoutDescriptor* dropout = DropoutBetweenLayers(rnn)) {
    problem.dropout = dropout->probability;
  }
  return problem;
}

kernels::RnnSequences SequencesOf(const std::vector<int64_t>& table, const void* in, void* out) {
  kernels::RnnSequences sequences;
  sequences.table = table.data();
  sequences.x = in;
  sequences.y = out;
  return sequences;
}

void Forward(cudnnHandle_t handle, cudnnRNNDescriptor_t desc, cudnnForwardMode_t mode,
             cudnnRNNDataDescriptor_t x_desc, const void* x, cudnnRNNDataDescriptor_t y_desc,
             void* y, cudnnTensorDescriptor_t h_desc, const void* hx, void* hy,
             cudnnTensorDescriptor_t c_desc, const void* cx, void* cy, const GivenSpaces& given) {
  const Handle& live = FindHandle(handle);
  const RnnDescriptor& rnn = FindRnn(desc);
  Require(mode == CUDNN_FWD_MODE_INFERENCE || mode == CUDNN_FWD_MODE_TRAINING,
          CUDNN_STATUS_BAD_PARAM, "unknown forward mode");
  const bool training = mode == CUDNN_FWD_MODE_TRAINING;
  const RnnDataDescriptor& x_data = FindRnnData(x_desc);
  const RnnDataDescriptor& y_data = FindRnnData(y_desc);
  kernels::RnnProblem problem = CheckSequences(rnn, x_data, y_data);
  RequireNotNull(x, "x");
  RequireNotNull(y, "y");
  const bool lstm = problem.cell == kernels::RnnCell::kLstm;
  CheckStates(rnn, problem, h_desc, {hx, hy}, c_desc, {cx, cy});
  kernels::RnnForwardCall call;
  if (training) {  // inference drops nothing
    problem = WithDropout(rnn, problem);
    if (problem.dropout > 0) call.dropout_states = DropoutBetweenLayers(rnn)->states;
  }
  const std::vector<int64_t> table = SequenceTable(x_data);
  call.data = SequencesOf(table, x, y);
  call.data.fill_padding = y_data.has_fill;
  if (y_data.has_fill) call.data.padding = ReadHostElement(y_data.fill.data(), problem.type);
  call.hx = hx;
  call.hy = hy;
  call.cx = lstm ? cx : nullptr;
  call.cy = lstm ? cy : nullptr;
  call.spaces = CheckSpaces(rnn, problem, training, given);
  CheckLaunch(kernels::LaunchRnnForward(problem, call, live.stream));
}

void BackwardData(cudnnHandle_t handle, cudnnRNNDescriptor_t desc, cudnnRNNDataDescriptor_t y_desc,
                  const void* dy, cudnnRNNDataDescriptor_t x_desc, void* dx,
                  cudnnTensorDescriptor_t h_desc, const void* hx, const void* dhy, void* dhx,
                  cudnnTensorDescriptor_t c_desc, const void* cx, const void* dcy, void* dcx,
                  const GivenSpaces& given) {
  const Handle& live = FindHandle(handle);
  const RnnDescriptor& rnn = FindRnn(desc);
  const RnnDataDescriptor& x_data = FindRnnData(x_desc);
  const kernels::RnnProblem problem =
      WithDropout(rnn, CheckSequences(rnn, x_data, FindRnnData(y_desc)));
  RequireNotNull(dy, "dy");
  RequireNotNull(dx, "dx");
  const bool lstm = problem.cell == kernels::RnnCell::kLstm;
  CheckStates(rnn, problem, h_desc, {hx, dhy, dhx}, c_desc, {cx, dcy, dcx});
  const std::vector<int64_t> table = SequenceTable(x_data);
  kernels::RnnBackwardDataCall call;
  call.data = SequencesOf(table, dy, dx);
  call.hx = hx;
  call.dhy = dhy;
  call.dhx = dhx;
  call.cx = lstm ? cx : nullptr;
  call.dcy = lstm ? dcy : nullptr;
  call.dcx = lstm ? dcx : nullptr;
  call.spaces = CheckSpaces(rnn, problem, true, given);
  CheckLaunch(kernels::LaunchRnnBackwardData(problem, call, live.stream));
}

void BackwardWeights(cudnnHandle_t handle, cudnnRNNDescriptor_t desc, cudnnWgradMode_t mode,
                     cudnnRNNDataDescriptor_t x_desc, const void* x, cudnnTensorDescriptor_t h_desc,
                     const void* hx, cudnnRNNDataDescriptor_t y_desc, const GivenSpaces& given) {
  const Handle& live = FindHandle(handle);
  const RnnDescriptor& rnn = FindRnn(desc);
  Require(mode == CUDNN_WGRAD_MODE_ADD || mode == CUDNN_WGRAD_MODE_SET, CUDNN_STATUS_BAD_PARAM,
          "unknown weight gradient mode");
  const RnnDataDescriptor& x_data = FindRnnData(x_desc);
  const kernels::RnnProblem problem =
      WithDropout(rnn, CheckSequences(rnn, x_data, FindRnnData(y_desc)));
  RequireNotNull(x, "x");
  CheckState(rnn, problem, problem.projection, h_desc, {hx}, "the hidden state descriptor");
  const std::vector<int64_t> table = SequenceTable(x_data);
  kernels::RnnBackwardWeightsCall call;
  call.data = SequencesOf(table, x, nullptr);
  call.hx = hx;
  // The gradients' space is laid out as the weight space (given.weights).
  call.d_weights = const_cast<void*>(given.weights);
  call.add = mode == CUDNN_WGRAD_MODE_ADD;
  call.spaces = CheckSpaces(rnn, problem, true, given);
  CheckLaunch(kernels::LaunchRnnBackwardWeights(problem, call, live.stream));
}

}  // namespace
}  // namespace tally::libraries::cudnn

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below

extern "C" {

cudnnStatus_t cudnnRNNForward(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                              cudnnForwardMode_t mode, const int32_t /*dev_lengths*/[],
                              cudnnRNNDataDescriptor_t x_desc, const void* x,
                              cudnnRNNDataDescriptor_t y_desc, void* y,
                              cudnnTensorDescriptor_t h_desc, const void* hx, void* hy,
                              cudnnTensorDescriptor_t c_desc, const void* cx, void* cy,
                              size_t weight_bytes, const void* weights, size_t workspace_bytes,
                              void* workspace, size_t reserve_bytes, void* reserve) {
  return CudnnCall(__func__, [&] {
    Forward(handle, desc, mode, x_desc, x, y_desc, y, h_desc, hx, hy, c_desc, cx, cy,
            {weight_bytes, weights, workspace_bytes, workspace, reserve_bytes, reserve});
  });
}

cudnnStatus_t cudnnRNNBackwardData_v8(
    cudnnHandle_t handle, cudnnRNNDescriptor_t desc, const int32_t /*dev_lengths*/[],
    cudnnRNNDataDescriptor_t y_desc, const void* /*y*/, const void* dy,
    cudnnRNNDataDescriptor_t x_desc, void* dx, cudnnTensorDescriptor_t h_desc, const void* hx,
    const void* dhy, void* dhx, cudnnTensorDescriptor_t c_desc, const void* cx, const void* dcy,
    void* dcx, size_t weight_bytes, const void* weights, size_t workspace_bytes, void* workspace,
    size_t reserve_bytes, void* reserve) {
  return CudnnCall(__func__, [&] {
    BackwardData(handle, desc, y_desc, dy, x_desc, dx, h_desc, hx, dhy, dhx, c_desc, cx, dcy, dcx,
                 {weight_bytes, weights, workspace_bytes, workspace, reserve_bytes, reserve});
  });
}

cudnnStatus_t cudnnRNNBackwardWeights_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                         cudnnWgradMode_t mode, const int32_t /*dev_lengths*/[],
                                         cudnnRNNDataDescriptor_t x_desc, const void* x,
                                         cudnnTensorDescriptor_t h_desc, const void* hx,
                                         cudnnRNNDataDescriptor_t y_desc, const void* /*y*/,
                                         size_t weight_bytes, void* d_weights,
                                         size_t workspace_bytes, void* workspace,
                                         size_t reserve_bytes, void* reserve) {
  return CudnnCall(__func__, [&] {
    BackwardWeights(handle, desc, mode, x_desc, x, h_desc, hx, y_desc,
                    {weight_bytes, d_weights, workspace_bytes, workspace, reserve_bytes, reserve});
  });
}

}  // extern "C"
