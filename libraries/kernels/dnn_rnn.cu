// The recurrent cells of cuDNN's RNN API (rnn_kernels.h), one thread per (sequence, hidden unit)
// and one launch per time step of a layer direction: a step reads the whole previous state, so
// steps cannot share a launch. The cells, as cuDNN documents them:
//   RELU/TANH  h = act(W x + bW + R h' + bR)
//   LSTM       i, f, o = sigmoid(...), c~ = tanh(...), c = f c' + i c~, h = o tanh(c)
//              (with a recurrent projection: h = W_r (o tanh(c)), narrower than c)
//   GRU        r, z = sigmoid(...), n = tanh(W_n x + bW_n + r (R_n h' + bR_n)),
//              h = (1 - z) n + z h'
// (h', c': the previous step's state). Steps past a sequence's end carry the state unchanged,
// so that the final state is each sequence's own last one in either direction. In training, the
// output of every layer but the last goes through a dropout mask before the next layer reads it.
#include "libraries/kernels/dnn.cuh"
#include "libraries/kernels/dropout_bits.h"
#include "libraries/kernels/dropout_kernels.h"
#include "libraries/kernels/rnn_kernels.h"

namespace tally::libraries::kernels {
namespace {

// The sequences' table in the workspace (RnnSequences).
struct Table {
  const int64_t* entries;
  int64_t steps, batch;

  __device__ int64_t Cell(int64_t t, int64_t b) const { return t * batch + b; }
  __device__ int64_t Row(int64_t t, int64_t b) const { return entries[Cell(t, b)]; }
  __device__ bool Active(int64_t t, int64_t b) const { return t < entries[steps * batch + b]; }
};

// One direction of one layer: its weights (in the data type T) and what its steps keep (in the
// computation's type A), [step][sequence][...] each.
template <typename T>
struct PseudoLayer {
  using A = Compute<T>;
  RnnCell cell;
  int64_t hidden, gates, input_width;
  int64_t width;                // h's: the projection size, or hidden
  bool reverse;                 // from the last step to the first
  const T* input_matrices;      // gates x hidden x input_width
  const T* recurrent_matrices;  // gates x hidden x width
  const T* input_bias;          // gates x hidden, or null
  const T* recurrent_bias;
  const T* projection;    // width x hidden (LSTM's recurrent projection), or null
  A* h;                   // width per cell
  A* c;                   // hidden per cell (LSTM only)
  A* gate_values;         // 4 x hidden per cell (LSTM, GRU)
  A* input_gradient;      // gates x hidden per cell
  A* recurrent_gradient;  // the same, or input_gradient where they are equal
  A* h_gradient;          // width per cell: h's whole gradient (with a projection only)
  A* h0;                  // [sequence][width]
  A* c0;                  // [sequence][hidden]

  // The step before `t` in this direction's order; `first`: t is the first step.
  __device__ bool First(int64_t t, int64_t steps) const {
    return reverse ? t == steps - 1 : t == 0;
  }
  __device__ int64_t Previous(int64_t t) const { return reverse ? t + 1 : t - 1; }
  // The state before step t of sequence b.
  __device__ const A* PreviousH(const Table& table, int64_t t, int64_t b) const {
    if (First(t, table.steps)) return h0 + b * width;
    return h + table.Cell(Previous(t), b) * width;
  }
  __device__ const A* PreviousC(const Table& table, int64_t t, int64_t b) const {
    if (First(t, table.steps)) return c0 + b * hidden;
    return c + table.Cell(Previous(t), b) * hidden;
  }
  __device__ A InputWeight(int64_t gate, int64_t j, int64_t i) const {
    return ToAcc<A>(input_matrices[(gate * hidden + j) * input_width + i]);
  }
  __device__ A RecurrentWeight(int64_t gate, int64_t j, int64_t k) const {
    return ToAcc<A>(recurrent_matrices[(gate * hidden + j) * width + k]);
  }
  __device__ A ProjectionWeight(int64_t k, int64_t j) const {
    return ToAcc<A>(projection[k * hidden + j]);
  }
  // o tanh(c) of unit j at a cell: what the projection takes (LSTM).
  __device__ A CellOutput(int64_t cell_index, int64_t j) const {
    return gate_values[cell_index * 4 * hidden + 3 * hidden + j] * tanh(c[cell_index * hidden + j]);
  }
  __device__ A InputBias(int64_t gate, int64_t j) const {
    return input_bias == nullptr ? A{0} : ToAcc<A>(input_bias[gate * hidden + j]);
  }
  __device__ A RecurrentBias(int64_t gate, int64_t j) const {
    return recurrent_bias == nullptr ? A{0} : ToAcc<A>(recurrent_bias[gate * hidden + j]);
  }
};

// The dropout between a layer and the next (training): a mask byte per element of the layer's
// output, [cell][width], kept elements scaled; no dropout where `keep` is null.
template <typename A>
struct DropoutMask {
  const uint8_t* keep;
  A scale;

