// cuDNN's RNN and RNN data descriptors, and the sizes and weight addresses they give: create,
// set, get, destroy, cudnnGetRNNWeightSpaceSize, cudnnGetRNNTempSpaceSizes,
// cudnnGetRNNWeightParams.
#include <algorithm>
#include <cstring>

#include "libraries/cudnn/rnn.h"

namespace tally::libraries::cudnn {
namespace {

void CheckRnnEnums(const RnnDescriptor& rnn) {
  Require(rnn.algo >= CUDNN_RNN_ALGO_STANDARD && rnn.algo < CUDNN_RNN_ALGO_COUNT,
          CUDNN_STATUS_BAD_PARAM, "unknown RNN algorithm");
  ProblemOf(rnn);  // a known cell mode and data type
  Require(rnn.bias >= CUDNN_RNN_NO_BIAS && rnn.bias <= CUDNN_RNN_SINGLE_REC_BIAS,
          CUDNN_STATUS_BAD_PARAM, "unknown RNN bias mode");
  Require(rnn.direction == CUDNN_UNIDIRECTIONAL || rnn.direction == CUDNN_BIDIRECTIONAL,
          CUDNN_STATUS_BAD_PARAM, "unknown RNN direction mode");
  Require(rnn.input == CUDNN_LINEAR_INPUT || rnn.input == CUDNN_SKIP_INPUT, CUDNN_STATUS_BAD_PARAM,
          "unknown RNN input mode");
  Require(rnn.math >= CUDNN_DEFAULT_MATH && rnn.math <= CUDNN_FMA_MATH, CUDNN_STATUS_BAD_PARAM,
          "unknown math type");
  Require((rnn.flags & ~CUDNN_RNN_PADDED_IO_ENABLED) == 0, CUDNN_STATUS_BAD_PARAM,
          "unknown auxiliary flags");
}

// The math precision cuDNN allows for the data type: double for double, float for float and
// bfloat16, half or float for half.
void CheckMathPrecision(const RnnDescriptor& rnn) {
  bool allowed = rnn.math_precision == rnn.type;
  if (rnn.type == CUDNN_DATA_HALF || rnn.type == CUDNN_DATA_BFLOAT16) {
    allowed = rnn.math_precision == CUDNN_DATA_FLOAT ||
              (rnn.type == CUDNN_DATA_HALF && rnn.math_precision == CUDNN_DATA_HALF);
  }
  Require(allowed, CUDNN_STATUS_BAD_PARAM, "the math precision does not suit the data type");
}

void SetRnn(cudnnRNNDescriptor_t desc, RnnDescriptor settings) {
  RnnDescriptor& rnn = Live<RnnDescriptor>::Find(desc);
  CheckRnnEnums(settings);
  CheckMathPrecision(settings);
  Require(settings.input_size > 0 && settings.hidden > 0 && settings.layers > 0,
          CUDNN_STATUS_BAD_PARAM, "the input size, hidden size and layer count must be positive");
  Require(settings.projection > 0 && settings.projection <= settings.hidden, CUDNN_STATUS_BAD_PARAM,
          "the projection size is not in [1, hidden size]");
  Require(settings.projection == settings.hidden || settings.cell == CUDNN_LSTM,
          CUDNN_STATUS_BAD_PARAM, "only LSTM cells have a recurrent projection");
  if (settings.input == CUDNN_SKIP_INPUT) RefuseUnsupported("CUDNN_SKIP_INPUT");
  if (settings.dropout != nullptr) Live<DropoutDescriptor>::Find(settings.dropout);
  settings.set = true;
  settings.clip = rnn.clip;
  rnn = settings;
}

void SetClip(cudnnRNNDescriptor_t desc, cudnnRNNClipMode_t mode, double low, double high) {
  RnnDescriptor& rnn = Live<RnnDescriptor>::FindSet(desc);
  Require(mode == CUDNN_RNN_CLIP_NONE || mode == CUDNN_RNN_CLIP_MINMAX, CUDNN_STATUS_BAD_PARAM,
          "unknown clip mode");
  Require(mode == CUDNN_RNN_CLIP_NONE || low <= high, CUDNN_STATUS_BAD_PARAM,
          "the clip range is empty");
  if (mode == CUDNN_RNN_CLIP_MINMAX) RefuseUnsupported("LSTM cell clipping");
  rnn.clip = mode;
}

void SetData(cudnnRNNDataDescriptor_t desc, cudnnDataType_t type, cudnnRNNDataLayout_t layout,
             int max_steps, int batch, int width, const int* lengths, const void* fill) {
  RnnDataDescriptor& data = Live<RnnDataDescriptor>::Find(desc);
  ElementTypeOf(type);
  Require(layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED ||
              layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED ||
              layout == CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
          CUDNN_STATUS_BAD_PARAM, "unknown RNN data layout");
  Require(max_steps > 0 && batch > 0 && width > 0, CUDNN_STATUS_BAD_PARAM,
          "the sequence length, batch size and vector size must be positive");
  RequireNotNull(lengths, "the sequence length array");
  RnnDataDescriptor result;
  result.lengths.assign(lengths, lengths + batch);
  for (int b = 0; b < batch; ++b) {
    Require(lengths[b] > 0 && lengths[b] <= max_steps, CUDNN_STATUS_BAD_PARAM,
            "a sequence length is not in [1, the maximum sequence length]");
    Require(
        layout != CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED || b == 0 || lengths[b] <= lengths[b - 1],
        CUDNN_STATUS_BAD_PARAM, "packed sequences are not sorted longest first");
  }
  result.set = true;
  result.type = type;
  result.layout = layout;
  result.max_steps = max_steps;
  result.batch = batch;
  result.width = width;
  result.has_fill = fill != nullptr;
  if (result.has_fill) std::memcpy(result.fill.data(), fill, ElementBytes(type));
  data = std::move(result);
}

void GetData(cudnnRNNDataDescriptor_t desc, cudnnDataType_t* type, cudnnRNNDataLayout_t* layout,
             int* max_steps, int* batch, int* width, int requested, int* lengths, void* fill) {
  const RnnDataDescriptor& data = FindRnnData(desc);
  Require(requested >= 0, CUDNN_STATUS_BAD_PARAM, "the requested array length is negative");
  PutIfWanted(type, data.type);
  PutIfWanted(layout, data.layout);
  PutIfWanted(max_steps, data.max_steps);
  PutIfWanted(batch, data.batch);
  PutIfWanted(width, data.width);
  if (requested > 0) {
    RequireNotNull(lengths, "the sequence length array");
    std::copy_n(data.lengths.begin(), std::min<size_t>(requested, data.lengths.size()), lengths);
  }
  if (fill != nullptr) std::memcpy(fill, data.fill.data(), ElementBytes(data.type));
}

// A tensor descriptor set to {1, rows, columns}, packed, or to no dimensions where the
// parameter does not exist (rows 0).
void DescribeParameter(cudnnTensorDescriptor_t desc, cudnnDataType_t type, int64_t rows,
                       int64_t columns) {
  if (desc == nullptr) return;
  TensorDescriptor& tensor = Live<TensorDescriptor>::Find(desc);
  kernels::TensorShape shape;
  if (rows > 0) {
    shape.rank = 3;
    shape.dims[0] = 1, shape.dims[1] = rows, shape.dims[2] = columns;
    shape.strides[0] = rows * columns, shape.strides[1] = columns, shape.strides[2] = 1;
  }
  tensor = {true, type, shape};
}

// Where linear layer `id` of pseudo-layer `p` has its matrix and bias in a weight space.
struct ParameterPlace {
  int64_t matrix_offset = -1, rows = 0, columns = 0;  // offset -1: no such matrix
  int64_t bias_offset = -1;                           // offset -1: no such bias
};

ParameterPlace PlaceOf(const kernels::RnnProblem& problem, int32_t p, int32_t id) {
  Require(p >= 0 && p < problem.PseudoLayers(), CUDNN_STATUS_BAD_PARAM,
          "the pseudo-layer is out of range");
  const int64_t gates = problem.Gates();
  const bool projection = problem.cell == kernels::RnnCell::kLstm && id == 8;
  Require((id >= 0 && id < 2 * gates) || projection, CUDNN_STATUS_BAD_PARAM,
          "the linear layer ID is out of range for the cell");
  ParameterPlace place;
  const int64_t layer = p / problem.directions, H = problem.hidden;
  const int64_t base = problem.PseudoLayerOffset(p);
  if (projection) {  // projection x hidden, no bias; none where the projection size is H
    if (!problem.Projected()) return place;
    place.rows = problem.projection;
    place.columns = H;
    place.matrix_offset = base + problem.ProjectionOffset(layer);
    return place;
  }
  const bool input = id < gates;
  const int64_t gate = input ? id : id - gates;
  place.rows = H;
  place.columns = input ? problem.InputWidth(layer) : problem.projection;
  place.matrix_offset = base + (input ? 0 : problem.RecurrentMatricesOffset(layer)) +
                        gate * place.rows * place.columns;
  if (input ? problem.input_bias : problem.recurrent_bias) {
    place.bias_offset =
        base + gate * H +
        (input ? problem.InputBiasesOffset(layer) : problem.RecurrentBiasesOffset(layer));
  }
  return place;
}

void WeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t desc, int32_t p, size_t space_bytes,
                  const void* space, int32_t id, cudnnTensorDescriptor_t matrix_desc, void** matrix,
                  cudnnTensorDescriptor_t bias_desc, void** bias) {
  FindHandle(handle);
  const RnnDescriptor& rnn = FindRnn(desc);
  Require(space_bytes >= WeightSpaceBytes(rnn), CUDNN_STATUS_BAD_PARAM,
          "the weight space is smaller than cudnnGetRNNWeightSpaceSize says");
  RequireNotNull(space, "the weight space");
  const ParameterPlace place = PlaceOf(ProblemOf(rnn), p, id);
  const size_t element = ElementBytes(rnn.type);
  auto at = [&](int64_t offset) -> void* {
    if (offset < 0) return nullptr;
    return static_cast<char*>(const_cast<void*>(space)) + offset * element;
  };
  const bool has_bias = place.bias_offset >= 0;
  DescribeParameter(matrix_desc, rnn.type, place.matrix_offset >= 0 ? place.rows : 0,
                    place.columns);
  DescribeParameter(bias_desc, rnn.type, has_bias ? place.rows : 0, 1);
  PutIfWanted(matrix, at(place.matrix_offset));
  PutIfWanted(bias, at(place.bias_offset));
}

void TempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t desc, cudnnForwardMode_t mode,
                    cudnnRNNDataDescriptor_t x_desc, size_t* workspace, size_t* reserve) {
  FindHandle(handle);
  const RnnDescriptor& rnn = FindRnn(desc);
  const kernels::RnnProblem problem = ProblemOf(rnn, FindRnnData(x_desc));
  Require(mode == CUDNN_FWD_MODE_INFERENCE || mode == CUDNN_FWD_MODE_TRAINING,
          CUDNN_STATUS_BAD_PARAM, "unknown forward mode");
  const kernels::RnnSpaces spaces = kernels::SpacesOf(problem, ComputeBytes(rnn));
  const bool training = mode == CUDNN_FWD_MODE_TRAINING;
  PutIfWanted(workspace, spaces.workspace + (training ? 0 : spaces.forward_kept));
  PutIfWanted(reserve, training ? spaces.Reserve() : size_t{0});
}

}  // namespace
}  // namespace tally::libraries::cudnn

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below

