// cuDNN's RNN functions through Tally: an unmodified program linked with -lcudnn runs recurrent
// networks through cuDNN's v8 RNN API and compares every result with a CPU reference computed in
// double. It checks the RNN and RNN data descriptors set and read back; cudnnDropoutForward and
// Backward; a dropout descriptor (dropout 0) with the states buffer cuDNN asks for, which the RNNs
// without dropout share; the weight space,
// whose every matrix and bias the program finds and fills only through cudnnGetRNNWeightParams
// (shapes and strides read from the descriptors it fills; each inside the space, none
// overlapping); cudnnRNNForward in inference and training mode for ReLU, tanh, LSTM and GRU
// cells, one and two layers, one and both directions, double, single-input and no bias, f32 and
// f64, sequences of different lengths in the padded sequence-major and batch-major layouts (the
// output's padding holding paddingFill, the final states those of each sequence's own last step)
// and in the packed layout, with initial and final states given or null, LSTM's recurrent
// projection, and dropout between layers in training (the reference drops what Tally's random
// stream, dropout_bits.h, says the device dropped); then
// cudnnRNNBackwardData_v8 and cudnnRNNBackwardWeights_v8 (adding onto gradients already there, or
// setting them) against central differences of the reference's loss
// sum(dy y) + sum(dhy hy) + sum(dcy cy) (with the training pass's dropout masks); the dropout
// stream across passes, restored and set again. Then the documented statuses for bad input. Prints
// "CUDNN RNN OK" when all passed.
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "../../libraries/kernels/dropout_bits.h"
#include "dnn_check.h"

namespace {

// ---- Tolerances and values ----

// f32 results carry f32 rounding; f64 ones differ from the reference by rounding only.
template <typename T>
constexpr double kForwardTolerance = std::is_same_v<T, double> ? 1e-10 : Element<T>::kTolerance;
// Gradients against central differences of step kStep, whose own error (truncation and rounding)
// stays far below 1e-6 here.
template <typename T>
constexpr double kGradientTolerance = std::is_same_v<T, double> ? 1e-6 : 1e-3;
constexpr double kStep = 1e-6;

// What cuDNN must write at the output's padded positions, and what the program leaves at the
// inputs' (x, dy), which cuDNN must not use: both exact in every type.
constexpr double kPaddingFill = -7.25;
constexpr double kInputPadding = 5.5;

// Values in [-0.6, 0.6] without a pattern, so that no ReLU input sits on (or within a
// finite-difference step of) its kink; rounded to T, as the device holds them.
template <typename T>
std::vector<double> Irregular(size_t n, int seed) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(0.6 * std::sin(1.7 * i + 2.3 * seed + 0.5));
  return v;
}

template <typename T>
std::vector<T> Narrow(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <typename T>
std::vector<T> NaNs(size_t n) {
  return std::vector<T>(n, static_cast<T>(kNaN));
}

// got holds want, element by element; what names the values (after g_what).
void ExpectValues(const std::vector<double>& got, const std::vector<double>& want, double tolerance,
                  const std::string& what) {
  if (got.size() != want.size()) {
    Fail(what + ": " + std::to_string(got.size()) + " values checked against " +
         std::to_string(want.size()));
  }
  const std::string name = g_what + ": " + what;
  for (size_t i = 0; i < want.size(); ++i) ExpectNear(got[i], want[i], tolerance, name.c_str(), i);
}

// A condition whose failure names the check under way.
#define EXPECT_IN_CASE(cond)                                                                  \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      Fail(std::string("line ") + std::to_string(__LINE__) + ": expectation failed: " #cond); \
    }                                                                                         \
  } while (0)

// A status of the BAD_PARAM category, for the call `what` names.
void ExpectBadParam(cudnnStatus_t status, const std::string& what) {
  if (!IsBadParam(status)) {
    Fail(what + " returned " + cudnnGetErrorString(status) + " (" + std::to_string(status) +
         "), not CUDNN_STATUS_BAD_PARAM");
  }
}

// ---- The configurations ----

constexpr cudnnDirectionMode_t kUni = CUDNN_UNIDIRECTIONAL;
constexpr cudnnDirectionMode_t kBi = CUDNN_BIDIRECTIONAL;
constexpr cudnnRNNBiasMode_t kDoubleBias = CUDNN_RNN_DOUBLE_BIAS;
constexpr cudnnRNNBiasMode_t kInputBias = CUDNN_RNN_SINGLE_INP_BIAS;
constexpr cudnnRNNBiasMode_t kNoBias = CUDNN_RNN_NO_BIAS;
constexpr cudnnRNNDataLayout_t kSeqMajor = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED;
constexpr cudnnRNNDataLayout_t kBatchMajor = CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED;
constexpr cudnnRNNDataLayout_t kPacked = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED;

// Whether the backward calls are checked, and how BackwardWeights writes its gradients.
enum class Gradients { kNone, kAdd, kSet };

// One RNN and its data: one sequence of input-wide vectors per batch element, of the lengths
// given (at most max_length; sorted longest first for the packed layout). LSTM cases may project
// h to `projection` units (0: no projection); cases of several layers may drop each layer's
// output but the last's with probability `dropout` while training.
struct RnnCase {
  const char* name;
  cudnnRNNMode_t cell;
  cudnnDirectionMode_t direction;
  cudnnRNNBiasMode_t bias;
  cudnnRNNDataLayout_t layout;
  int layers, input, hidden, max_length;
  std::vector<int> lengths;
  bool states;  // hx (and cx) given, hy (and cy) wanted; else all four null
  Gradients gradients;
  int projection = 0;
  float dropout = 0;

  int Batch() const { return static_cast<int>(lengths.size()); }
  int Directions() const { return direction == kBi ? 2 : 1; }
  // Each layer's directions, forward first: cuDNN's pseudo-layers.
  int PseudoLayers() const { return layers * Directions(); }
  bool Projected() const { return projection > 0; }
  // The width of h: the projection's, or the hidden size.
  int Width() const { return Projected() ? projection : hidden; }
  int OutputWidth() const { return Width() * Directions(); }
  bool Lstm() const { return cell == CUDNN_LSTM; }
  bool Packed() const { return layout == kPacked; }
  // The linear layers (a matrix and its bias) of each pseudo-layer, by linLayerID: the first half
  // apply to the layer's input, the second to the recurrent state, gate by gate. LSTM's
  // projection (linLayerID 8, a matrix without bias) follows where there is one.
  int LinearLayers() const { return cell == CUDNN_LSTM ? 8 : cell == CUDNN_GRU ? 6 : 2; }
  int Parameters() const { return LinearLayers() + (Projected() ? 1 : 0); }
  // The width of pseudo-layer p's input: x, or both directions' outputs of the layer below.
  int InputWidth(int p) const { return p < Directions() ? input : OutputWidth(); }
  // hx, hy: [pseudo-layer][batch][width]; cx, cy: [pseudo-layer][batch][hidden].
  size_t StateSize() const { return static_cast<size_t>(PseudoLayers()) * Batch() * Width(); }
  size_t CellStateSize() const { return static_cast<size_t>(PseudoLayers()) * Batch() * hidden; }
  // The dropout masks of a training pass: an element per output element of every layer but the
  // last, [layer][step][sequence][unit] (dense).
  size_t MaskSize() const {
    return static_cast<size_t>(layers - 1) * max_length * Batch() * OutputWidth();
  }
};

// ---- Sequence layouts ----

// The reference holds sequences densely, vector (t, b) at [t][b] over max_length steps, its
// padded positions unused.
size_t Dense(const RnnCase& c, int t, int b, int width) {
  return (static_cast<size_t>(t) * c.Batch() + b) * width;
}

// How many sequences are longer than t steps: the packed layout's batch at step t.
int BatchAt(const RnnCase& c, int t) {
  return static_cast<int>(
      std::count_if(c.lengths.begin(), c.lengths.end(), [&](int length) { return length > t; }));
}

// Where vector (t, b) of a width-wide sequence buffer lies in the case's layout, in elements. The
// packed layout holds each step's vectors one after the other, the longest sequence's first.
size_t Offset(const RnnCase& c, int t, int b, int width) {
  if (c.layout == kBatchMajor) return (static_cast<size_t>(b) * c.max_length + t) * width;
  if (!c.Packed()) return Dense(c, t, b, width);
  size_t before = 0;
  for (int step = 0; step < t; ++step) before += BatchAt(c, step);
  return (before + b) * width;
}