  __device__ A Apply(int64_t index, A value) const {
    if (keep == nullptr) return value;
    return keep[index] != 0 ? value * scale : A{0};
  }
};

// A layer's input: the data (the first layer) or both directions' h of the layer below, through
// the dropout mask.
template <typename T>
struct LayerInput {
  const T* x;  // rows of `width`
  const Compute<T>* below[2];
  int64_t width, width_below;
  DropoutMask<Compute<T>> dropout;

  __device__ Compute<T> At(const Table& table, int64_t t, int64_t b, int64_t i) const {
    if (x != nullptr) return ToAcc<Compute<T>>(x[table.Row(t, b) * width + i]);
    const int64_t cell = table.Cell(t, b);
    return dropout.Apply(cell * width + i,
                         below[i / width_below][cell * width_below + i % width_below]);
  }
};

// W x + bW and R h' + bR of one gate of hidden unit j.
template <typename T>
__device__ void PreActivations(const PseudoLayer<T>& layer, const LayerInput<T>& input,
                               const Table& table, int64_t t, int64_t b, const Compute<T>* h_prev,
                               int64_t gate, int64_t j, Compute<T>* from_input,
                               Compute<T>* from_state) {
  using A = Compute<T>;
  A in = layer.InputBias(gate, j);
  for (int64_t i = 0; i < layer.input_width; ++i) {
    in += layer.InputWeight(gate, j, i) * input.At(table, t, b, i);
  }
  A rec = layer.RecurrentBias(gate, j);
  for (int64_t k = 0; k < layer.width; ++k) rec += layer.RecurrentWeight(gate, j, k) * h_prev[k];
  *from_input = in;
  *from_state = rec;
}

// Where a forward step writes besides what it keeps: y (the last layer; its columns of this
// direction), and on the last step the final states.
template <typename T>
struct StepOutput {
  T* y;
  int64_t y_width, y_column;
  bool fill_padding;
  Compute<T> padding;
  T* hy;
  T* cy;
};

// h of unit j of sequence b at step t where it goes: the layer's own, y and hy.
template <typename T>
__device__ void WriteHidden(const PseudoLayer<T>& layer, const StepOutput<T>& out,
                            const Table& table, int64_t t, int64_t b, int64_t j, bool active,
                            Compute<T> h) {
  layer.h[table.Cell(t, b) * layer.width + j] = h;
  if (out.y != nullptr && table.Row(t, b) >= 0 && (active || out.fill_padding)) {
    out.y[table.Row(t, b) * out.y_width + out.y_column + j] = FromAcc<T>(active ? h : out.padding);
  }
  if (out.hy != nullptr) out.hy[b * layer.width + j] = FromAcc<T>(h);
}

// The gates, c and (without a projection) h of step t.
template <typename T>
__global__ void ForwardStep(PseudoLayer<T> layer, LayerInput<T> input, Table table, int64_t t,
                            StepOutput<T> out) {
  using A = Compute<T>;
  const int64_t H = layer.hidden;
  const bool projected = layer.projection != nullptr;
  for (int64_t index = FirstIndex(); index < table.batch * H; index += GridStep()) {
    const int64_t b = index / H, j = index % H;
    const int64_t cell = table.Cell(t, b);
    const A* h_prev = layer.PreviousH(table, t, b);
    A h = projected ? A{0} : h_prev[j];  // h_prev is narrower than H with a projection
    A c = layer.cell == RnnCell::kLstm ? layer.PreviousC(table, t, b)[j] : A{0};
    const bool active = table.Active(t, b);
    if (active) {
      A* kept = layer.gate_values + cell * 4 * H;
      A in[4], rec[4];
      for (int64_t g = 0; g < layer.gates; ++g) {
        PreActivations(layer, input, table, t, b, h_prev, g, j, &in[g], &rec[g]);
      }
      switch (layer.cell) {
        case RnnCell::kRelu:
          h = max(in[0] + rec[0], A{0});
          break;
        case RnnCell::kTanh:
          h = tanh(in[0] + rec[0]);
          break;
        case RnnCell::kLstm: {
          const A i = Sigmoid(in[0] + rec[0]), f = Sigmoid(in[1] + rec[1]);
          const A g = tanh(in[2] + rec[2]), o = Sigmoid(in[3] + rec[3]);
          c = f * c + i * g;
          h = o * tanh(c);
          kept[j] = i, kept[H + j] = f, kept[2 * H + j] = g, kept[3 * H + j] = o;
          break;
        }
        case RnnCell::kGru: {
          const A r = Sigmoid(in[0] + rec[0]), z = Sigmoid(in[1] + rec[1]);
          const A n = tanh(in[2] + r * rec[2]);
          h = (A{1} - z) * n + z * h;
          kept[j] = r, kept[H + j] = z, kept[2 * H + j] = n, kept[3 * H + j] = rec[2];
          break;
        }
      }
    }
    if (layer.cell == RnnCell::kLstm) layer.c[cell * H + j] = c;
    if (out.cy != nullptr) out.cy[b * H + j] = FromAcc<T>(c);
    if (!projected) WriteHidden(layer, out, table, t, b, j, active, h);
  }
}

// h = W_r (o tanh(c)) of step t, after ForwardStep (LSTM with a recurrent projection).
template <typename T>
__global__ void ProjectStep(PseudoLayer<T> layer, Table table, int64_t t, StepOutput<T> out) {
  using A = Compute<T>;
  const int64_t W = layer.width;
  for (int64_t index = FirstIndex(); index < table.batch * W; index += GridStep()) {
    const int64_t b = index / W, k = index % W;
    const bool active = table.Active(t, b);
    A h = layer.PreviousH(table, t, b)[k];
    if (active) {
      const int64_t cell = table.Cell(t, b);
      h = A{0};
      for (int64_t j = 0; j < layer.hidden; ++j) {
        h += layer.ProjectionWeight(k, j) * layer.CellOutput(cell, j);
      }
    }
    WriteHidden(layer, out, table, t, b, k, active, h);
  }
}

// A step's output gradient: dy's columns of this direction (the last layer), or the gradient
// of the layer above's input.
template <typename T>
struct OutputGradient {
  const T* dy;              // rows of `width`
  const Compute<T>* above;  // [cell][width]
  int64_t width, column;