extern "C" {

cudnnStatus_t cudnnSetRNNDescriptor_v8(cudnnRNNDescriptor_t desc, cudnnRNNAlgo_t algo,
                                       cudnnRNNMode_t cell, cudnnRNNBiasMode_t bias,
                                       cudnnDirectionMode_t direction, cudnnRNNInputMode_t input,
                                       cudnnDataType_t type, cudnnDataType_t math_precision,
                                       cudnnMathType_t math, int32_t input_size, int32_t hidden,
                                       int32_t projection, int32_t layers,
                                       cudnnDropoutDescriptor_t dropout, uint32_t flags) {
  return CudnnCall(__func__, [&] {
    SetRnn(desc, {false, algo, cell, bias, direction, input, type, math_precision, math, input_size,
                  hidden, projection, layers, dropout, flags});
  });
}

cudnnStatus_t cudnnGetRNNDescriptor_v8(cudnnRNNDescriptor_t desc, cudnnRNNAlgo_t* algo,
                                       cudnnRNNMode_t* cell, cudnnRNNBiasMode_t* bias,
                                       cudnnDirectionMode_t* direction, cudnnRNNInputMode_t* input,
                                       cudnnDataType_t* type, cudnnDataType_t* math_precision,
                                       cudnnMathType_t* math, int32_t* input_size, int32_t* hidden,
                                       int32_t* projection, int32_t* layers,
                                       cudnnDropoutDescriptor_t* dropout, uint32_t* flags) {
  return CudnnCall(__func__, [&] {
    const RnnDescriptor& rnn = FindRnn(desc);
    PutIfWanted(algo, rnn.algo);
    PutIfWanted(cell, rnn.cell);
    PutIfWanted(bias, rnn.bias);
    PutIfWanted(direction, rnn.direction);
    PutIfWanted(input, rnn.input);
    PutIfWanted(type, rnn.type);
    PutIfWanted(math_precision, rnn.math_precision);
    PutIfWanted(math, rnn.math);
    PutIfWanted(input_size, rnn.input_size);
    PutIfWanted(hidden, rnn.hidden);
    PutIfWanted(projection, rnn.projection);
    PutIfWanted(layers, rnn.layers);
    PutIfWanted(dropout, rnn.dropout);
    PutIfWanted(flags, rnn.flags);
  });
}

cudnnStatus_t cudnnRNNSetClip_v9(cudnnRNNDescriptor_t desc, cudnnRNNClipMode_t mode, double low,
                                 double high) {
  return CudnnCall(__func__, [&] { SetClip(desc, mode, low, high); });
}

cudnnStatus_t cudnnRNNSetClip_v8(cudnnRNNDescriptor_t desc, cudnnRNNClipMode_t mode,
                                 cudnnNanPropagation_t /*nan*/, double low, double high) {
  return CudnnCall(__func__, [&] { SetClip(desc, mode, low, high); });
}

cudnnStatus_t cudnnRNNGetClip_v9(cudnnRNNDescriptor_t desc, cudnnRNNClipMode_t* mode, double* low,
                                 double* high) {
  return CudnnCall(__func__, [&] {
    PutIfWanted(mode, FindRnn(desc).clip);
    PutIfWanted(low, 0.0);
    PutIfWanted(high, 0.0);
  });
}

cudnnStatus_t cudnnRNNGetClip_v8(cudnnRNNDescriptor_t desc, cudnnRNNClipMode_t* mode,
                                 cudnnNanPropagation_t* nan, double* low, double* high) {
  return CudnnCall(__func__, [&] {
    PutIfWanted(mode, FindRnn(desc).clip);
    PutIfWanted(nan, CUDNN_NOT_PROPAGATE_NAN);
    PutIfWanted(low, 0.0);
    PutIfWanted(high, 0.0);
  });
}

// The persistent dynamic algorithm's plan for a batch size: Tally's kernels need none.
cudnnStatus_t cudnnBuildRNNDynamic(cudnnHandle_t handle, cudnnRNNDescriptor_t desc, int batch) {
  return CudnnCall(__func__, [&] {
    FindHandle(handle);
    FindRnn(desc);
    Require(batch > 0, CUDNN_STATUS_BAD_PARAM, "the batch size is not positive");
  });
}

cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                         size_t* size) {
  return CudnnCall(__func__, [&] {
    FindHandle(handle);
    const RnnDescriptor& rnn = FindRnn(desc);
    RequireNotNull(size, "the size pointer");
    *size = WeightSpaceBytes(rnn);
  });
}