size_t BufferSize(const RnnCase& c, int width) {
  if (!c.Packed()) return static_cast<size_t>(c.max_length) * c.Batch() * width;
  size_t steps = 0;
  for (int length : c.lengths) steps += length;
  return steps * width;
}

// fn(t, b) for every step t of every sequence b.
template <typename Fn>
void ForEachValid(const RnnCase& c, Fn fn) {
  for (int t = 0; t < c.max_length; ++t) {
    for (int b = 0; b < c.Batch(); ++b) {
      if (t < c.lengths[b]) fn(t, b);
    }
  }
}

// The dense indices of the valid elements of a width-wide sequence.
std::vector<size_t> ValidIndices(const RnnCase& c, int width) {
  std::vector<size_t> indices;
  ForEachValid(c, [&](int t, int b) {
    for (int k = 0; k < width; ++k) indices.push_back(Dense(c, t, b, width) + k);
  });
  return indices;
}

// A dense sequence laid out for the device, its padded positions (if any) set to `padding`.
template <typename T>
std::vector<T> ToLayout(const RnnCase& c, const std::vector<double>& dense, int width,
                        double padding) {
  std::vector<T> out(BufferSize(c, width), static_cast<T>(padding));
  ForEachValid(c, [&](int t, int b) {
    for (int k = 0; k < width; ++k) {
      out[Offset(c, t, b, width) + k] = static_cast<T>(dense[Dense(c, t, b, width) + k]);
    }
  });
  return out;
}

// The valid vectors of a device sequence buffer, dense (padded positions zero).
std::vector<double> FromLayout(const RnnCase& c, const std::vector<double>& buffer, int width) {
  std::vector<double> dense(static_cast<size_t>(c.max_length) * c.Batch() * width);
  ForEachValid(c, [&](int t, int b) {
    for (int k = 0; k < width; ++k) {
      dense[Dense(c, t, b, width) + k] = buffer[Offset(c, t, b, width) + k];
    }
  });
  return dense;
}

std::vector<double> Select(const std::vector<double>& v, const std::vector<size_t>& indices) {
  std::vector<double> out;
  for (size_t i : indices) out.push_back(v[i]);
  return out;
}

// ---- The CPU reference ----

// One linear layer of a cell: a rows x cols matrix (row-major here, whatever cuDNN's strides) and
// its bias, empty where the RNN has none.
struct Linear {
  int rows = 0, cols = 0;
  std::vector<double> matrix, bias;
};
// Every pseudo-layer's linear layers, by linLayerID.
using Params = std::vector<std::vector<Linear>>;

// What goes into the RNN or comes out of it: a dense sequence (x, y, dx or dy) and the states
// (h, [pseudo-layer][batch][width]; c, which only LSTM uses, [pseudo-layer][batch][hidden]).
struct RnnIo {
  std::vector<double> seq, h, c;
};

double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// matrix * v + bias.
std::vector<double> Apply(const Linear& l, const double* v) {
  std::vector<double> out(l.rows);
  for (int r = 0; r < l.rows; ++r) {
    double sum = l.bias.empty() ? 0 : l.bias[r];
    for (int k = 0; k < l.cols; ++k) sum += l.matrix[static_cast<size_t>(r) * l.cols + k] * v[k];
    out[r] = sum;
  }
  return out;
}

// One step of the cell, by cuDNN's formulas, from the layer's input x: h (and c) updated in place.
// Gates by linLayerID (input matrix; recurrent matrix at the same index in the second half): LSTM
// input i, forget f, new memory c', output o; GRU reset r, update (cuDNN's i), new memory h', whose
// recurrent part (bias included) the reset gate scales. LSTM's h is o tanh(c), or its projection
// (the linear layer after the gates') where there is one.
void Step(cudnnRNNMode_t cell, const std::vector<Linear>& lin, const double* x,
          std::vector<double>& h, std::vector<double>& c) {
  const size_t gates = cell == CUDNN_LSTM ? 4 : cell == CUDNN_GRU ? 3 : 1;
  std::vector<std::vector<double>> wx(gates), rh(gates);
  for (size_t g = 0; g < gates; ++g) {
    wx[g] = Apply(lin[g], x);
    rh[g] = Apply(lin[gates + g], h.data());
  }
  const int hidden = lin[0].rows;
  std::vector<double> cell_output(hidden);  // LSTM's o tanh(c)
  for (int k = 0; k < hidden; ++k) {
    if (cell == CUDNN_LSTM) {
      const double i = Sigmoid(wx[0][k] + rh[0][k]), f = Sigmoid(wx[1][k] + rh[1][k]);
      const double memory = std::tanh(wx[2][k] + rh[2][k]), o = Sigmoid(wx[3][k] + rh[3][k]);
      c[k] = f * c[k] + i * memory;
      cell_output[k] = o * std::tanh(c[k]);
    } else if (cell == CUDNN_GRU) {
      const double r = Sigmoid(wx[0][k] + rh[0][k]), update = Sigmoid(wx[1][k] + rh[1][k]);
      const double memory = std::tanh(wx[2][k] + r * rh[2][k]);
      h[k] = (1 - update) * memory + update * h[k];
    } else {
      const double sum = wx[0][k] + rh[0][k];
      h[k] = cell == CUDNN_RNN_RELU ? std::max(sum, 0.0) : std::tanh(sum);
    }
  }
  if (cell != CUDNN_LSTM) return;
  h = lin.size() > 2 * gates ? Apply(lin[2 * gates], cell_output.data()) : cell_output;
}

// One direction of one layer over one sequence: the forward direction from its first step, the
// reverse one from the sequence's own last step back to its first; each step's h goes to its
// place in `out` (the layer's output, [forward, backward] per step), the final states to `io`.
void RunSequence(const RnnCase& c, const Params& params, int p, int b,
                 const std::vector<double>& in, int in_width, std::vector<double>& out, RnnIo& io) {
  const int direction = p % c.Directions(), length = c.lengths[b];
  const size_t sequence = static_cast<size_t>(p) * c.Batch() + b;
  const size_t state = sequence * c.Width(), cell_state = sequence * c.hidden;
  std::vector<double> h(io.h.begin() + state, io.h.begin() + state + c.Width());
  std::vector<double> cell(io.c.begin() + cell_state, io.c.begin() + cell_state + c.hidden);
  for (int s = 0; s < length; ++s) {
    const int t = direction == 0 ? s : length - 1 - s;
    Step(c.cell, params[p], &in[Dense(c, t, b, in_width)], h, cell);
    std::copy(h.begin(), h.end(),
              out.begin() + Dense(c, t, b, c.OutputWidth()) + direction * c.Width());
  }
  std::copy(h.begin(), h.end(), io.h.begin() + state);
  std::copy(cell.begin(), cell.end(), io.c.begin() + cell_state);
}

// The RNN on `in` (x, hx, cx): y, hy, cy. Layer by layer, each layer's output the next one's
// input, multiplied there by `dropout` (MaskSize factors, 0 or 1 / (1 - p)) where it is given.
RnnIo Forward(const RnnCase& c, const Params& params, const RnnIo& in,
              const std::vector<double>& dropout = {}) {
  RnnIo out = in;  // the states start as hx and cx
  int width = c.input;
  const size_t layer_size = static_cast<size_t>(c.max_length) * c.Batch() * c.OutputWidth();
  for (int layer = 0; layer < c.layers; ++layer) {
    std::vector<double> layer_out(layer_size);
    for (int p = layer * c.Directions(); p < (layer + 1) * c.Directions(); ++p) {
      for (int b = 0; b < c.Batch(); ++b)
        RunSequence(c, params, p, b, out.seq, width, layer_out, out);
    }
    for (size_t i = 0; !dropout.empty() && layer < c.layers - 1 && i < layer_size; ++i) {
      layer_out[i] *= dropout[layer * layer_size + i];
    }
    out.seq = std::move(layer_out);
    width = c.OutputWidth();
  }
  return out;
}