  __device__ Compute<T> At(const Table& table, int64_t t, int64_t b, int64_t j) const {
    if (dy != nullptr) return ToAcc<Compute<T>>(dy[table.Row(t, b) * width + column + j]);
    return above[table.Cell(t, b) * width + column + j];
  }
};

// The running gradients of one direction's backward pass, [sequence][width] (dh, dh_direct) or
// [sequence][hidden]: dh and dc of the state after the step, dh's part that does not go through
// R (GRU's z h'), and with a projection the gradient of o tanh(c) at the step.
template <typename A>
struct StateGradients {
  A* dh;
  A* dh_direct;
  A* dc;
  A* d_cell_output;
};

// The gradient of o tanh(c) at step t through the projection, and h's whole gradient there kept
// for the projection's weights (LSTM with a recurrent projection, before BackwardPointwise).
template <typename T>
__global__ void BackwardProjection(PseudoLayer<T> layer, OutputGradient<T> dy, Table table,
                                   int64_t t, StateGradients<Compute<T>> state) {
  using A = Compute<T>;
  const int64_t H = layer.hidden, W = layer.width;
  for (int64_t index = FirstIndex(); index < table.batch * H; index += GridStep()) {
    const int64_t b = index / H, j = index % H;
    if (!table.Active(t, b)) continue;  // BackwardPointwise passes dh on
    A sum = A{0};
    for (int64_t k = 0; k < W; ++k) {
      sum += layer.ProjectionWeight(k, j) * (state.dh[b * W + k] + dy.At(table, t, b, k));
    }
    state.d_cell_output[index] = sum;
    if (j < W) {
      layer.h_gradient[table.Cell(t, b) * W + j] = state.dh[b * W + j] + dy.At(table, t, b, j);
    }
  }
}

// The pre-activation gradients of step t (kept for the weights' gradients), the cell's
// gradient carried back, and dh's direct part.
template <typename T>
__global__ void BackwardPointwise(PseudoLayer<T> layer, OutputGradient<T> dy, Table table,
                                  int64_t t, StateGradients<Compute<T>> state) {
  using A = Compute<T>;
  const int64_t H = layer.hidden, W = layer.width;
  for (int64_t index = FirstIndex(); index < table.batch * H; index += GridStep()) {
    const int64_t b = index / H, j = index % H;
    const int64_t cell = table.Cell(t, b);
    A* d_in = layer.input_gradient + cell * layer.gates * H;
    A* d_rec = layer.recurrent_gradient + cell * layer.gates * H;
    if (!table.Active(t, b)) {  // the state passed through unchanged
      for (int64_t g = 0; g < layer.gates; ++g) d_in[g * H + j] = d_rec[g * H + j] = A{0};
      if (j < W) state.dh_direct[b * W + j] = state.dh[b * W + j];
      continue;
    }
    // The gradient of the cell's output: h's, or o tanh(c)'s with a projection (W is then H).
    const A dh = layer.projection != nullptr ? state.d_cell_output[index]
                                             : state.dh[index] + dy.At(table, t, b, j);
    const A* kept = layer.gate_values + cell * 4 * H;
    A direct = A{0};
    switch (layer.cell) {
      case RnnCell::kRelu:
        d_in[j] = layer.h[cell * H + j] > A{0} ? dh : A{0};
        break;
      case RnnCell::kTanh: {
        const A h = layer.h[cell * H + j];
        d_in[j] = dh * (A{1} - h * h);
        break;
      }
      case RnnCell::kLstm: {
        const A i = kept[j], f = kept[H + j], g = kept[2 * H + j], o = kept[3 * H + j];
        const A tc = tanh(layer.c[cell * H + j]);
        const A dc = state.dc[index] + dh * o * (A{1} - tc * tc);
        const A c_prev = layer.PreviousC(table, t, b)[j];
        d_in[j] = dc * g * i * (A{1} - i);
        d_in[H + j] = dc * c_prev * f * (A{1} - f);
        d_in[2 * H + j] = dc * i * (A{1} - g * g);
        d_in[3 * H + j] = dh * tc * o * (A{1} - o);
        state.dc[index] = dc * f;
        break;
      }
      case RnnCell::kGru: {
        const A r = kept[j], z = kept[H + j], n = kept[2 * H + j], rec_n = kept[3 * H + j];
        const A h_prev = layer.PreviousH(table, t, b)[j];
        const A dn = dh * (A{1} - z) * (A{1} - n * n);
        const A dr = dn * rec_n * r * (A{1} - r);
        const A dz = dh * (h_prev - n) * z * (A{1} - z);
        d_in[j] = d_rec[j] = dr;
        d_in[H + j] = d_rec[H + j] = dz;
        d_in[2 * H + j] = dn;
        d_rec[2 * H + j] = dn * r;
        direct = dh * z;
        break;
      }
    }
    if (j < W) state.dh_direct[b * W + j] = direct;
  }
}

// dh of the previous step: the direct part plus R^T times the recurrent pre-activations'
// gradients.
template <typename T>
__global__ void BackwardRecurrent(PseudoLayer<T> layer, Table table, int64_t t,
                                  StateGradients<Compute<T>> state) {
  using A = Compute<T>;
  const int64_t H = layer.hidden, W = layer.width;
  for (int64_t index = FirstIndex(); index < table.batch * W; index += GridStep()) {
    const int64_t b = index / W, k = index % W;
    const A* d_rec = layer.recurrent_gradient + table.Cell(t, b) * layer.gates * H;
    A sum = state.dh_direct[index];
    for (int64_t g = 0; g < layer.gates; ++g) {
      for (int64_t j = 0; j < H; ++j) sum += d_rec[g * H + j] * layer.RecurrentWeight(g, j, k);
    }
    state.dh[index] = sum;
  }
}

// The gradient of a layer's input: the data's (dx, its rows of valid steps) or the layer below's
// output (every cell, zero past a sequence's end, through the dropout mask), summed over both
// directions.
template <typename T>
struct InputGradientTarget {
  T* dx;
  Compute<T>* below;  // [cell][width]
  DropoutMask<Compute<T>> dropout;
};

template <typename T>
__global__ void InputGradient(PseudoLayer<T> forward, PseudoLayer<T> backward, int64_t directions,
                              Table table, InputGradientTarget<T> target) {
  using A = Compute<T>;
  const int64_t width = forward.input_width, H = forward.hidden;
  const int64_t total = table.steps * table.batch * width;
  for (int64_t index = FirstIndex(); index < total; index += GridStep()) {
    const int64_t cell = index / width, i = index % width;
    const int64_t t = cell / table.batch, b = cell % table.batch;
    const bool active = table.Active(t, b);
    A sum = A{0};
    for (int64_t d = 0; active && d < directions; ++d) {
      const PseudoLayer<T>& layer = d == 0 ? forward : backward;
      const A* d_in = layer.input_gradient + cell * layer.gates * H;
      for (int64_t g = 0; g < layer.gates; ++g) {
        for (int64_t j = 0; j < H; ++j) sum += d_in[g * H + j] * layer.InputWeight(g, j, i);
      }
    }
    if (target.dx == nullptr) {
      target.below[index] = target.dropout.Apply(index, sum);
    } else if (active) {
      target.dx[table.Row(t, b) * width + i] = FromAcc<T>(sum);
    }
  }
}

// Each weight of a pseudo-layer's gradient: its product terms summed over the valid steps.
template <typename T>
__global__ void WeightGradient(PseudoLayer<T> layer, LayerInput<T> input, Table table,
                               int64_t total, T* dw, bool add) {
  using A = Compute<T>;
  const int64_t H = layer.hidden, G = layer.gates, W = layer.width;
  // The pseudo-layer's weights in the weight space's order, and each one's columns.
  enum Kind { kInputMatrix, kRecurrentMatrix, kInputBias, kRecurrentBias, kProjection };
  const int64_t sizes[] = {
      G * H * layer.input_width, G * H * W, layer.input_bias != nullptr ? G * H : 0,
      layer.recurrent_bias != nullptr ? G * H : 0, layer.projection != nullptr ? W * H : 0};
  const int64_t columns[] = {layer.input_width, W, 1, 1, H};
  for (int64_t index = FirstIndex(); index < total; index += GridStep()) {
    // Which weight: the row ((gate, unit), or the projection's unit) and the column.
    int64_t e = index;
    int kind = kInputMatrix;
    while (e >= sizes[kind]) e -= sizes[kind++];
    const int64_t row = e / columns[kind], column = e % columns[kind];
    A sum = A{0};
    for (int64_t t = 0; t < table.steps; ++t) {
      for (int64_t b = 0; b < table.batch; ++b) {
        if (!table.Active(t, b)) continue;
        const int64_t cell = table.Cell(t, b);
        const A d_in = layer.input_gradient[cell * G * H + row];
        const A d_rec = layer.recurrent_gradient[cell * G * H + row];
        switch (kind) {
          case kInputMatrix:
            sum += d_in * input.At(table, t, b, column);
            break;
          case kRecurrentMatrix:
            sum += d_rec * layer.PreviousH(table, t, b)[column];
            break;
          case kInputBias:
            sum += d_in;
            break;
          case kRecurrentBias:
            sum += d_rec;
            break;
          case kProjection:
            sum += layer.h_gradient[cell * W + row] * layer.CellOutput(cell, column);
            break;
        }
      }
    }
    if (add) sum += ToAcc<A>(dw[index]);
    dw[index] = FromAcc<T>(sum);
  }
}

// An initial state (or its gradient) in the computation's type: `from`, or zeros for null.
template <typename T>
__global__ void LoadState(const T* from, Compute<T>* to, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStep()) {
    to[i] = from == nullptr ? Compute<T>{0} : ToAcc<Compute<T>>(from[i]);
  }
}
template <typename T>
__global__ void StoreState(const Compute<T>* from, T* to, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStep()) to[i] = FromAcc<T>(from[i]);
}