cudnnStatus_t cudnnGetRNNTempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                        cudnnForwardMode_t mode, cudnnRNNDataDescriptor_t x_desc,
                                        size_t* workspace, size_t* reserve) {
  return CudnnCall(__func__,
                   [&] { TempSpaceSizes(handle, desc, mode, x_desc, workspace, reserve); });
}

cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                      int32_t pseudo_layer, size_t space_bytes, const void* space,
                                      int32_t id, cudnnTensorDescriptor_t matrix_desc,
                                      void** matrix, cudnnTensorDescriptor_t bias_desc,
                                      void** bias) {
  return CudnnCall(__func__, [&] {
    WeightParams(handle, desc, pseudo_layer, space_bytes, space, id, matrix_desc, matrix, bias_desc,
                 bias);
  });
}

cudnnStatus_t cudnnSetRNNDataDescriptor(cudnnRNNDataDescriptor_t desc, cudnnDataType_t type,
                                        cudnnRNNDataLayout_t layout, int max_steps, int batch,
                                        int width, const int lengths[], void* fill) {
  return CudnnCall(__func__,
                   [&] { SetData(desc, type, layout, max_steps, batch, width, lengths, fill); });
}

cudnnStatus_t cudnnGetRNNDataDescriptor(cudnnRNNDataDescriptor_t desc, cudnnDataType_t* type,
                                        cudnnRNNDataLayout_t* layout, int* max_steps, int* batch,
                                        int* width, int requested, int lengths[], void* fill) {
  return CudnnCall(__func__, [&] {
    GetData(desc, type, layout, max_steps, batch, width, requested, lengths, fill);
  });
}

}  // extern "C"