// sum(dy y) over the valid steps + sum(dhy hy) + sum(dcy cy) (LSTM only), dy, dhy and dcy given as
// `seeds`: the loss whose gradients the backward calls compute.
double Loss(const RnnCase& c, const RnnIo& out, const RnnIo& seeds) {
  double sum = 0;
  for (size_t i : ValidIndices(c, c.OutputWidth())) sum += seeds.seq[i] * out.seq[i];
  for (size_t i = 0; i < out.h.size(); ++i) sum += seeds.h[i] * out.h[i];
  if (c.Lstm()) {
    for (size_t i = 0; i < out.c.size(); ++i) sum += seeds.c[i] * out.c[i];
  }
  return sum;
}

// Inputs (or seeds) of the case in T: a width-wide sequence and, where the case gives states, h
// (and c for LSTM); the states are zeros where it does not, as cuDNN takes null ones.
template <typename T>
RnnIo MakeIo(const RnnCase& c, int width, int seed) {
  RnnIo io;
  io.seq = Irregular<T>(static_cast<size_t>(c.max_length) * c.Batch() * width, seed);
  io.h.assign(c.StateSize(), 0);
  io.c.assign(c.CellStateSize(), 0);
  if (c.states) io.h = Irregular<T>(c.StateSize(), seed + 1);
  if (c.states && c.Lstm()) io.c = Irregular<T>(c.CellStateSize(), seed + 2);
  return io;
}

// ---- Central differences ----

// d loss / d v for each variable v, by central differences.
std::vector<double> CentralDifferences(const std::vector<double*>& variables,
                                       const std::function<double()>& loss) {
  std::vector<double> gradient;
  for (double* v : variables) {
    const double saved = *v;
    *v = saved + kStep;
    const double up = loss();
    *v = saved - kStep;
    const double down = loss();
    *v = saved;
    gradient.push_back((up - down) / (2 * kStep));
  }
  return gradient;
}

std::vector<double*> Pointers(std::vector<double>& v, const std::vector<size_t>& indices) {
  std::vector<double*> out;
  for (size_t i : indices) out.push_back(&v[i]);
  return out;
}

std::vector<double*> AllOf(std::vector<double>& v) {
  std::vector<double*> out;
  for (double& e : v) out.push_back(&e);
  return out;
}

// Every weight and bias element: pseudo-layer by pseudo-layer, linear layer by linear layer, the
// matrix (row by row) and then the bias.
std::vector<double*> ParamPointers(Params& params) {
  std::vector<double*> out;
  for (auto& layer : params) {
    for (Linear& l : layer) {
      for (double* v : AllOf(l.matrix)) out.push_back(v);
      for (double* v : AllOf(l.bias)) out.push_back(v);
    }
  }
  return out;
}

// The values ParamPointers points to, in its order.
std::vector<double> Flatten(Params params) {
  std::vector<double> out;
  for (double* v : ParamPointers(params)) out.push_back(*v);
  return out;
}

// ---- The weight space ----

// Where one matrix or bias lies in a weight space, as cudnnGetRNNWeightParams says: absent (a
// null address), or rows x cols elements from `offset` (in elements from the space's start) with
// its descriptor's strides.
struct Place {
  bool present = false;
  int rows = 0, cols = 0;
  size_t offset = 0;
  int row_stride = 0, col_stride = 0;

  size_t At(int r, int k) const {
    return offset + static_cast<size_t>(r) * row_stride + static_cast<size_t>(k) * col_stride;
  }
};
struct LinearPlace {
  Place matrix, bias;
};
// Every pseudo-layer's, by linLayerID.
using Places = std::vector<std::vector<LinearPlace>>;

// The place of what cudnnGetRNNWeightParams returned at `address` (null: absent) with `desc`:
// {1, rows, cols} for a matrix, {1, rows, 1} for a bias, of the RNN's type.
template <typename T>
Place ReadPlace(const void* space, const void* address, cudnnTensorDescriptor_t desc) {
  Place place;
  if (address == nullptr) return place;
  cudnnDataType_t type;
  int count = 0, dims[3] = {}, strides[3] = {};
  CHECK_CUDNN(cudnnGetTensorNdDescriptor(desc, 3, &type, &count, dims, strides));
  EXPECT_IN_CASE(type == Element<T>::kType && count == 3 && dims[0] == 1);
  const ptrdiff_t bytes = static_cast<const char*>(address) - static_cast<const char*>(space);
  EXPECT_IN_CASE(bytes >= 0 && bytes % static_cast<ptrdiff_t>(sizeof(T)) == 0);
  place.present = true;
  place.rows = dims[1];
  place.cols = dims[2];
  place.offset = static_cast<size_t>(bytes) / sizeof(T);
  place.row_stride = strides[1];
  place.col_stride = strides[2];
  return place;
}

// Marks a place's elements used: each must lie inside the space and in no other place.
void Claim(const Place& place, std::vector<bool>& used) {
  if (!place.present) return;
  for (int r = 0; r < place.rows; ++r) {
    for (int k = 0; k < place.cols; ++k) {
      const size_t i = place.At(r, k);
      EXPECT_IN_CASE(i < used.size() && !used[i]);
      used[i] = true;
    }
  }
}

// Whether the bias mode gives the input (or the recurrent) linear layers a bias.
bool HasBias(cudnnRNNBiasMode_t mode, bool recurrent) {
  if (mode == CUDNN_RNN_DOUBLE_BIAS) return true;
  if (mode == CUDNN_RNN_SINGLE_INP_BIAS) return !recurrent;
  if (mode == CUDNN_RNN_SINGLE_REC_BIAS) return recurrent;
  return false;
}

// The documented shapes: hidden rows; as many columns as the layer's input (input matrices) or
// h (recurrent ones); a bias where the bias mode has one. The projection: width x hidden, no bias.
void ExpectShapes(const RnnCase& c, int p, int id, const LinearPlace& place) {
  if (id == c.LinearLayers()) {
    EXPECT_IN_CASE(place.matrix.present && place.matrix.rows == c.Width());
    EXPECT_IN_CASE(place.matrix.cols == c.hidden && !place.bias.present);
    return;
  }
  const bool recurrent = id >= c.LinearLayers() / 2;
  EXPECT_IN_CASE(place.matrix.present && place.matrix.rows == c.hidden);
  EXPECT_IN_CASE(place.matrix.cols == (recurrent ? c.Width() : c.InputWidth(p)));
  EXPECT_IN_CASE(place.bias.present == HasBias(c.bias, recurrent));
  EXPECT_IN_CASE(!place.bias.present || (place.bias.rows == c.hidden && place.bias.cols == 1));
}

// Every matrix and bias of the space at `space` (of `bytes` bytes), through
// cudnnGetRNNWeightParams: of the documented shapes, inside the space, none overlapping. LSTM's
// linLayerID 8, the recurrent projection, has neither matrix nor bias where it is disabled.
template <typename T>
Places QueryPlaces(cudnnHandle_t handle, cudnnRNNDescriptor_t rnn, const RnnCase& c,
                   const void* space, size_t bytes) {
  cudnnTensorDescriptor_t m_desc = nullptr, b_desc = nullptr;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&m_desc));
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&b_desc));
  Places places(c.PseudoLayers(), std::vector<LinearPlace>(c.Parameters()));
  std::vector<bool> used(bytes / sizeof(T));
  for (int p = 0; p < c.PseudoLayers(); ++p) {
    for (int id = 0; id < c.LinearLayers() + (c.Lstm() ? 1 : 0); ++id) {
      void *m_addr = nullptr, *b_addr = nullptr;
      CHECK_CUDNN(cudnnGetRNNWeightParams(handle, rnn, p, bytes, space, id, m_desc, &m_addr, b_desc,
                                          &b_addr));
      if (id == c.Parameters()) {
        EXPECT_IN_CASE(m_addr == nullptr && b_addr == nullptr);
        continue;
      }
      LinearPlace& place = places[p][id];
      place.matrix = ReadPlace<T>(space, m_addr, m_desc);
      place.bias = ReadPlace<T>(space, b_addr, b_desc);
      ExpectShapes(c, p, id, place);
      Claim(place.matrix, used);
      Claim(place.bias, used);
    }
  }
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(m_desc));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(b_desc));
  return places;
}