// Carves a call's spaces (rnn_kernels.h, SpacesOf) into the pieces the kernels take.
template <typename T>
class Plan {
 public:
  using A = Compute<T>;

  Plan(const RnnProblem& problem, const RnnSpacePointers& spaces)
      : problem_(problem),
        weights_(static_cast<const T*>(spaces.weights)),
        dropout_masks_(spaces.dropout_masks) {
    const RnnSpaces sizes = SpacesOf(problem, sizeof(A));
    char* work = static_cast<char*>(spaces.workspace);
    table_ = Take<int64_t>(&work, SequenceTableEntries(problem));
    const size_t states = problem.PseudoLayers() * problem.batch * problem.hidden;
    h0_ = Take<A>(&work, states);
    c0_ = Take<A>(&work, states);
    below_ = Take<A>(&work, problem.steps * problem.batch * problem.InputWidth(1));
    const size_t state = problem.batch * problem.hidden;
    gradients_ = {Take<A>(&work, state), Take<A>(&work, state), Take<A>(&work, state),
                  Take<A>(&work, state)};
    kept_ = static_cast<char*>(spaces.kept);
    gradients_kept_ = kept_ + sizes.forward_kept;
  }

  // Copies the sequences' table into the workspace.
  cudaError_t LoadTable(const RnnSequences& sequences, cudaStream_t stream) const {
    return cudaMemcpyAsync(table_, sequences.table,
                           SequenceTableEntries(problem_) * sizeof(int64_t), cudaMemcpyHostToDevice,
                           stream);
  }
  Table SequenceTable() const { return {table_, problem_.steps, problem_.batch}; }

  PseudoLayer<T> Layer(int64_t p, const T* weights) const {
    const RnnProblem& n = problem_;
    const int64_t layer = p / n.directions, H = n.hidden, G = n.Gates(), W = n.projection;
    const T* base = weights + n.PseudoLayerOffset(p);
    const int64_t cells = n.steps * n.batch;
    A* kept = reinterpret_cast<A*>(kept_) + p * cells * n.ForwardKeptPerStep();
    A* gradients = reinterpret_cast<A*>(gradients_kept_) + p * cells * n.GradientsKeptPerStep();
    const bool lstm = n.cell == RnnCell::kLstm;
    PseudoLayer<T> out{};
    out.cell = n.cell;
    out.hidden = H;
    out.gates = G;
    out.input_width = n.InputWidth(layer);
    out.width = W;
    out.reverse = p % n.directions == 1;
    out.input_matrices = base;
    out.recurrent_matrices = base + n.RecurrentMatricesOffset(layer);
    out.input_bias = n.input_bias ? base + n.InputBiasesOffset(layer) : nullptr;
    out.recurrent_bias = n.recurrent_bias ? base + n.RecurrentBiasesOffset(layer) : nullptr;
    out.projection = n.Projected() ? base + n.ProjectionOffset(layer) : nullptr;
    out.h = kept;
    out.c = lstm ? kept + cells * W : nullptr;
    out.gate_values = kept + cells * (W + (lstm ? H : 0));
    const int64_t pre_activations = cells * G * H;
    out.input_gradient = gradients;
    out.recurrent_gradient =
        n.SeparateRecurrentGradient() ? gradients + pre_activations : gradients;
    out.h_gradient = gradients + pre_activations * (n.SeparateRecurrentGradient() ? 2 : 1);
    out.h0 = h0_ + p * n.batch * W;
    out.c0 = c0_ + p * n.batch * H;
    return out;
  }
  PseudoLayer<T> Layer(int64_t p) const { return Layer(p, weights_); }