// Values in T for every matrix and bias of `places`, of their shapes; seed picks them.
template <typename T>
Params MakeParams(const Places& places, int seed) {
  Params params(places.size());
  for (size_t p = 0; p < places.size(); ++p) {
    for (const LinearPlace& place : places[p]) {
      Linear l;
      l.rows = place.matrix.rows;
      l.cols = place.matrix.cols;
      l.matrix = Irregular<T>(static_cast<size_t>(l.rows) * l.cols, seed++);
      if (place.bias.present) l.bias = Irregular<T>(place.bias.rows, seed++);
      params[p].push_back(l);
    }
  }
  return params;
}

// A weight space of `elements` elements holding `params` where `places` says, zero elsewhere.
template <typename T>
std::vector<T> SpaceImage(const Places& places, const Params& params, size_t elements) {
  std::vector<T> image(elements);
  for (size_t p = 0; p < places.size(); ++p) {
    for (size_t id = 0; id < places[p].size(); ++id) {
      const LinearPlace& place = places[p][id];
      const Linear& l = params[p][id];
      for (int r = 0; r < l.rows; ++r) {
        for (int k = 0; k < l.cols; ++k) {
          image[place.matrix.At(r, k)] =
              static_cast<T>(l.matrix[static_cast<size_t>(r) * l.cols + k]);
        }
      }
      for (size_t r = 0; r < l.bias.size(); ++r)
        image[place.bias.At(r, 0)] = static_cast<T>(l.bias[r]);
    }
  }
  return image;
}

// What a weight space (or its gradients) holds where `places` says.
Params Gather(const Places& places, const std::vector<double>& image) {
  Params params(places.size());
  for (size_t p = 0; p < places.size(); ++p) {
    for (const LinearPlace& place : places[p]) {
      Linear l;
      l.rows = place.matrix.rows;
      l.cols = place.matrix.cols;
      for (int r = 0; r < l.rows; ++r) {
        for (int k = 0; k < l.cols; ++k) l.matrix.push_back(image[place.matrix.At(r, k)]);
      }
      for (int r = 0; place.bias.present && r < place.bias.rows; ++r) {
        l.bias.push_back(image[place.bias.At(r, 0)]);
      }
      params[p].push_back(l);
    }
  }
  return params;
}

// ---- Descriptors ----

// A dropout descriptor with the states buffer cuDNN asks for, set with kDropoutSeed: dropout 0 for
// the RNNs without dropout, which share it (cuDNN applies dropout between layers, in training
// only), or a case's own.
struct Dropout {
  cudnnDropoutDescriptor_t desc = nullptr;
  void* states = nullptr;
  size_t bytes = 0;
};

constexpr unsigned long long kDropoutSeed = 1234;

Dropout MakeDropout(cudnnHandle_t handle, float probability) {
  Dropout dropout;
  CHECK_CUDNN(cudnnDropoutGetStatesSize(handle, &dropout.bytes));
  CHECK_CUDA(cudaMalloc(&dropout.states, dropout.bytes + 1));
  CHECK_CUDNN(cudnnCreateDropoutDescriptor(&dropout.desc));
  CHECK_CUDNN(cudnnSetDropoutDescriptor(dropout.desc, handle, probability, dropout.states,
                                        dropout.bytes, kDropoutSeed));
  return dropout;
}

void Destroy(const Dropout& dropout) {
  CHECK_CUDNN(cudnnDestroyDropoutDescriptor(dropout.desc));
  CHECK_CUDA(cudaFree(dropout.states));
}

// The factors of `n` elements under Tally's dropout from the counter `offset` of kDropoutSeed's
// stream: 0 where dropped, 1 / (1 - p) where kept. Results need not match NVIDIA's random numbers,
// so the reference draws Tally's (dropout_bits.h) to know which elements the device dropped.
std::vector<double> DropoutFactors(float p, uint64_t offset, size_t n) {
  namespace kernels = tally::libraries::kernels;
  std::vector<double> factors(n);
  for (size_t i = 0; i < n; ++i) {
    const bool kept = kernels::DropoutKeeps(kDropoutSeed, offset + i, kernels::DropThreshold(p));
    factors[i] = kept ? kernels::KeptScale(p) : 0;
  }
  return factors;
}

// The case's RNN on T data computing in T: linear input, the standard algorithm, padded input and
// output enabled for the unpacked layouts.
template <typename T>
cudnnRNNDescriptor_t MakeRnn(const RnnCase& c, cudnnDropoutDescriptor_t dropout) {
  cudnnRNNDescriptor_t rnn = nullptr;
  CHECK_CUDNN(cudnnCreateRNNDescriptor(&rnn));
  const uint32_t padded_io =
      c.Packed() ? CUDNN_RNN_PADDED_IO_DISABLED : CUDNN_RNN_PADDED_IO_ENABLED;
  CHECK_CUDNN(cudnnSetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, c.cell, c.bias, c.direction,
                                       CUDNN_LINEAR_INPUT, Element<T>::kType, Element<T>::kType,
                                       Element<T>::kMath, c.input, c.hidden, c.Width(), c.layers,
                                       dropout, padded_io));
  return rnn;
}

// The case's sequences of width-wide vectors; `fill` (host) is what the output's padding gets.
template <typename T>
cudnnRNNDataDescriptor_t MakeData(const RnnCase& c, int width, T* fill) {
  cudnnRNNDataDescriptor_t desc = nullptr;
  CHECK_CUDNN(cudnnCreateRNNDataDescriptor(&desc));
  CHECK_CUDNN(cudnnSetRNNDataDescriptor(desc, Element<T>::kType, c.layout, c.max_length, c.Batch(),
                                        width, c.lengths.data(), fill));
  return desc;
}

// hx, hy ([pseudo-layers, batch, width]) or cx, cy ([pseudo-layers, batch, hidden]), fully packed.
cudnnTensorDescriptor_t MakeStates(const RnnCase& c, cudnnDataType_t type, int width) {
  cudnnTensorDescriptor_t desc = nullptr;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&desc));
  const int dims[] = {c.PseudoLayers(), c.Batch(), width};
  const int strides[] = {c.Batch() * width, width, 1};
  CHECK_CUDNN(cudnnSetTensorNdDescriptor(desc, type, 3, dims, strides));
  return desc;
}

// One case's descriptors, its sequence lengths on the device (devSeqLengths) and the sizes cuDNN
// asks for.
struct Descriptors {
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnRNNDataDescriptor_t x = nullptr, y = nullptr;
  cudnnTensorDescriptor_t h = nullptr, c = nullptr;
  int32_t* lengths = nullptr;
  size_t weight_bytes = 0, inference_work = 0, training_work = 0, reserve = 0;
};

template <typename T>
Descriptors MakeDescriptors(cudnnHandle_t handle, const RnnCase& c,
                            cudnnDropoutDescriptor_t dropout) {
  Descriptors d;
  d.rnn = MakeRnn<T>(c, dropout);
  T fill = static_cast<T>(kPaddingFill);
  d.x = MakeData<T>(c, c.input, nullptr);
  d.y = MakeData<T>(c, c.OutputWidth(), &fill);
  d.h = MakeStates(c, Element<T>::kType, c.Width());
  d.c = MakeStates(c, Element<T>::kType, c.hidden);
  d.lengths = ToDevice(std::vector<int32_t>(c.lengths.begin(), c.lengths.end()));
  CHECK_CUDNN(cudnnGetRNNWeightSpaceSize(handle, d.rnn, &d.weight_bytes));
  size_t inference_reserve = 0;
  CHECK_CUDNN(cudnnGetRNNTempSpaceSizes(handle, d.rnn, CUDNN_FWD_MODE_INFERENCE, d.x,
                                        &d.inference_work, &inference_reserve));
  CHECK_CUDNN(cudnnGetRNNTempSpaceSizes(handle, d.rnn, CUDNN_FWD_MODE_TRAINING, d.x,
                                        &d.training_work, &d.reserve));
  EXPECT_IN_CASE(d.weight_bytes > 0 && d.reserve > 0);
  return d;
}

void Destroy(const Descriptors& d) {
  CHECK_CUDNN(cudnnDestroyRNNDescriptor(d.rnn));
  CHECK_CUDNN(cudnnDestroyRNNDataDescriptor(d.x));
  CHECK_CUDNN(cudnnDestroyRNNDataDescriptor(d.y));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(d.h));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(d.c));
  CHECK_CUDA(cudaFree(d.lengths));
}

// ---- Runs ----