  // Layer l's input: x, or the h the layer below keeps (through its dropout mask).
  LayerInput<T> Input(int64_t layer, const void* x) const {
    if (layer == 0) {
      return {static_cast<const T*>(x), {nullptr, nullptr}, problem_.input_size, 1, {}};
    }
    const int64_t below = (layer - 1) * problem_.directions;
    return {nullptr,
            {Layer(below).h, Layer(below + problem_.directions - 1).h},
            problem_.InputWidth(layer),
            problem_.projection,
            Dropout(layer - 1)};
  }

  // The dropout mask of layer l's output (none without masks, for the last layer, or for the
  // data: layer -1).
  DropoutMask<A> Dropout(int64_t layer) const {
    if (dropout_masks_ == nullptr || layer < 0 || layer >= problem_.layers - 1) {
      return {nullptr, A{1}};
    }
    const int64_t per_layer = problem_.steps * problem_.batch * problem_.InputWidth(1);
    return {dropout_masks_ + layer * per_layer, static_cast<A>(KeptScale(problem_.dropout))};
  }
  uint8_t* DropoutMasks() const { return dropout_masks_; }

  // Loads the initial states of every pseudo-layer.
  cudaError_t LoadInitialStates(const void* hx, const void* cx, cudaStream_t stream) const {
    const int64_t h = problem_.PseudoLayers() * HiddenElements();
    cudaError_t error = LaunchKernel(LoadState<T>, BlocksFor(h), kThreads, stream,
                                     static_cast<const T*>(hx), h0_, h);
    if (error != cudaSuccess || problem_.cell != RnnCell::kLstm) return error;
    const int64_t c = problem_.PseudoLayers() * CellElements();
    return LaunchKernel(LoadState<T>, BlocksFor(c), kThreads, stream, static_cast<const T*>(cx),
                        c0_, c);
  }

  StateGradients<A> Gradients() const { return gradients_; }
  A* Below() const { return below_; }
  // One pseudo-layer's h (or c) for the batch, in elements.
  int64_t HiddenElements() const { return problem_.batch * problem_.projection; }
  int64_t CellElements() const { return problem_.batch * problem_.hidden; }