// One case on the device beside its reference: the weights filled through
// cudnnGetRNNWeightParams, x, hx and cx, and the buffers the calls write.
template <typename T>
class RnnRun {
 public:
  RnnRun(cudnnHandle_t handle, const RnnCase& c, cudnnDropoutDescriptor_t dropout)
      : handle_(handle),
        c_(c),
        d_(MakeDescriptors<T>(handle, c, dropout)),
        weights_(std::vector<T>(d_.weight_bytes / sizeof(T))),
        places_(QueryPlaces<T>(handle, d_.rnn, c, weights_.get(), d_.weight_bytes)),
        params_(MakeParams<T>(places_, 1)),
        in_(MakeIo<T>(c, c.input, 100)),
        x_(ToLayout<T>(c, in_.seq, c.input, kInputPadding)),
        hx_(Narrow<T>(in_.h)),
        cx_(Narrow<T>(in_.c)),
        y_(NaNs<T>(BufferSize(c, c.OutputWidth()))),
        hy_(NaNs<T>(c.StateSize())),
        cy_(NaNs<T>(c.CellStateSize())),
        work_(
            std::vector<unsigned char>(std::max({d_.inference_work, d_.training_work, size_t{1}}))),
        reserve_(std::vector<unsigned char>(d_.reserve)) {
    Upload(weights_.get(), SpaceImage<T>(places_, params_, d_.weight_bytes / sizeof(T)));
  }
  ~RnnRun() { Destroy(d_); }
  RnnRun(const RnnRun&) = delete;
  RnnRun& operator=(const RnnRun&) = delete;

  // cudnnRNNForward in `mode` against the reference: y (paddingFill at the padded positions), and
  // hy and cy where wanted. Training drops what the next masks of the case's dropout say.
  void CheckForward(cudnnForwardMode_t mode) {
    const bool training = mode == CUDNN_FWD_MODE_TRAINING;
    const std::string name = training ? "training " : "inference ";
    Upload(y_.get(), NaNs<T>(BufferSize(c_, c_.OutputWidth())));
    Upload(hy_.get(), NaNs<T>(c_.StateSize()));
    Upload(cy_.get(), NaNs<T>(c_.CellStateSize()));
    CHECK_CUDNN(RunForward(Args(mode)));
    const RnnIo want = Forward(c_, params_, in_, training ? NextMasks() : std::vector<double>{});
    y_.Expect(ToLayout<double>(c_, want.seq, c_.OutputWidth(), kPaddingFill), kForwardTolerance<T>,
              name + "y");
    if (c_.states) hy_.Expect(want.h, kForwardTolerance<T>, name + "hy");
    if (c_.states && c_.Lstm()) cy_.Expect(want.c, kForwardTolerance<T>, name + "cy");
  }

  // A training forward, BackwardData_v8 and BackwardWeights_v8, against central differences of
  // the reference's loss; what was checked, for the summary.
  std::string CheckBackward() {
    const RnnIo seeds = MakeIo<T>(c_, c_.OutputWidth(), 200);
    const std::vector<double> masks = NextMasks();
    const std::function<double()> loss = [&] {
      return Loss(c_, Forward(c_, params_, in_, masks), seeds);
    };
    CHECK_CUDNN(RunForward(Args(CUDNN_FWD_MODE_TRAINING)));
    CheckBackwardData(seeds, loss);
    return ", backward data and weights (" + CheckBackwardWeights(loss) + ")";
  }

  // The descriptor was set again with kDropoutSeed: the masks start over.
  void RestartDropout() { dropout_offset_ = 0; }

  // The documented statuses for bad arguments to this run's calls.
  void CheckRefusals() {
    size_t size = 0;
    ExpectBadParam(cudnnGetRNNWeightSpaceSize(nullptr, d_.rnn, &size),
                   "GetRNNWeightSpaceSize with a null handle");
    ForwardArgs args = Args(CUDNN_FWD_MODE_INFERENCE);
    args.handle = nullptr;
    ExpectBadParam(RunForward(args), "RNNForward with a null handle");
    CheckWeightParamsRange();
    args = Args(CUDNN_FWD_MODE_INFERENCE);
    args.weight_bytes /= 2;
    ExpectBadParam(RunForward(args), "RNNForward with half the weight space");
    if (d_.inference_work > 0) {
      args = Args(CUDNN_FWD_MODE_INFERENCE);
      args.work_bytes /= 2;
      ExpectBadParam(RunForward(args), "RNNForward (inference) with half the workspace");
    }
    args = Args(CUDNN_FWD_MODE_TRAINING);
    args.reserve_bytes /= 2;
    ExpectBadParam(RunForward(args), "RNNForward (training) with half the reserve space");
    CheckWideInput();
  }

 private:
  // The factors of the next training pass's dropout masks (none without dropout): each pass draws
  // MaskSize elements of the seed's stream after the previous pass's.
  std::vector<double> NextMasks() {
    if (c_.dropout == 0 || c_.layers < 2) return {};
    std::vector<double> masks = DropoutFactors(c_.dropout, dropout_offset_, c_.MaskSize());
    dropout_offset_ += c_.MaskSize();
    return masks;
  }

  // What one cudnnRNNForward passes, for the checks to change; the rest is this run's.
  struct ForwardArgs {
    cudnnHandle_t handle;
    cudnnForwardMode_t mode;
    cudnnRNNDataDescriptor_t x_desc;
    const T* x;
    size_t weight_bytes, work_bytes, reserve_bytes;
  };

  // The run's own arguments: the sizes cuDNN asked for in that mode (no reserve in inference).
  ForwardArgs Args(cudnnForwardMode_t mode) const {
    ForwardArgs args{handle_, mode, d_.x, x_.get(), d_.weight_bytes, d_.inference_work, 0};
    if (mode == CUDNN_FWD_MODE_TRAINING) {
      args.work_bytes = d_.training_work;
      args.reserve_bytes = d_.reserve;
    }
    return args;
  }

  cudnnStatus_t RunForward(const ForwardArgs& a) {
    void* reserve = a.mode == CUDNN_FWD_MODE_TRAINING ? reserve_.get() : nullptr;
    return cudnnRNNForward(a.handle, d_.rnn, a.mode, d_.lengths, a.x_desc, a.x, d_.y, y_.get(),
                           d_.h, States(hx_), States(hy_), d_.c, Cells(cx_), Cells(cy_),
                           a.weight_bytes, weights_.get(), a.work_bytes, work_.get(),
                           a.reserve_bytes, reserve);
  }

  // A state buffer where the case passes states, null where it does not; cell states for LSTM only.
  T* States(const DeviceArray<T>& buffer) const { return c_.states ? buffer.get() : nullptr; }
  T* Cells(const DeviceArray<T>& buffer) const { return c_.Lstm() ? States(buffer) : nullptr; }

  // dx at the valid positions (cuDNN's padding of dx is not documented), dhx and dcx.
  void CheckBackwardData(const RnnIo& seeds, const std::function<double()>& loss) {
    const DeviceArray<T> dy(ToLayout<T>(c_, seeds.seq, c_.OutputWidth(), kInputPadding));
    const DeviceArray<T> dhy(Narrow<T>(seeds.h)), dcy(Narrow<T>(seeds.c));
    const DeviceArray<T> dx(NaNs<T>(BufferSize(c_, c_.input)));
    const DeviceArray<T> dhx(NaNs<T>(c_.StateSize())), dcx(NaNs<T>(c_.CellStateSize()));
    CHECK_CUDNN(cudnnRNNBackwardData_v8(
        handle_, d_.rnn, d_.lengths, d_.y, y_.get(), dy.get(), d_.x, dx.get(), d_.h, States(hx_),
        States(dhy), States(dhx), d_.c, Cells(cx_), Cells(dcy), Cells(dcx), d_.weight_bytes,
        weights_.get(), d_.training_work, work_.get(), d_.reserve, reserve_.get()));
    const double tolerance = kGradientTolerance<T>;
    const std::vector<size_t> valid = ValidIndices(c_, c_.input);
    const auto got_dx = FromLayout(c_, Widen(ToHost(dx.get(), BufferSize(c_, c_.input))), c_.input);
    ExpectValues(Select(got_dx, valid), CentralDifferences(Pointers(in_.seq, valid), loss),
                 tolerance, "BackwardData dx");
    if (c_.states) {
      dhx.Expect(CentralDifferences(AllOf(in_.h), loss), tolerance, "BackwardData dhx");
    }
    if (c_.states && c_.Lstm()) {
      dcx.Expect(CentralDifferences(AllOf(in_.c), loss), tolerance, "BackwardData dcx");
    }
  }

  // BackwardWeights in the case's mode onto a gradient space that already holds values there
  // (which ADD adds to; SET must not read them: NaN), read back through cudnnGetRNNWeightParams
  // on that space. cuDNN documents SET as not supported by this call: a refusal passes, unless
  // it wrote something. Returns the mode and what came of it.
  std::string CheckBackwardWeights(const std::function<double()>& loss) {
    const bool add = c_.gradients == Gradients::kAdd;
    const size_t elements = d_.weight_bytes / sizeof(T);
    const DeviceArray<T> dweights{std::vector<T>(elements)};
    const Places places = QueryPlaces<T>(handle_, d_.rnn, c_, dweights.get(), d_.weight_bytes);
    Params before = MakeParams<T>(places, 300);
    if (!add) {
      for (double* v : ParamPointers(before)) *v = kNaN;
    }
    Upload(dweights.get(), SpaceImage<T>(places, before, elements));
    const cudnnStatus_t status = cudnnRNNBackwardWeights_v8(
        handle_, d_.rnn, add ? CUDNN_WGRAD_MODE_ADD : CUDNN_WGRAD_MODE_SET, d_.lengths, d_.x,
        x_.get(), d_.h, States(hx_), d_.y, y_.get(), d_.weight_bytes, dweights.get(),
        d_.training_work, work_.get(), d_.reserve, reserve_.get());
    const auto got = Flatten(Gather(places, Widen(ToHost(dweights.get(), elements))));
    if (!add && (IsNotSupported(status) || IsBadParam(status))) {
      for (size_t i = 0; i < got.size(); ++i) EXPECT_IN_CASE(std::isnan(got[i]));
      return std::string("SET refused: ") + cudnnGetErrorString(status);
    }
    CheckStatus(status,
                add ? "cudnnRNNBackwardWeights_v8 (ADD)" : "cudnnRNNBackwardWeights_v8 (SET)");
    std::vector<double> want = CentralDifferences(ParamPointers(params_), loss);
    const std::vector<double> already = Flatten(before);
    for (size_t i = 0; add && i < want.size(); ++i) want[i] += already[i];
    ExpectValues(got, want, kGradientTolerance<T>,
                 add ? "BackwardWeights ADD" : "BackwardWeights SET");
    return add ? "ADD" : "SET";
  }

  // pseudoLayer and linLayerID out of their ranges.
  void CheckWeightParamsRange() {
    cudnnTensorDescriptor_t m_desc = nullptr, b_desc = nullptr;
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&m_desc));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&b_desc));
    void *m_addr = nullptr, *b_addr = nullptr;
    const auto get = [&](int p, int id) {
      return cudnnGetRNNWeightParams(handle_, d_.rnn, p, d_.weight_bytes, weights_.get(), id,
                                     m_desc, &m_addr, b_desc, &b_addr);
    };
    for (int p : {-1, c_.PseudoLayers()}) {
      ExpectBadParam(get(p, 0), "GetRNNWeightParams, pseudo-layer " + std::to_string(p));
    }
    // LSTM's 8 is its projection's (there, absent).
    for (int id : {-1, c_.LinearLayers() + (c_.Lstm() ? 1 : 0)}) {
      ExpectBadParam(get(0, id), "GetRNNWeightParams, linLayerID " + std::to_string(id));
    }
    CHECK_CUDNN(cudnnDestroyTensorDescriptor(m_desc));
    CHECK_CUDNN(cudnnDestroyTensorDescriptor(b_desc));
  }

  // An x descriptor whose vectors are wider than the RNN's inputSize (over a buffer as wide).
  void CheckWideInput() {
    T fill = 0;
    const cudnnRNNDataDescriptor_t wide = MakeData<T>(c_, c_.input + 1, &fill);
    const DeviceArray<T> wide_x(std::vector<T>(BufferSize(c_, c_.input + 1)));
    ForwardArgs args = Args(CUDNN_FWD_MODE_INFERENCE);
    args.x_desc = wide;
    args.x = wide_x.get();
    ExpectBadParam(RunForward(args), "RNNForward with x vectors wider than inputSize");
    CHECK_CUDNN(cudnnDestroyRNNDataDescriptor(wide));
  }

  cudnnHandle_t handle_;
  RnnCase c_;
  Descriptors d_;
  DeviceArray<T> weights_;
  Places places_;
  Params params_;
  RnnIo in_;  // x (dense), hx, cx: the reference's, perturbed by the central differences
  DeviceArray<T> x_, hx_, cx_, y_, hy_, cy_;
  DeviceArray<unsigned char> work_, reserve_;
  uint64_t dropout_offset_ = 0;  // of the stream, at the next training pass
};

// ---- Checks ----

// A case's dropout read back, and its stream: successive passes draw different masks; restoring
// the descriptor from its states goes on where they stand (as PyTorch does, seed 0), setting it
// again with the same seed draws the same masks again.
template <typename T>
void CheckDropoutStream(cudnnHandle_t handle, const Dropout& dropout, const RnnCase& c,
                        RnnRun<T>& run) {
  float p = 0;
  void* states = nullptr;
  unsigned long long seed = 0;
  CHECK_CUDNN(cudnnGetDropoutDescriptor(dropout.desc, handle, &p, &states, &seed));
  EXPECT_IN_CASE(p == c.dropout && states == dropout.states && seed == kDropoutSeed);
  EXPECT_IN_CASE(DropoutFactors(p, 0, c.MaskSize()) !=
                 DropoutFactors(p, c.MaskSize(), c.MaskSize()));
  CHECK_CUDNN(
      cudnnRestoreDropoutDescriptor(dropout.desc, handle, p, dropout.states, dropout.bytes, 0));
  run.CheckForward(CUDNN_FWD_MODE_TRAINING);
  CHECK_CUDNN(cudnnSetDropoutDescriptor(dropout.desc, handle, p, dropout.states, dropout.bytes,
                                        kDropoutSeed));
  run.RestartDropout();
  run.CheckForward(CUDNN_FWD_MODE_TRAINING);
}

// A case on the dropout descriptor the cases without dropout share, or on its own.
template <typename T>
void TestCase(cudnnHandle_t handle, cudnnDropoutDescriptor_t shared, const RnnCase& c) {
  g_what = std::string(Element<T>::kName) + " " + c.name;
  const bool dropout = c.dropout > 0;
  const Dropout own = dropout ? MakeDropout(handle, c.dropout) : Dropout{};
  std::string checked = "forward (inference, training)";
  {
    RnnRun<T> run(handle, c, dropout ? own.desc : shared);
    run.CheckForward(CUDNN_FWD_MODE_INFERENCE);
    run.CheckForward(CUDNN_FWD_MODE_TRAINING);
    if (c.gradients != Gradients::kNone) checked += run.CheckBackward();
    if (dropout) {
      CheckDropoutStream(handle, own, c, run);
      checked += ", the dropout stream";
    }
  }
  if (dropout) Destroy(own);
  std::printf("%s: %s correct\n", g_what.c_str(), checked.c_str());
}