 private:
  template <typename U>
  static U* Take(char** cursor, size_t count) {
    U* piece = reinterpret_cast<U*>(*cursor);
    *cursor += RoundUp(count * sizeof(U));
    return piece;
  }

  const RnnProblem& problem_;
  const T* weights_;
  uint8_t* dropout_masks_;
  int64_t* table_;
  A* h0_;
  A* c0_;
  A* below_;
  StateGradients<A> gradients_;
  char* kept_;
  char* gradients_kept_;
};

// The step of this direction's order `s` from its start.
int64_t StepAt(bool reverse, int64_t s, int64_t steps) { return reverse ? steps - 1 - s : s; }

// Runs `launch` for each call and stops at the first error.
#define TALLY_RNN_TRY(call)                             \
  do {                                                  \
    const cudaError_t tally_error = (call);             \
    if (tally_error != cudaSuccess) return tally_error; \
  } while (0)

template <typename T>
cudaError_t Forward(const RnnProblem& problem, const RnnForwardCall& call, cudaStream_t stream) {
  const Plan<T> plan(problem, call.spaces);
  TALLY_RNN_TRY(plan.LoadTable(call.data, stream));
  TALLY_RNN_TRY(plan.LoadInitialStates(call.hx, call.cx, stream));
  if (plan.DropoutMasks() != nullptr) {
    TALLY_RNN_TRY(LaunchDropoutMask(call.dropout_states, problem.dropout, plan.DropoutMasks(),
                                    problem.DropoutMaskElements(), stream));
  }
  const int64_t hidden = plan.HiddenElements(), cells = plan.CellElements();
  for (int64_t p = 0; p < problem.PseudoLayers(); ++p) {
    const int64_t layer = p / problem.directions;
    const PseudoLayer<T> pseudo = plan.Layer(p);
    const LayerInput<T> input = plan.Input(layer, call.data.x);
    const bool top = layer == problem.layers - 1;
    StepOutput<T> out{top ? static_cast<T*>(call.data.y) : nullptr,
                      problem.directions * problem.projection,
                      (p % problem.directions) * problem.projection,
                      call.data.fill_padding,
                      static_cast<Compute<T>>(call.data.padding),
                      nullptr,
                      nullptr};
    for (int64_t s = 0; s < problem.steps; ++s) {
      if (s == problem.steps - 1) {
        out.hy = call.hy == nullptr ? nullptr : static_cast<T*>(call.hy) + p * hidden;
        out.cy = call.cy == nullptr ? nullptr : static_cast<T*>(call.cy) + p * cells;
      }
      const int64_t t = StepAt(pseudo.reverse, s, problem.steps);
      TALLY_RNN_TRY(LaunchKernel(ForwardStep<T>, BlocksFor(cells), kThreads, stream, pseudo, input,
                                 plan.SequenceTable(), t, out));
      if (problem.Projected()) {
        TALLY_RNN_TRY(LaunchKernel(ProjectStep<T>, BlocksFor(hidden), kThreads, stream, pseudo,
                                   plan.SequenceTable(), t, out));
      }
    }
  }
  return cudaSuccess;
}

// One direction of one layer backward, from its last step to its first.
template <typename T>
cudaError_t BackwardDirection(const RnnProblem& problem, const Plan<T>& plan, int64_t p,
                              const RnnBackwardDataCall& call, cudaStream_t stream) {
  using A = Compute<T>;
  const int64_t hidden = plan.HiddenElements(), cells = plan.CellElements();
  const StateGradients<A> state = plan.Gradients();
  const auto* dhy = static_cast<const T*>(call.dhy);
  const auto* dcy = static_cast<const T*>(call.dcy);
  TALLY_RNN_TRY(LaunchKernel(LoadState<T>, BlocksFor(hidden), kThreads, stream,
                             dhy == nullptr ? nullptr : dhy + p * hidden, state.dh, hidden));
  TALLY_RNN_TRY(LaunchKernel(LoadState<T>, BlocksFor(cells), kThreads, stream,
                             dcy == nullptr ? nullptr : dcy + p * cells, state.dc, cells));
  const PseudoLayer<T> pseudo = plan.Layer(p);
  const bool top = p / problem.directions == problem.layers - 1;
  const OutputGradient<T> dy{top ? static_cast<const T*>(call.data.x) : nullptr,
                             top ? nullptr : plan.Below(), problem.InputWidth(1),
                             (p % problem.directions) * problem.projection};
  for (int64_t s = problem.steps - 1; s >= 0; --s) {
    const int64_t t = StepAt(pseudo.reverse, s, problem.steps);
    if (problem.Projected()) {
      TALLY_RNN_TRY(LaunchKernel(BackwardProjection<T>, BlocksFor(cells), kThreads, stream, pseudo,
                                 dy, plan.SequenceTable(), t, state));
    }
    TALLY_RNN_TRY(LaunchKernel(BackwardPointwise<T>, BlocksFor(cells), kThreads, stream, pseudo, dy,
                               plan.SequenceTable(), t, state));
    TALLY_RNN_TRY(LaunchKernel(BackwardRecurrent<T>, BlocksFor(hidden), kThreads, stream, pseudo,
                               plan.SequenceTable(), t, state));
  }
  if (call.dhx != nullptr) {
    TALLY_RNN_TRY(LaunchKernel(StoreState<T>, BlocksFor(hidden), kThreads, stream, state.dh,
                               static_cast<T*>(call.dhx) + p * hidden, hidden));
  }
  if (call.dcx != nullptr && problem.cell == RnnCell::kLstm) {
    TALLY_RNN_TRY(LaunchKernel(StoreState<T>, BlocksFor(cells), kThreads, stream, state.dc,
                               static_cast<T*>(call.dcx) + p * cells, cells));
  }
  return cudaSuccess;
}

template <typename T>
cudaError_t BackwardData(const RnnProblem& problem, const RnnBackwardDataCall& call,
                         cudaStream_t stream) {
  const Plan<T> plan(problem, call.spaces);
  TALLY_RNN_TRY(plan.LoadTable(call.data, stream));
  TALLY_RNN_TRY(plan.LoadInitialStates(call.hx, call.cx, stream));
  for (int64_t layer = problem.layers - 1; layer >= 0; --layer) {
    const int64_t first = layer * problem.directions;
    for (int64_t d = 0; d < problem.directions; ++d) {
      TALLY_RNN_TRY(BackwardDirection(problem, plan, first + d, call, stream));
    }
    const InputGradientTarget<T> target{layer == 0 ? static_cast<T*>(call.data.y) : nullptr,
                                        plan.Below(), plan.Dropout(layer - 1)};
    const int64_t total = problem.steps * problem.batch * problem.InputWidth(layer);
    TALLY_RNN_TRY(LaunchKernel(InputGradient<T>, BlocksFor(total), kThreads, stream,
                               plan.Layer(first), plan.Layer(first + problem.directions - 1),
                               problem.directions, plan.SequenceTable(), target));
  }
  return cudaSuccess;
}

template <typename T>
cudaError_t BackwardWeights(const RnnProblem& problem, const RnnBackwardWeightsCall& call,
                            cudaStream_t stream) {
  const Plan<T> plan(problem, call.spaces);
  TALLY_RNN_TRY(plan.LoadTable(call.data, stream));
  TALLY_RNN_TRY(plan.LoadInitialStates(call.hx, nullptr, stream));
  auto* dw = static_cast<T*>(call.d_weights);
  for (int64_t p = 0; p < problem.PseudoLayers(); ++p) {
    const int64_t layer = p / problem.directions;
    const int64_t total = problem.PseudoLayerElements(layer);
    // The layer's biases are addressed in the gradients' space, as its matrices.
    const PseudoLayer<T> pseudo = plan.Layer(p, dw);
    TALLY_RNN_TRY(LaunchKernel(WeightGradient<T>, BlocksFor(total), kThreads, stream, pseudo,
                               plan.Input(layer, call.data.x), plan.SequenceTable(), total,
                               dw + problem.PseudoLayerOffset(p), call.add));
  }
  return cudaSuccess;
}

#undef TALLY_RNN_TRY

}  // namespace

cudaError_t LaunchRnnForward(const RnnProblem& problem, const RnnForwardCall& call,
                             cudaStream_t stream) {
  return WithElementType(problem.type,
                         [&](auto tag) { return Forward<decltype(tag)>(problem, call, stream); });
}

cudaError_t LaunchRnnBackwardData(const RnnProblem& problem, const RnnBackwardDataCall& call,
                                  cudaStream_t stream) {
  return WithElementType(
      problem.type, [&](auto tag) { return BackwardData<decltype(tag)>(problem, call, stream); });
}

cudaError_t LaunchRnnBackwardWeights(const RnnProblem& problem, const RnnBackwardWeightsCall& call,
                                     cudaStream_t stream) {
  return WithElementType(problem.type, [&](auto tag) {
    return BackwardWeights<decltype(tag)>(problem, call, stream);
  });
}

}  // namespace tally::libraries::kernels