// Every cell, layout and bias mode forward in f32, with one gradient check; the gradients of every
// cell against central differences in f64.
void TestCases(cudnnHandle_t handle, cudnnDropoutDescriptor_t dropout) {
  const bool states = true, none = false;
  const Gradients forward_only = Gradients::kNone, add = Gradients::kAdd;
  // clang-format off
  const RnnCase f32_cases[] = {
      // name                                       cell            direction bias    layout    layers in hid max lengths  states  gradients
      {"ReLU, seq-major padded",                    CUDNN_RNN_RELU, kUni, kDoubleBias, kSeqMajor,   1, 4, 3, 4, {4, 2, 3}, states, forward_only},
      {"tanh, bidirectional, 2 layers, no bias, batch-major padded beyond the longest",
                                                    CUDNN_RNN_TANH, kBi,  kNoBias,     kBatchMajor, 2, 3, 2, 4, {2, 3, 1}, states, forward_only},
      {"tanh, single input bias, packed",           CUDNN_RNN_TANH, kUni, kInputBias,  kPacked,     1, 3, 3, 3, {3, 2, 2}, states, forward_only},
      {"LSTM, 2 layers, packed",                    CUDNN_LSTM,     kUni, kDoubleBias, kPacked,     2, 4, 3, 4, {4, 3, 1}, states, forward_only},
      {"LSTM, bidirectional, null hx, cx, hy, cy",  CUDNN_LSTM,     kBi,  kDoubleBias, kSeqMajor,   1, 2, 3, 3, {3, 1, 2}, none,   forward_only},
      {"GRU, bidirectional, 2 layers, seq-major padded",
                                                    CUDNN_GRU,      kBi,  kDoubleBias, kSeqMajor,   2, 3, 3, 4, {3, 4, 2}, states, forward_only},
      {"LSTM, batch-major padded, gradients",       CUDNN_LSTM,     kUni, kDoubleBias, kBatchMajor, 1, 3, 2, 3, {3, 1, 2}, states, add},
      {"LSTM, 2 layers, projection 2, packed",      CUDNN_LSTM,     kUni, kDoubleBias, kPacked,     2, 3, 3, 4, {4, 3, 1}, states, forward_only, 2},
  };
  const RnnCase f64_cases[] = {
      {"LSTM, bidirectional, 2 layers, seq-major padded",
                                                    CUDNN_LSTM,     kBi,  kDoubleBias, kSeqMajor,   2, 3, 3, 4, {4, 2, 3}, states, add},
      {"GRU, 2 layers, batch-major padded",         CUDNN_GRU,      kUni, kDoubleBias, kBatchMajor, 2, 4, 3, 4, {2, 4, 3}, states, add},
      {"GRU, bidirectional, no bias, packed",       CUDNN_GRU,      kBi,  kNoBias,     kPacked,     1, 2, 3, 3, {3, 3, 1}, states, add},
      {"ReLU, bidirectional, packed",               CUDNN_RNN_RELU, kBi,  kDoubleBias, kPacked,     1, 3, 3, 4, {4, 3, 1}, states, add},
      {"tanh, 2 layers, null hx, hy",               CUDNN_RNN_TANH, kUni, kDoubleBias, kSeqMajor,   2, 2, 3, 3, {2, 3, 1}, none,   Gradients::kSet},
      // name                                       cell            direction bias    layout    layers in hid max lengths  states  gradients projection dropout
      {"LSTM, 2 layers, dropout 0.5, seq-major padded",
                                                    CUDNN_LSTM,     kUni, kDoubleBias, kSeqMajor,   2, 3, 3, 4, {4, 2, 3}, states, add,      0,        0.5f},
      {"LSTM, bidirectional, 2 layers, projection 2, batch-major padded",
                                                    CUDNN_LSTM,     kBi,  kDoubleBias, kBatchMajor, 2, 3, 4, 3, {3, 1, 2}, states, add,      2},
      {"LSTM, 2 layers, projection 1, dropout 0.5, null hx, cx, hy, cy",
                                                    CUDNN_LSTM,     kUni, kInputBias,  kSeqMajor,   2, 2, 3, 3, {3, 2, 1}, none,   Gradients::kSet, 1, 0.5f},
      {"GRU, bidirectional, 3 layers, dropout 0.3, packed",
                                                    CUDNN_GRU,      kBi,  kDoubleBias, kPacked,     3, 2, 2, 3, {3, 2, 1}, states, add,      0,        0.3f},
  };
  // clang-format on
  for (const RnnCase& c : f32_cases) TestCase<float>(handle, dropout, c);
  for (const RnnCase& c : f64_cases) TestCase<double>(handle, dropout, c);
}

// Set_v8 and Get_v8 read back, every field, twice on one descriptor.
void TestRnnDescriptor(cudnnDropoutDescriptor_t dropout) {
  g_what = "RNN descriptor";
  cudnnRNNDescriptor_t rnn = nullptr;
  CHECK_CUDNN(cudnnCreateRNNDescriptor(&rnn));
  struct Fields {
    cudnnRNNAlgo_t algo;
    cudnnRNNMode_t cell;
    cudnnRNNBiasMode_t bias;
    cudnnDirectionMode_t direction;
    cudnnRNNInputMode_t input_mode;
    cudnnDataType_t type, math_prec;
    cudnnMathType_t math;
    int32_t input, hidden, proj, layers;
    cudnnDropoutDescriptor_t dropout;
    uint32_t aux;
  };
  const Fields sets[] = {
      {CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, kDoubleBias, kBi, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT,
       CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, 4, 3, 3, 2, dropout, CUDNN_RNN_PADDED_IO_ENABLED},
      {CUDNN_RNN_ALGO_STANDARD, CUDNN_GRU, kNoBias, kUni, CUDNN_LINEAR_INPUT, CUDNN_DATA_DOUBLE,
       CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH, 2, 3, 3, 1, dropout, CUDNN_RNN_PADDED_IO_DISABLED},
      {CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, kInputBias, kUni, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT,
       CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, 5, 4, 2, 3, dropout, CUDNN_RNN_PADDED_IO_DISABLED},
  };
  for (const Fields& s : sets) {
    CHECK_CUDNN(cudnnSetRNNDescriptor_v8(rnn, s.algo, s.cell, s.bias, s.direction, s.input_mode,
                                         s.type, s.math_prec, s.math, s.input, s.hidden, s.proj,
                                         s.layers, s.dropout, s.aux));
    Fields g;
    CHECK_CUDNN(cudnnGetRNNDescriptor_v8(rnn, &g.algo, &g.cell, &g.bias, &g.direction,
                                         &g.input_mode, &g.type, &g.math_prec, &g.math, &g.input,
                                         &g.hidden, &g.proj, &g.layers, &g.dropout, &g.aux));
    EXPECT_IN_CASE(g.algo == s.algo && g.cell == s.cell && g.bias == s.bias);
    EXPECT_IN_CASE(g.direction == s.direction && g.input_mode == s.input_mode);
    EXPECT_IN_CASE(g.type == s.type && g.math_prec == s.math_prec && g.math == s.math);
    EXPECT_IN_CASE(g.input == s.input && g.hidden == s.hidden && g.proj == s.proj);
    EXPECT_IN_CASE(g.layers == s.layers && g.dropout == s.dropout && g.aux == s.aux);
  }
  CHECK_CUDNN(cudnnDestroyRNNDescriptor(rnn));
  std::printf("RNN descriptor: set and read back\n");
}

// Set and Get: every field, the lengths (as many as asked for) and the padding fill.
void TestDataDescriptor() {
  g_what = "RNN data descriptor";
  cudnnRNNDataDescriptor_t desc = nullptr;
  CHECK_CUDNN(cudnnCreateRNNDataDescriptor(&desc));
  const int lengths[] = {4, 2, 3};
  double fill = kPaddingFill;
  CHECK_CUDNN(
      cudnnSetRNNDataDescriptor(desc, CUDNN_DATA_DOUBLE, kBatchMajor, 5, 3, 2, lengths, &fill));
  cudnnDataType_t type;
  cudnnRNNDataLayout_t layout;
  int max_length = 0, batch = 0, width = 0, got[3] = {-1, -1, -1};
  double got_fill = 0;
  CHECK_CUDNN(cudnnGetRNNDataDescriptor(desc, &type, &layout, &max_length, &batch, &width, 3, got,
                                        &got_fill));
  EXPECT_IN_CASE(type == CUDNN_DATA_DOUBLE && layout == kBatchMajor && max_length == 5);
  EXPECT_IN_CASE(batch == 3 && width == 2 && got_fill == kPaddingFill);
  EXPECT_IN_CASE(got[0] == 4 && got[1] == 2 && got[2] == 3);
  // Two lengths asked for: the third stays as it was.
  const int packed[] = {4, 3, 1};
  float float_fill = 0;
  CHECK_CUDNN(cudnnSetRNNDataDescriptor(desc, CUDNN_DATA_FLOAT, kPacked, 4, 3, 6, packed, nullptr));
  int two[3] = {-1, -1, -1};
  CHECK_CUDNN(cudnnGetRNNDataDescriptor(desc, &type, &layout, &max_length, &batch, &width, 2, two,
                                        &float_fill));
  EXPECT_IN_CASE(type == CUDNN_DATA_FLOAT && layout == kPacked && max_length == 4);
  EXPECT_IN_CASE(batch == 3 && width == 6);
  EXPECT_IN_CASE(two[0] == 4 && two[1] == 3 && two[2] == -1);
  CHECK_CUDNN(cudnnDestroyRNNDataDescriptor(desc));
  std::printf("RNN data descriptor: set and read back\n");
}

// Descriptors refused: no hidden state or no layer, a projection wider than the hidden state or of
// another cell than LSTM; data of no width or a sequence longer than maxSeqLength.
void TestBadDescriptors(cudnnDropoutDescriptor_t dropout) {
  cudnnRNNDescriptor_t rnn = nullptr;
  CHECK_CUDNN(cudnnCreateRNNDescriptor(&rnn));
  const auto set = [&](cudnnRNNMode_t cell, int hidden, int projection, int layers) {
    return cudnnSetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, cell, kDoubleBias, kUni,
                                    CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
                                    CUDNN_DEFAULT_MATH, 3, hidden, projection, layers, dropout,
                                    CUDNN_RNN_PADDED_IO_DISABLED);
  };
  ExpectBadParam(set(CUDNN_RNN_TANH, 0, 0, 1), "SetRNNDescriptor_v8 with hiddenSize 0");
  ExpectBadParam(set(CUDNN_RNN_TANH, -3, -3, 1), "SetRNNDescriptor_v8 with hiddenSize -3");
  ExpectBadParam(set(CUDNN_RNN_TANH, 3, 3, 0), "SetRNNDescriptor_v8 with numLayers 0");
  ExpectBadParam(set(CUDNN_LSTM, 3, 4, 1), "SetRNNDescriptor_v8 with projSize above hiddenSize");
  ExpectBadParam(set(CUDNN_GRU, 3, 2, 1), "SetRNNDescriptor_v8 with a GRU's projection");
  CHECK_CUDNN(cudnnDestroyRNNDescriptor(rnn));
  cudnnRNNDataDescriptor_t data = nullptr;
  CHECK_CUDNN(cudnnCreateRNNDataDescriptor(&data));
  const int lengths[] = {3, 2}, too_long[] = {3, 5};
  ExpectBadParam(
      cudnnSetRNNDataDescriptor(data, CUDNN_DATA_FLOAT, kSeqMajor, 3, 2, 0, lengths, nullptr),
      "SetRNNDataDescriptor with vectorSize 0");
  ExpectBadParam(
      cudnnSetRNNDataDescriptor(data, CUDNN_DATA_FLOAT, kSeqMajor, 3, 2, 4, too_long, nullptr),
      "SetRNNDataDescriptor with a sequence longer than maxSeqLength");
  CHECK_CUDNN(cudnnDestroyRNNDataDescriptor(data));
}

// cudnnDropoutForward and Backward on a 4-D tensor written into a padded one: each forward call
// draws the next elements of the seed's stream (Tally's, as the reference draws it), drops about
// p of them and scales the others by 1 / (1 - p); backward applies the mask the last forward call
// left in the reserve space. Then the statuses for bad input.
void TestDropoutCalls(cudnnHandle_t handle) {
  g_what = "dropout";
  constexpr float p = 0.3f;
  const Dropout dropout = MakeDropout(handle, p);
  const int dims[] = {2, 3, 16, 16}, packed[] = {768, 256, 16, 1}, padded[] = {1024, 320, 20, 1};
  const size_t n = 2 * 3 * 16 * 16;
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&x_desc));
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&y_desc));
  CHECK_CUDNN(cudnnSetTensorNdDescriptor(x_desc, CUDNN_DATA_FLOAT, 4, dims, packed));
  CHECK_CUDNN(cudnnSetTensorNdDescriptor(y_desc, CUDNN_DATA_FLOAT, 4, dims, padded));
  size_t reserve_bytes = 0;
  CHECK_CUDNN(cudnnDropoutGetReserveSpaceSize(x_desc, &reserve_bytes));
  EXPECT_IN_CASE(reserve_bytes >= n);
  const DeviceArray<unsigned char> reserve{std::vector<unsigned char>(reserve_bytes)};
  const std::vector<double> x = Irregular<float>(n, 7), dy = Irregular<float>(n, 8);
  const DeviceArray<float> x_dev(Narrow<float>(x)), dy_dev(Narrow<float>(dy));
  const DeviceArray<float> y_dev(NaNs<float>(2 * 1024)), dx_dev(NaNs<float>(2 * 1024));
  // The padded tensor's elements in the packed order.
  const auto unpad = [&](const DeviceArray<float>& padded_dev) {
    const std::vector<double> all = Widen(ToHost(padded_dev.get(), 2 * 1024));
    std::vector<double> out;
    for (size_t i = 0; i < n; ++i) {
      out.push_back(all[i / 768 * 1024 + i % 768 / 256 * 320 + i % 256 / 16 * 20 + i % 16]);
    }
    return out;
  };
  std::vector<double> factors;
  for (size_t call = 0; call < 2; ++call) {
    CHECK_CUDNN(cudnnDropoutForward(handle, dropout.desc, x_desc, x_dev.get(), y_desc, y_dev.get(),
                                    reserve.get(), reserve_bytes));
    factors = DropoutFactors(p, call * n, n);
    std::vector<double> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = x[i] * factors[i];
    ExpectValues(unpad(y_dev), want, Element<float>::kTolerance, "forward " + std::to_string(call));
    const double dropped = std::count(factors.begin(), factors.end(), 0.0) / double(n);
    EXPECT_IN_CASE(std::fabs(dropped - p) < 0.05);
  }
  CHECK_CUDNN(cudnnDropoutBackward(handle, dropout.desc, x_desc, dy_dev.get(), y_desc, dx_dev.get(),
                                   reserve.get(), reserve_bytes));
  std::vector<double> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = dy[i] * factors[i];
  ExpectValues(unpad(dx_dev), want, Element<float>::kTolerance, "backward");
  ExpectBadParam(cudnnDropoutForward(handle, dropout.desc, x_desc, x_dev.get(), y_desc, y_dev.get(),
                                     reserve.get(), n - 1),
                 "DropoutForward with a reserve space of one byte too few");
  const int other[] = {2, 3, 16, 15};
  CHECK_CUDNN(cudnnSetTensorNdDescriptor(y_desc, CUDNN_DATA_FLOAT, 4, other, packed));
  ExpectBadParam(cudnnDropoutBackward(handle, dropout.desc, x_desc, dy_dev.get(), y_desc,
                                      dx_dev.get(), reserve.get(), reserve_bytes),
                 "DropoutBackward with tensors of different dimensions");
  EXPECT_IN_CASE(cudnnSetDropoutDescriptor(dropout.desc, handle, p, dropout.states, 1, 1) ==
                 CUDNN_STATUS_INVALID_VALUE);
  ExpectBadParam(
      cudnnSetDropoutDescriptor(dropout.desc, handle, 1.5f, dropout.states, dropout.bytes, 1),
      "SetDropoutDescriptor with probability 1.5");
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(x_desc));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(y_desc));
  Destroy(dropout);
  std::printf("dropout: forward, backward and the states' stream correct\n");
}

void TestBadInput(cudnnHandle_t handle, cudnnDropoutDescriptor_t dropout) {
  g_what = "bad input";
  TestBadDescriptors(dropout);
  const RnnCase c = {"bad input", CUDNN_RNN_TANH, kUni, kDoubleBias,     kSeqMajor, 1, 3, 2,
                     3,           {3, 1, 2},      true, Gradients::kNone};
  RnnRun<float>(handle, c, dropout).CheckRefusals();
  std::printf("bad input: the documented statuses\n");
}

}  // namespace

int main() {
  cudnnHandle_t handle = HandleOnOwnStream();
  std::printf("cuDNN %zu: RNN API\n", cudnnGetVersion());
  const Dropout dropout = MakeDropout(handle, 0.0f);
  TestRnnDescriptor(dropout.desc);
  TestDataDescriptor();
  TestDropoutCalls(handle);
  TestCases(handle, dropout.desc);
  TestBadInput(handle, dropout.desc);
  Destroy(dropout);
  DestroyHandleAndStream(handle);
  std::printf("CUDNN RNN OK\n");
  return 0;
}
