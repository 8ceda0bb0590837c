// cuDNN's backend (graph) API through Tally: an unmodified program linked with -lcudnn builds
// operation graphs the way NVIDIA's cudnn-frontend (which PyTorch uses for its convolutions) does,
// descriptor by descriptor: tensors, a convolution descriptor, operations, the operation graph,
// engine heuristics (the count queried first, then configs filled into created descriptors, those
// with unsuitable numerical notes skipped as PyTorch skips them), an execution plan per config
// until one finalizes (its engine, knob choices, notes and workspace read back as the frontend
// reads them), a variant pack, and cudnnBackendExecute. Each result is compared with a CPU
// reference in double. Graphs: convolution forward in f32 (NCHW; channels-last strides with stride
// 2 and alpha/beta blending; dilation 2), f16 with f32 compute, and one plan executed twice on
// other buffers; backward data and backward filter (each convolution's graph destroyed before its
// plan runs, as PyTorch caches only plans); 3-D convolutions of 5-D tensors in every direction
// (NCDHW and NDHWC, groups, convolution mode; f32, bf16 and f16); the fused convolution, bias and
// ReLU through virtual tensors; pointwise-only graphs (bias and ReLU, MUL, SUB, TANH, SIGMOID). An
// output computed with beta = 0 starts as NaN (cuDNN must not read it). Then attributes read back
// from finalized descriptors, and the documented statuses for bad input (convolutions of tensors
// of the wrong rank or size among them), checked by category. Prints "CUDNN GRAPHS OK" when all
// passed.
#include <cuda_fp16.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dnn_check.h"

namespace {

// ---- Failures ----

// cuDNN 9's statuses by category (IsBadParam and IsNotSupported in dnn_check.h).
bool IsNotInitialized(cudnnStatus_t status) {
  return InCategory(status, CUDNN_STATUS_NOT_INITIALIZED);
}
// Setting an attribute of a finalized descriptor, reading one of a descriptor not finalized: the
// documentation says NOT_INITIALIZED; cuDNN 9 also has BAD_PARAM_NOT_FINALIZED for the latter.
bool IsWrongState(cudnnStatus_t status) { return IsNotInitialized(status) || IsBadParam(status); }

// The call returned a status of the category `predicate` accepts.
#define EXPECT_STATUS(call, predicate)                                                     \
  do {                                                                                     \
    const cudnnStatus_t status_ = (call);                                                  \
    if (!predicate(status_)) {                                                             \
      Fail(std::string("line ") + std::to_string(__LINE__) + ": " + #call + " returned " + \
           cudnnGetErrorString(status_) + " (" + std::to_string(status_) + "), not " +     \
           #predicate);                                                                    \
    }                                                                                      \
  } while (0)

#define EXPECT_EQ(got, want)                                                        \
  do {                                                                              \
    const auto got_ = (got);                                                        \
    const auto want_ = (want);                                                      \
    if (!(got_ == want_)) {                                                         \
      Fail(std::string("line ") + std::to_string(__LINE__) + ": " + #got + " is " + \
           std::to_string(static_cast<long long>(got_)) + ", not " +                \
           std::to_string(static_cast<long long>(want_)));                          \
    }                                                                               \
  } while (0)

// ---- Backend descriptors ----

// An attribute and its name, for failure messages.
struct Attribute {
  cudnnBackendAttributeName_t name;
  const char* text;
};
#define ATTR(name) (Attribute{name, #name})

// The size of one element of each attribute type this program sets or reads.
size_t ElementSize(cudnnBackendAttributeType_t type) {
  switch (type) {
    case CUDNN_TYPE_BOOLEAN:
      return sizeof(bool);
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE:
      return 8;
    case CUDNN_TYPE_FLOAT:
      return sizeof(float);
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
      return sizeof(void*);
    default:  // the enumerations: data type, modes, notes, knob type
      return sizeof(int);
  }
}

template <typename T>
void CheckElementSize(Attribute attr, cudnnBackendAttributeType_t type) {
  if (sizeof(T) != ElementSize(type)) {
    Fail(std::string("program error: ") + attr.text + " given elements of " +
         std::to_string(sizeof(T)) + " bytes for attribute type " + std::to_string(type));
  }
}

// Owns one backend descriptor: created at construction, destroyed with the object.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type) {
    CheckStatus(cudnnBackendCreateDescriptor(type, &desc_),
                "cudnnBackendCreateDescriptor(type " + std::to_string(type) + ")");
  }
  ~Descriptor() {
    if (desc_ != nullptr) CheckStatus(cudnnBackendDestroyDescriptor(desc_), "DestroyDescriptor");
  }
  Descriptor(Descriptor&& other) noexcept : desc_(std::exchange(other.desc_, nullptr)) {}
  Descriptor& operator=(Descriptor&& other) noexcept {
    std::swap(desc_, other.desc_);
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }

  template <typename T>
  Descriptor& SetArray(Attribute attr, cudnnBackendAttributeType_t type, const T* values,
                       int64_t count) {
    CheckElementSize<T>(attr, type);
    CheckStatus(cudnnBackendSetAttribute(desc_, attr.name, type, count, values),
                std::string("SetAttribute ") + attr.text);
    return *this;
  }
  template <typename Container>
  Descriptor& SetArray(Attribute attr, cudnnBackendAttributeType_t type, const Container& values) {
    return SetArray(attr, type, values.data(), static_cast<int64_t>(values.size()));
  }
  template <typename T>
  Descriptor& Set(Attribute attr, cudnnBackendAttributeType_t type, const T& value) {
    return SetArray(attr, type, &value, 1);
  }
  Descriptor& Finalize() {
    CheckStatus(cudnnBackendFinalize(desc_), "Finalize");
    return *this;
  }

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};

// Up to `capacity` elements of an attribute, as many as it has.
template <typename T>
std::vector<T> GetArray(cudnnBackendDescriptor_t desc, Attribute attr,
                        cudnnBackendAttributeType_t type, int64_t capacity) {
  CheckElementSize<T>(attr, type);
  std::vector<T> values(static_cast<size_t>(capacity));
  int64_t count = -1;
  CheckStatus(cudnnBackendGetAttribute(desc, attr.name, type, capacity, &count, values.data()),
              std::string("GetAttribute ") + attr.text);
  if (count < 0) Fail(std::string("GetAttribute ") + attr.text + " gave a negative count");
  values.resize(static_cast<size_t>(std::min(count, capacity)));
  return values;
}

// A single-element attribute.
template <typename T>
T GetOne(cudnnBackendDescriptor_t desc, Attribute attr, cudnnBackendAttributeType_t type) {
  CheckElementSize<T>(attr, type);
  T value{};
  int64_t count = -1;
  CheckStatus(cudnnBackendGetAttribute(desc, attr.name, type, 1, &count, &value),
              std::string("GetAttribute ") + attr.text);
  if (count != 1) Fail(std::string("GetAttribute ") + attr.text + ": " + std::to_string(count));
  return value;
}

// ---- Graphs ----

const int64_t kAlignment = 16;  // what cudnn-frontend and PyTorch give cudaMalloc'd buffers

// Unique ids: PyTorch's for a convolution's tensors, others for a bias and virtual tensors.
const int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y', kUidB = 'b';
const int64_t kUidVirtual1 = 1001, kUidVirtual2 = 1002;

// The three tensors of a convolution: x (dx), w (dw), y (dy).
enum Role { kX, kW, kY };
const int64_t kConvUids[3] = {kUidX, kUidW, kUidY};

// One convolution direction's operation descriptor: its tensors' attributes in the order the
// frontend sets them (x or dx, w or dw, y or dy), then the convolution, alpha and beta.
struct ConvDirection {
  const char* name;
  cudnnBackendDescriptorType_t type;
  Attribute tensors[3];
  Attribute conv, alpha, beta;
  Role output;
};

const ConvDirection kForward = {"forward",
                                CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                {ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X),
                                 ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W),
                                 ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y)},
                                ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC),
                                ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA),
                                ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA),
                                kY};
const ConvDirection kBackwardData = {"backward data",
                                     CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                                     {ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX),
                                      ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W),
                                      ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY)},
                                     ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC),
                                     ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA),
                                     ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA),
                                     kX};
const ConvDirection kBackwardFilter = {
    "backward filter",
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
    {ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X),
     ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW),
     ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY)},
    ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC),
    ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA),
    ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA),
    kW};

// The convolutions checked: cross-correlations (PyTorch's mode) of one group.
// clang-format off
//                            n  c  h  w  k  r  s  pad   stride  dilation  groups  mode
const ConvProblem kPlain   = {2, 3, 6, 5, 4, 3, 3, 1, 1, 1, 1,   1, 1,     1,      kCross};
const ConvProblem kStrided = {2, 3, 6, 6, 4, 3, 3, 1, 1, 2, 2,   1, 1,     1,      kCross};
const ConvProblem kDilated = {2, 3, 6, 6, 4, 3, 3, 2, 2, 1, 1,   2, 2,     1,      kCross};
// clang-format on

// A tensor descriptor as cudnn-frontend's TensorBuilder makes one (IS_VIRTUAL set only when true),
// of a 4-D Layout or a 5-D Layout5.
template <typename AnyLayout>
Descriptor MakeTensor(int64_t uid, const AnyLayout& layout, cudnnDataType_t type,
                      bool is_virtual = false) {
  Descriptor tensor(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  tensor.Set(ATTR(CUDNN_ATTR_TENSOR_DATA_TYPE), CUDNN_TYPE_DATA_TYPE, type)
      .SetArray(ATTR(CUDNN_ATTR_TENSOR_DIMENSIONS), CUDNN_TYPE_INT64, layout.Dims())
      .SetArray(ATTR(CUDNN_ATTR_TENSOR_STRIDES), CUDNN_TYPE_INT64, layout.Strides())
      .Set(ATTR(CUDNN_ATTR_TENSOR_UNIQUE_ID), CUDNN_TYPE_INT64, uid)
      .Set(ATTR(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT), CUDNN_TYPE_INT64, kAlignment);
  if (is_virtual) tensor.Set(ATTR(CUDNN_ATTR_TENSOR_IS_VIRTUAL), CUDNN_TYPE_BOOLEAN, true);
  return std::move(tensor.Finalize());
}

// A convolution's padding, stride and dilation, one per spatial dimension.
struct Geometry {
  std::vector<int64_t> pad, stride, dilation;
};
Geometry GeometryOf(const ConvProblem& p) {
  return {{p.pad_h, p.pad_w}, {p.stride_h, p.stride_w}, {p.dilation_h, p.dilation_w}};
}
Geometry GeometryOf(const Conv3dProblem& p) {
  return {{p.pad.begin(), p.pad.end()},
          {p.stride.begin(), p.stride.end()},
          {p.dilation.begin(), p.dilation.end()}};
}

// A convolution descriptor as cudnn-frontend's ConvDescBuilder makes one, of a ConvProblem or a
// Conv3dProblem.
template <typename Problem>
Descriptor MakeConvolution(const Problem& p, cudnnDataType_t compute) {
  const auto [pad, stride, dilation] = GeometryOf(p);
  const int64_t spatial_dims = static_cast<int64_t>(pad.size());
  Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  conv.Set(ATTR(CUDNN_ATTR_CONVOLUTION_COMP_TYPE), CUDNN_TYPE_DATA_TYPE, compute)
      .Set(ATTR(CUDNN_ATTR_CONVOLUTION_CONV_MODE), CUDNN_TYPE_CONVOLUTION_MODE, p.mode)
      .Set(ATTR(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS), CUDNN_TYPE_INT64, spatial_dims)
      .SetArray(ATTR(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS), CUDNN_TYPE_INT64, pad)
      .SetArray(ATTR(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS), CUDNN_TYPE_INT64, pad)
      .SetArray(ATTR(CUDNN_ATTR_CONVOLUTION_DILATIONS), CUDNN_TYPE_INT64, dilation)
      .SetArray(ATTR(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES), CUDNN_TYPE_INT64, stride);
  return std::move(conv.Finalize());
}

// A pointwise descriptor as cudnn-frontend's PointWiseDescBuilder makes one: ReLU gets its NaN
// propagation and clipping (no upper clip: the largest float) as the frontend sets them.
Descriptor MakePointwise(cudnnPointwiseMode_t mode) {
  Descriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw.Set(ATTR(CUDNN_ATTR_POINTWISE_MODE), CUDNN_TYPE_POINTWISE_MODE, mode)
      .Set(ATTR(CUDNN_ATTR_POINTWISE_MATH_PREC), CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  if (mode == CUDNN_POINTWISE_RELU_FWD) {
    const double lower_clip = 0, upper_clip = std::numeric_limits<float>::max(), slope = 0;
    pw.Set(ATTR(CUDNN_ATTR_POINTWISE_NAN_PROPAGATION), CUDNN_TYPE_NAN_PROPOGATION,
           CUDNN_PROPAGATE_NAN)
        .Set(ATTR(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP), CUDNN_TYPE_DOUBLE, lower_clip)
        .Set(ATTR(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP), CUDNN_TYPE_DOUBLE, upper_clip)
        .Set(ATTR(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE), CUDNN_TYPE_DOUBLE, slope);
  }
  return std::move(pw.Finalize());
}

// An operation graph and every descriptor it refers to, kept alive as long as the graph (the
// graph, declared last, is destroyed first).
class OperationGraph {
 public:
  template <typename AnyLayout>
  cudnnBackendDescriptor_t AddTensor(int64_t uid, const AnyLayout& layout, cudnnDataType_t type,
                                     bool is_virtual = false) {
    return Keep(MakeTensor(uid, layout, type, is_virtual));
  }

  // A convolution in `direction` of tensors x, w, y (dx, dw, dy), alpha and beta as floats (the
  // frontend's type for float compute).
  template <typename Problem>
  void AddConvolution(const ConvDirection& direction, const cudnnBackendDescriptor_t tensors[3],
                      const Problem& p, float alpha, float beta) {
    const cudnnBackendDescriptor_t conv = Keep(MakeConvolution(p, CUDNN_DATA_FLOAT));
    Descriptor op(direction.type);
    for (int role : {kX, kW, kY}) {
      op.Set(direction.tensors[role], CUDNN_TYPE_BACKEND_DESCRIPTOR, tensors[role]);
    }
    op.Set(direction.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, conv)
        .Set(direction.alpha, CUDNN_TYPE_FLOAT, alpha)
        .Set(direction.beta, CUDNN_TYPE_FLOAT, beta);
    ops_.push_back(Keep(std::move(op.Finalize())));
  }

  // y = mode(x) or mode(x, b), attributes in the frontend's order, alpha1 = alpha2 = 1.
  void AddPointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                    cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y) {
    const cudnnBackendDescriptor_t pw = Keep(MakePointwise(mode));
    const float one = 1;
    Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.Set(ATTR(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), CUDNN_TYPE_BACKEND_DESCRIPTOR, pw)
        .Set(ATTR(CUDNN_ATTR_OPERATION_POINTWISE_XDESC), CUDNN_TYPE_BACKEND_DESCRIPTOR, x)
        .Set(ATTR(CUDNN_ATTR_OPERATION_POINTWISE_YDESC), CUDNN_TYPE_BACKEND_DESCRIPTOR, y)
        .Set(ATTR(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1), CUDNN_TYPE_FLOAT, one)
        .Set(ATTR(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2), CUDNN_TYPE_FLOAT, one);
    if (b != nullptr) {
      op.Set(ATTR(CUDNN_ATTR_OPERATION_POINTWISE_BDESC), CUDNN_TYPE_BACKEND_DESCRIPTOR, b);
    }
    ops_.push_back(Keep(std::move(op.Finalize())));
  }

  // The operation graph of the operations added, as the frontend's OperationGraphBuilder makes it.
  void Finalize(cudnnHandle_t handle) {
    graph_.emplace(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    graph_->SetArray(ATTR(CUDNN_ATTR_OPERATIONGRAPH_OPS), CUDNN_TYPE_BACKEND_DESCRIPTOR, ops_)
        .Set(ATTR(CUDNN_ATTR_OPERATIONGRAPH_HANDLE), CUDNN_TYPE_HANDLE, handle)
        .Finalize();
  }

  cudnnBackendDescriptor_t get() const { return graph_->get(); }

 private:
  cudnnBackendDescriptor_t Keep(Descriptor descriptor) {
    parts_.push_back(std::move(descriptor));
    return parts_.back().get();
  }

  std::vector<Descriptor> parts_;  // tensors, convolution and pointwise descriptors, operations
  std::vector<cudnnBackendDescriptor_t> ops_;
  std::optional<Descriptor> graph_;
};

// ---- Engines and plans ----

// The engine configs the heuristic in `mode` offers for the graph, best first: the count queried
// first, then as many created (not finalized) configs filled, as cudnn-frontend does.
std::vector<Descriptor> HeuristicConfigs(cudnnBackendDescriptor_t graph,
                                         cudnnBackendHeurMode_t mode) {
  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.Set(ATTR(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH), CUDNN_TYPE_BACKEND_DESCRIPTOR, graph)
      .Set(ATTR(CUDNN_ATTR_ENGINEHEUR_MODE), CUDNN_TYPE_HEUR_MODE, mode)
      .Finalize();
  int64_t count = -1;
  CHECK_CUDNN(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  if (count < 0) Fail("the heuristic's result count is negative");
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  int64_t returned = -1;
  CHECK_CUDNN(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                                       raw.data()));
  if (returned < 0 || returned > count) {
    Fail("the heuristic filled " + std::to_string(returned) + " of " + std::to_string(count) +
         " configs");
  }
  configs.erase(configs.begin() + returned, configs.end());
  return configs;
}

// The engine a config runs, read into a created engine descriptor.
Descriptor EngineOf(cudnnBackendDescriptor_t config) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine.get();
  int64_t count = -1;
  CHECK_CUDNN(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw));
  EXPECT_EQ(count, 1);
  return engine;
}

// An engine's numerical or behavior notes, read as the frontend reads them: the count first (no
// array), then the notes.
template <typename Note>
std::vector<Note> Notes(cudnnBackendDescriptor_t engine, Attribute attr,
                        cudnnBackendAttributeType_t type, int64_t kinds) {
  int64_t count = -1;
  CheckStatus(cudnnBackendGetAttribute(engine, attr.name, type, kinds, &count, nullptr),
              std::string("GetAttribute ") + attr.text + " (count)");
  if (count < 0 || count > kinds) Fail(std::string(attr.text) + ": bad count");
  return GetArray<Note>(engine, attr, type, kinds);
}

std::vector<cudnnBackendNumericalNote_t> NumericalNotes(cudnnBackendDescriptor_t engine) {
  return Notes<cudnnBackendNumericalNote_t>(engine, ATTR(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE),
                                            CUDNN_TYPE_NUMERICAL_NOTE,
                                            CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
}

// PyTorch's filter (allow_tf32 off): no engine that converts its inputs down, and for f32 data
// none on tensor cores (TF32 would miss the f32 tolerance).
bool SuitsPrecision(cudnnBackendDescriptor_t config, cudnnDataType_t io_type) {
  for (cudnnBackendNumericalNote_t note : NumericalNotes(EngineOf(config).get())) {
    if (note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return false;
    if (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && io_type == CUDNN_DATA_FLOAT) return false;
  }
  return true;
}

// A config's knob choices, read as the frontend reads them for a plan's tag: into created knob
// choice descriptors, each knob's type and value then read without an element count.
void ReadKnobChoices(cudnnBackendDescriptor_t config) {
  std::vector<Descriptor> knobs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    knobs.emplace_back(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    raw.push_back(knobs.back().get());
  }
  int64_t count = -1;
  CHECK_CUDNN(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS,
                                       &count, raw.data()));
  if (count < 0 || count > CUDNN_KNOB_TYPE_COUNTS) Fail("bad knob choice count");
  for (int64_t i = 0; i < count; ++i) {
    cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
    int64_t value = -1;
    CHECK_CUDNN(cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                         CUDNN_TYPE_KNOB_TYPE, 1, nullptr, &type));
    CHECK_CUDNN(cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                         CUDNN_TYPE_INT64, 1, nullptr, &value));
    if (type < 0 || type >= CUDNN_KNOB_TYPE_COUNTS) Fail("a knob choice of no known type");
  }
}

// An execution plan with the engine config it runs (kept alive with it), the engine's global
// index and the workspace it needs.
struct Plan {
  Descriptor config;
  Descriptor plan;
  int64_t engine_index;
  int64_t workspace_size;
};

// A plan for the config, as the frontend's ExecutionPlanBuilder makes it, or none where the
// config does not finalize into one.
std::optional<Descriptor> TryPlan(cudnnHandle_t handle, cudnnBackendDescriptor_t config) {
  Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  plan.Set(ATTR(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG), CUDNN_TYPE_BACKEND_DESCRIPTOR, config)
      .Set(ATTR(CUDNN_ATTR_EXECUTION_PLAN_HANDLE), CUDNN_TYPE_HANDLE, handle);
  if (cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) return std::nullopt;
  return std::optional<Descriptor>(std::move(plan));
}

// What the frontend reads of a finalized plan: the engine's global index, the knob choices, the
// numerical and behavior notes, and the workspace size (read without an element count).
Plan InspectPlan(Descriptor config, Descriptor plan) {
  const Descriptor engine = EngineOf(config.get());
  const auto index =
      GetOne<int64_t>(engine.get(), ATTR(CUDNN_ATTR_ENGINE_GLOBAL_INDEX), CUDNN_TYPE_INT64);
  ReadKnobChoices(config.get());
  NumericalNotes(engine.get());
  Notes<cudnnBackendBehaviorNote_t>(engine.get(), ATTR(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE),
                                    CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT);
  int64_t workspace_size = -1;
  CHECK_CUDNN(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                       CUDNN_TYPE_INT64, 1, nullptr, &workspace_size));
  if (workspace_size < 0) Fail("negative workspace size");
  return Plan{std::move(config), std::move(plan), index, workspace_size};
}

// The first plan that finalizes among the configs the heuristics offer (instant mode, then
// fallback), skipping those PyTorch would not use for io_type data.
Plan BuildPlan(cudnnHandle_t handle, const OperationGraph& graph, cudnnDataType_t io_type) {
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_INSTANT, CUDNN_HEUR_MODE_FALLBACK}) {
    for (Descriptor& config : HeuristicConfigs(graph.get(), mode)) {
      if (!SuitsPrecision(config.get(), io_type)) continue;
      std::optional<Descriptor> plan = TryPlan(handle, config.get());
      if (plan) return InspectPlan(std::move(config), std::move(*plan));
    }
  }
  Fail("no engine config the heuristics offer finalizes into a plan");
}

// A tensor's unique id and its device buffer.
struct Binding {
  int64_t uid;
  void* data;
};

// A variant pack as the frontend makes one: workspace, data pointers, unique ids.
Descriptor MakeVariantPack(const std::vector<Binding>& bindings, void* workspace) {
  std::vector<void*> pointers;
  std::vector<int64_t> uids;
  for (const Binding& b : bindings) {
    pointers.push_back(b.data);
    uids.push_back(b.uid);
  }
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.Set(ATTR(CUDNN_ATTR_VARIANT_PACK_WORKSPACE), CUDNN_TYPE_VOID_PTR, workspace)
      .SetArray(ATTR(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS), CUDNN_TYPE_VOID_PTR, pointers)
      .SetArray(ATTR(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS), CUDNN_TYPE_INT64, uids);
  return std::move(pack.Finalize());
}

// Runs the plan on the bindings with the workspace it asks for, on the handle's stream, and waits.
void Execute(cudnnHandle_t handle, const Plan& plan, const std::vector<Binding>& bindings) {
  void* workspace = nullptr;
  if (plan.workspace_size > 0) CHECK_CUDA(cudaMalloc(&workspace, plan.workspace_size));
  const Descriptor pack = MakeVariantPack(bindings, workspace);
  CHECK_CUDNN(cudnnBackendExecute(handle, plan.plan.get(), pack.get()));
  cudaStream_t stream = nullptr;
  CHECK_CUDNN(cudnnGetStream(handle, &stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaFree(workspace));
}

void PrintPassed(const Plan& plan) {
  std::printf("%s: correct (engine %lld, workspace %lld bytes)\n", g_what.c_str(),
              static_cast<long long>(plan.engine_index),
              static_cast<long long>(plan.workspace_size));
}

// ---- Convolutions ----

// A single-convolution graph: its problem (a ConvProblem or a Conv3dProblem), layout (NCHW or
// NHWC; for 3-D, NCDHW or NDHWC), direction, alpha and beta, and how many times its plan runs
// (each time on new buffers, as a cached plan runs).
template <typename Problem>
struct ConvCaseOf {
  const char* name;
  Problem problem;
  cudnnTensorFormat_t format;
  const ConvDirection* direction;
  float alpha, beta;
  int runs;
};
using ConvCase = ConvCaseOf<ConvProblem>;
using Conv3dCase = ConvCaseOf<Conv3dProblem>;

// The layouts of x, w and y of a problem.
template <typename Problem>
using LayoutsOf = decltype(std::declval<Problem>().Layouts(kNCHW));

// One execution of the plan on new buffers made from `seed`: the output starts as Before (NaN
// where beta = 0) and must come out as alpha * sums + beta * before.
template <typename T, typename Problem>
void RunConvolution(cudnnHandle_t handle, const Plan& plan, const ConvCaseOf<Problem>& c,
                    const LayoutsOf<Problem>& layouts, int seed) {
  const Role out = c.direction->output;
  std::array<std::vector<T>, 3> host;
  std::array<std::vector<double>, 3> wide, sums;
  for (int role : {kX, kW, kY}) {
    host[role] = Values<T>(layouts[role].Extent(), seed + role);
    wide[role] = Widen(host[role]);
    sums[role].assign(layouts[role].Extent(), 0);
  }
  ForEachTap(c.problem, layouts[kX], layouts[kW], layouts[kY], [&](size_t x, size_t w, size_t y) {
    sums[kY][y] += wide[kX][x] * wide[kW][w];
    sums[kX][x] += wide[kY][y] * wide[kW][w];
    sums[kW][w] += wide[kX][x] * wide[kY][y];
  });
  host[out] = Before<T>(layouts[out].Extent(), c.beta, seed + 3);
  const DeviceArray<T> x(host[kX]), w(host[kW]), y(host[kY]);
  Execute(handle, plan,
          {{kConvUids[kX], x.get()}, {kConvUids[kW], w.get()}, {kConvUids[kY], y.get()}});
  const DeviceArray<T>* buffers[3] = {&x, &w, &y};
  const char* names[3] = {"x (dx)", "w (dw)", "y"};
  buffers[out]->Expect(Blend(c.alpha, sums[out], c.beta, Widen(host[out])), Element<T>::kTolerance,
                       names[out]);
}

// The plan for the case's graph. The graph and every descriptor in it are destroyed on return,
// before the plan runs: PyTorch keeps only the plan in its cache.
template <typename T, typename Problem>
Plan PlanConvolution(cudnnHandle_t handle, const ConvCaseOf<Problem>& c,
                     const LayoutsOf<Problem>& layouts) {
  OperationGraph graph;
  cudnnBackendDescriptor_t tensors[3];
  for (int role : {kX, kW, kY}) {
    tensors[role] = graph.AddTensor(kConvUids[role], layouts[role], Element<T>::kType);
  }
  graph.AddConvolution(*c.direction, tensors, c.problem, c.alpha, c.beta);
  graph.Finalize(handle);
  return BuildPlan(handle, graph, Element<T>::kType);
}

template <typename T, typename Problem>
void TestConvolution(cudnnHandle_t handle, const ConvCaseOf<Problem>& c) {
  g_what = std::string(Element<T>::kName) + " " + c.name + ", " + c.direction->name;
  const LayoutsOf<Problem> layouts = c.problem.Layouts(c.format);
  const Plan plan = PlanConvolution<T>(handle, c, layouts);
  for (int run = 0; run < c.runs; ++run) RunConvolution<T>(handle, plan, c, layouts, 10 * run);
  PrintPassed(plan);
}

void TestConvolutions(cudnnHandle_t handle) {
  const cudnnTensorFormat_t nchw = kNCHW, nhwc = kNHWC;
  // clang-format off
  const ConvCase f32_cases[] = {
      {"NCHW 3x3 pad 1, one plan run twice", kPlain, nchw, &kForward,        1,   0,   2},
      {"NHWC strides, stride 2, blended",    kStrided, nhwc, &kForward,      1.5, 0.5, 1},
      {"NCHW dilation 2",                    kDilated, nchw, &kForward,      1,   0,   1},
      {"NCHW 3x3 pad 1",                     kPlain, nchw, &kBackwardData,   1,   0,   1},
      {"NHWC strides, stride 2, blended",    kStrided, nhwc, &kBackwardData, 1.5, 0.5, 1},
      {"NCHW 3x3 pad 1, blended",            kPlain, nchw, &kBackwardFilter, 1.5, 0.5, 1},
  };
  // clang-format on
  for (const ConvCase& c : f32_cases) TestConvolution<float>(handle, c);
  TestConvolution<__half>(
      handle, ConvCase{"NCHW 3x3 pad 1, f32 compute", kPlain, nchw, &kForward, 1, 0, 1});
}

// 3-D convolutions (5-D tensors), as PyTorch's nn.Conv3d runs them by default.
void TestConvolutions3d(cudnnHandle_t handle) {
  const cudnnTensorFormat_t ncdhw = kNCHW, ndhwc = kNHWC;
  // clang-format off
  const Conv3dCase f32_cases[] = {
      {"3-D NCDHW, one plan run twice",            kDeep, ncdhw, &kForward,            1,   0,   2},
      {"3-D NDHWC 2 groups, convolution, blended", kDeepFlip, ndhwc, &kForward,        1.5, 0.5, 1},
      {"3-D NCDHW",                                kDeep, ncdhw, &kBackwardData,       1,   0,   1},
      {"3-D NDHWC 2 groups, convolution",          kDeepFlip, ndhwc, &kBackwardData,   1,   0,   1},
      {"3-D NCDHW, blended",                       kDeep, ncdhw, &kBackwardFilter,     1.5, 0.5, 1},
      {"3-D NDHWC 2 groups, convolution",          kDeepFlip, ndhwc, &kBackwardFilter, 1,   0,   1},
  };
  // clang-format on
  for (const Conv3dCase& c : f32_cases) TestConvolution<float>(handle, c);
  TestConvolution<__nv_bfloat16>(handle, Conv3dCase{"3-D NDHWC", kDeep, ndhwc, &kForward, 1, 0, 1});
  TestConvolution<__half>(
      handle, Conv3dCase{"3-D NCDHW 2 groups", kDeepFlip, ncdhw, &kBackwardData, 1, 0, 1});
}

// y = relu(conv(x, w) + b), b 1 x K x 1 x 1, through two virtual f32 tensors: the pattern of the
// frontend's convolution, bias and activation samples (f16 channels-last data, f32 compute and
// intermediates), which is what NVIDIA's fusion engines take.
void TestConvolutionBiasRelu(cudnnHandle_t handle) {
  g_what = "f16 NHWC convolution + bias + ReLU (virtual f32 intermediates)";
  const ConvProblem p = {2, 8, 5, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, kCross};
  const std::array<Layout, 3> layouts = p.Layouts(kNHWC);
  const Layout bias_layout = Packed(kNHWC, 1, p.k, 1, 1);
  OperationGraph graph;
  cudnnBackendDescriptor_t tensors[3];
  for (int role : {kX, kW, kY}) {
    tensors[role] = graph.AddTensor(kConvUids[role], layouts[role], CUDNN_DATA_HALF);
  }
  const cudnnBackendDescriptor_t b = graph.AddTensor(kUidB, bias_layout, CUDNN_DATA_HALF);
  const cudnnBackendDescriptor_t conv_out =
      graph.AddTensor(kUidVirtual1, layouts[kY], CUDNN_DATA_FLOAT, true);
  const cudnnBackendDescriptor_t biased =
      graph.AddTensor(kUidVirtual2, layouts[kY], CUDNN_DATA_FLOAT, true);
  const cudnnBackendDescriptor_t conv_tensors[3] = {tensors[kX], tensors[kW], conv_out};
  graph.AddConvolution(kForward, conv_tensors, p, 1, 0);
  graph.AddPointwise(CUDNN_POINTWISE_ADD, conv_out, b, biased);
  graph.AddPointwise(CUDNN_POINTWISE_RELU_FWD, biased, nullptr, tensors[kY]);
  graph.Finalize(handle);
  const Plan plan = BuildPlan(handle, graph, CUDNN_DATA_HALF);

  const auto x = Values<__half>(layouts[kX].Extent(), 1),
             w = Values<__half>(layouts[kW].Extent(), 2);
  const auto bias = Values<__half>(bias_layout.Extent(), 3);
  const auto wide_x = Widen(x), wide_w = Widen(w), wide_bias = Widen(bias);
  std::vector<double> sums(layouts[kY].Extent());
  ForEachTap(p, layouts[kX], layouts[kW], layouts[kY],
             [&](size_t xi, size_t wi, size_t yi) { sums[yi] += wide_x[xi] * wide_w[wi]; });
  std::vector<double> want(sums.size());
  ForEachElement(layouts[kY], [&](int, int k, int, int, size_t offset) {
    want[offset] = std::max(0.0, sums[offset] + wide_bias[bias_layout.At(0, k, 0, 0)]);
  });
  const DeviceArray<__half> dev_x(x), dev_w(w), dev_b(bias);
  const DeviceArray<__half> dev_y(std::vector<__half>(layouts[kY].Extent(), __half(kNaN)));
  Execute(handle, plan,
          {{kConvUids[kX], dev_x.get()},
           {kConvUids[kW], dev_w.get()},
           {kUidB, dev_b.get()},
           {kConvUids[kY], dev_y.get()}});
  dev_y.Expect(want, Element<__half>::kTolerance, "y");
  PrintPassed(plan);
}

// ---- Pointwise-only graphs ----

const Layout kPointwiseLayout = Packed(kNHWC, 2, 4, 5, 5);

// y = relu(x + b) over f32 channels-last tensors, b 1 x C x 1 x 1 broadcast, through a virtual t.
void TestBiasRelu(cudnnHandle_t handle) {
  g_what = "f32 pointwise ADD (broadcast bias) + RELU_FWD";
  const Layout& l = kPointwiseLayout;
  const Layout bias_layout = Packed(kNHWC, 1, l.c, 1, 1);
  OperationGraph graph;
  const auto x = graph.AddTensor(kUidX, l, CUDNN_DATA_FLOAT);
  const auto b = graph.AddTensor(kUidB, bias_layout, CUDNN_DATA_FLOAT);
  const auto t = graph.AddTensor(kUidVirtual1, l, CUDNN_DATA_FLOAT, true);
  const auto y = graph.AddTensor(kUidY, l, CUDNN_DATA_FLOAT);
  graph.AddPointwise(CUDNN_POINTWISE_ADD, x, b, t);
  graph.AddPointwise(CUDNN_POINTWISE_RELU_FWD, t, nullptr, y);
  graph.Finalize(handle);
  const Plan plan = BuildPlan(handle, graph, CUDNN_DATA_FLOAT);

  const auto host_x = OffGrid<float>(l.Extent(), 4),
             host_b = Values<float>(bias_layout.Extent(), 5);
  std::vector<double> want(l.Extent());
  ForEachElement(l, [&](int, int c, int, int, size_t offset) {
    want[offset] = std::max(0.0, double{host_x[offset]} + host_b[bias_layout.At(0, c, 0, 0)]);
  });
  const DeviceArray<float> dev_x(host_x), dev_b(host_b),
      dev_y(std::vector<float>(l.Extent(), kNaN));
  Execute(handle, plan, {{kUidX, dev_x.get()}, {kUidB, dev_b.get()}, {kUidY, dev_y.get()}});
  dev_y.Expect(want, Element<float>::kTolerance, "y");
  PrintPassed(plan);
}

// One pointwise operation alone in a graph: y = mode(x) or mode(x, b), b of x's shape.
struct PointwiseCase {
  const char* name;
  cudnnPointwiseMode_t mode;
  bool binary;
  double (*reference)(double x, double b);
  double tolerance;  // the transcendental ones may use fast approximations
};

const PointwiseCase kPointwiseCases[] = {
    {"MUL", CUDNN_POINTWISE_MUL, true, [](double x, double b) { return x * b; }, 1e-6},
    {"SUB", CUDNN_POINTWISE_SUB, true, [](double x, double b) { return x - b; }, 1e-6},
    {"TANH_FWD", CUDNN_POINTWISE_TANH_FWD, false, [](double x, double) { return std::tanh(x); },
     1e-3},
    {"SIGMOID_FWD", CUDNN_POINTWISE_SIGMOID_FWD, false,
     [](double x, double) { return 1 / (1 + std::exp(-x)); }, 1e-3},
};

void TestPointwise(cudnnHandle_t handle, const PointwiseCase& pc) {
  g_what = std::string("f32 pointwise ") + pc.name;
  const Layout& l = kPointwiseLayout;
  OperationGraph graph;
  const auto x = graph.AddTensor(kUidX, l, CUDNN_DATA_FLOAT);
  const auto b = pc.binary ? graph.AddTensor(kUidB, l, CUDNN_DATA_FLOAT) : nullptr;
  const auto y = graph.AddTensor(kUidY, l, CUDNN_DATA_FLOAT);
  graph.AddPointwise(pc.mode, x, b, y);
  graph.Finalize(handle);
  const Plan plan = BuildPlan(handle, graph, CUDNN_DATA_FLOAT);

  const auto host_x = OffGrid<float>(l.Extent(), 6), host_b = Values<float>(l.Extent(), 7);
  std::vector<double> want(l.Extent());
  for (size_t i = 0; i < want.size(); ++i) want[i] = pc.reference(host_x[i], host_b[i]);
  const DeviceArray<float> dev_x(host_x), dev_b(host_b),
      dev_y(std::vector<float>(l.Extent(), kNaN));
  std::vector<Binding> bindings = {{kUidX, dev_x.get()}, {kUidY, dev_y.get()}};
  if (pc.binary) bindings.push_back({kUidB, dev_b.get()});
  Execute(handle, plan, bindings);
  dev_y.Expect(want, pc.tolerance, "y");
  PrintPassed(plan);
}

void TestPointwiseGraphs(cudnnHandle_t handle) {
  TestBiasRelu(handle);
  for (const PointwiseCase& pc : kPointwiseCases) TestPointwise(handle, pc);
}

// ---- Introspection ----

void ExpectInts(const std::vector<int64_t>& got, const std::array<int64_t, 4>& want,
                const char* what) {
  if (got.size() != want.size() || !std::equal(got.begin(), got.end(), want.begin())) {
    std::string text;
    for (int64_t v : got) text += std::to_string(v) + " ";
    Fail(std::string(what) + " read back as [ " + text + "]");
  }
}

// A finalized tensor reads back as set: dimensions and strides (asked for up to 8, it has 4),
// unique id, data type, alignment, virtuality.
void ExpectTensorReadsBack(int64_t uid, const Layout& l, cudnnDataType_t type, bool is_virtual) {
  const Descriptor t = MakeTensor(uid, l, type, is_virtual);
  ExpectInts(GetArray<int64_t>(t.get(), ATTR(CUDNN_ATTR_TENSOR_DIMENSIONS), CUDNN_TYPE_INT64, 8),
             l.Dims(), "CUDNN_ATTR_TENSOR_DIMENSIONS");
  ExpectInts(GetArray<int64_t>(t.get(), ATTR(CUDNN_ATTR_TENSOR_STRIDES), CUDNN_TYPE_INT64, 8),
             l.Strides(), "CUDNN_ATTR_TENSOR_STRIDES");
  EXPECT_EQ(GetOne<int64_t>(t.get(), ATTR(CUDNN_ATTR_TENSOR_UNIQUE_ID), CUDNN_TYPE_INT64), uid);
  EXPECT_EQ(
      GetOne<cudnnDataType_t>(t.get(), ATTR(CUDNN_ATTR_TENSOR_DATA_TYPE), CUDNN_TYPE_DATA_TYPE),
      type);
  EXPECT_EQ(GetOne<int64_t>(t.get(), ATTR(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT), CUDNN_TYPE_INT64),
            kAlignment);
  EXPECT_EQ(GetOne<bool>(t.get(), ATTR(CUDNN_ATTR_TENSOR_IS_VIRTUAL), CUDNN_TYPE_BOOLEAN),
            is_virtual);
}

// A finalized convolution descriptor reads back as set.
void ExpectConvolutionReadsBack(const ConvProblem& p) {
  const Descriptor conv = MakeConvolution(p, CUDNN_DATA_FLOAT);
  EXPECT_EQ(GetOne<cudnnDataType_t>(conv.get(), ATTR(CUDNN_ATTR_CONVOLUTION_COMP_TYPE),
                                    CUDNN_TYPE_DATA_TYPE),
            CUDNN_DATA_FLOAT);
  EXPECT_EQ(GetOne<cudnnConvolutionMode_t>(conv.get(), ATTR(CUDNN_ATTR_CONVOLUTION_CONV_MODE),
                                           CUDNN_TYPE_CONVOLUTION_MODE),
            p.mode);
  EXPECT_EQ(
      GetOne<int64_t>(conv.get(), ATTR(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS), CUDNN_TYPE_INT64), 2);
  // Each (height, width).
  const std::pair<Attribute, std::array<int64_t, 2>> arrays[] = {
      {ATTR(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS), {p.pad_h, p.pad_w}},
      {ATTR(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS), {p.pad_h, p.pad_w}},
      {ATTR(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES), {p.stride_h, p.stride_w}},
      {ATTR(CUDNN_ATTR_CONVOLUTION_DILATIONS), {p.dilation_h, p.dilation_w}},
  };
  for (const auto& [attr, want] : arrays) {
    const std::vector<int64_t> got = GetArray<int64_t>(conv.get(), attr, CUDNN_TYPE_INT64, 4);
    if (got.size() != 2 || got[0] != want[0] || got[1] != want[1]) {
      Fail(std::string(attr.text) + " does not read back as " + std::to_string(want[0]) + ", " +
           std::to_string(want[1]));
    }
  }
}

// Finalized descriptors read back; the graph has engines; the heuristic offers configs; the plan
// gives back the config it runs (the same engine) and its workspace size.
void TestIntrospection(cudnnHandle_t handle) {
  g_what = "introspection";
  ExpectTensorReadsBack(42, Packed(kNHWC, 2, 3, 4, 5), CUDNN_DATA_HALF, false);
  ExpectTensorReadsBack(43, Packed(kNCHW, 1, 4, 1, 1), CUDNN_DATA_FLOAT, true);
  ExpectConvolutionReadsBack(kDilated);

  const std::array<Layout, 3> layouts = kPlain.Layouts(kNCHW);
  OperationGraph graph;
  cudnnBackendDescriptor_t tensors[3];
  for (int role : {kX, kW, kY}) {
    tensors[role] = graph.AddTensor(kConvUids[role], layouts[role], CUDNN_DATA_FLOAT);
  }
  graph.AddConvolution(kForward, tensors, kPlain, 1, 0);
  graph.Finalize(handle);
  const auto engines = GetOne<int64_t>(
      graph.get(), ATTR(CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT), CUDNN_TYPE_INT64);
  if (engines < 1) Fail("the graph has " + std::to_string(engines) + " engines");
  if (HeuristicConfigs(graph.get(), CUDNN_HEUR_MODE_INSTANT).empty()) {
    Fail("the instant heuristic offers no config");
  }
  const Plan plan = BuildPlan(handle, graph, CUDNN_DATA_FLOAT);
  Descriptor config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = config.get();
  int64_t count = -1;
  CHECK_CUDNN(cudnnBackendGetAttribute(plan.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw));
  EXPECT_EQ(count, 1);
  EXPECT_EQ(GetOne<int64_t>(EngineOf(config.get()).get(), ATTR(CUDNN_ATTR_ENGINE_GLOBAL_INDEX),
                            CUDNN_TYPE_INT64),
            plan.engine_index);
  EXPECT_EQ(GetOne<int64_t>(plan.plan.get(), ATTR(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE),
                            CUDNN_TYPE_INT64),
            plan.workspace_size);
  std::printf(
      "introspection: tensor and convolution descriptors, engine count (%lld), heuristic "
      "configs, the plan's engine config and workspace read back\n",
      static_cast<long long>(engines));
}

// ---- Bad input ----

// Which of a tensor's required attributes a bad-input check leaves out.
enum class Missing { kNothing, kUniqueId, kDimensions };

// The first failing status in making a tensor of those dimensions without the `missing`
// attribute (or SUCCESS); the descriptor is destroyed.
cudnnStatus_t TryMakeTensor(const std::array<int64_t, 4>& dims, Missing missing) {
  const std::array<int64_t, 4> strides = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3],
                                          1};
  const cudnnDataType_t type = CUDNN_DATA_FLOAT;
  const int64_t uid = 7;
  Descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnBackendDescriptor_t d = t.get();
  cudnnStatus_t status =
      cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  if (status == CUDNN_STATUS_SUCCESS && missing != Missing::kDimensions) {
    status =
        cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  }
  if (status == CUDNN_STATUS_SUCCESS) {
    status =
        cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  }
  if (status == CUDNN_STATUS_SUCCESS && missing != Missing::kUniqueId) {
    status = cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  }
  if (status == CUDNN_STATUS_SUCCESS) {
    status = cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                                      &kAlignment);
  }
  return status == CUDNN_STATUS_SUCCESS ? cudnnBackendFinalize(d) : status;
}

// Descriptors misused: incomplete or finalized ones, attributes of the wrong type or of another
// descriptor, null descriptors.
void TestBadDescriptors() {
  g_what = "bad input: descriptors";
  const std::array<int64_t, 4> dims = {2, 3, 4, 4};
  if (TryMakeTensor(dims, Missing::kNothing) != CUDNN_STATUS_SUCCESS) {
    Fail("the complete tensor of the bad-input checks does not finalize");
  }
  EXPECT_STATUS(TryMakeTensor(dims, Missing::kUniqueId), IsBadParam);
  EXPECT_STATUS(TryMakeTensor(dims, Missing::kDimensions), IsBadParam);
  EXPECT_STATUS(TryMakeTensor({2, -3, 4, 4}, Missing::kNothing), IsBadParam);

  Descriptor open(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const float float_dims[4] = {2, 3, 4, 4};
  EXPECT_STATUS(cudnnBackendSetAttribute(open.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_FLOAT,
                                         4, float_dims),
                IsBadParam);
  const cudnnDataType_t type = CUDNN_DATA_FLOAT;
  EXPECT_STATUS(cudnnBackendSetAttribute(open.get(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                                         CUDNN_TYPE_DATA_TYPE, 1, &type),
                IsBadParam);
  int64_t count = 0, uid = 0;
  EXPECT_STATUS(cudnnBackendGetAttribute(open.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64,
                                         1, &count, &uid),
                IsWrongState);

  const Descriptor finalized = MakeTensor(9, Packed(kNCHW, 2, 3, 4, 4), CUDNN_DATA_FLOAT);
  uid = 10;
  EXPECT_STATUS(cudnnBackendSetAttribute(finalized.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                         CUDNN_TYPE_INT64, 1, &uid),
                IsWrongState);
  EXPECT_EQ(GetOne<int64_t>(finalized.get(), ATTR(CUDNN_ATTR_TENSOR_UNIQUE_ID), CUDNN_TYPE_INT64),
            9);

  EXPECT_STATUS(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, nullptr), IsBadParam);
  cudnnBackendDescriptor_t unknown = nullptr;
  EXPECT_STATUS(
      cudnnBackendCreateDescriptor(static_cast<cudnnBackendDescriptorType_t>(9999), &unknown),
      IsNotSupported);
  EXPECT_STATUS(
      cudnnBackendSetAttribute(nullptr, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid),
      IsBadParam);
  EXPECT_STATUS(cudnnBackendGetAttribute(nullptr, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1,
                                         &count, &uid),
                IsBadParam);
  EXPECT_STATUS(cudnnBackendFinalize(nullptr), IsBadParam);
  std::printf("bad input: incomplete, finalized and null descriptors, wrong attribute types\n");
}

// Finalizing Tally's engine (global index 0) for the graph: where it compiles the graph.
cudnnStatus_t TryEngine(const OperationGraph& graph) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  const cudnnBackendDescriptor_t graph_desc = graph.get();
  const int64_t index = 0;
  cudnnStatus_t status = cudnnBackendSetAttribute(engine.get(), CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_desc);
  if (status == CUDNN_STATUS_SUCCESS) {
    status = cudnnBackendSetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                      CUDNN_TYPE_INT64, 1, &index);
  }
  return status == CUDNN_STATUS_SUCCESS ? cudnnBackendFinalize(engine.get()) : status;
}

// The engine for the graph of one forward convolution of `p` over tensors in `layouts`.
template <typename Problem, typename Layouts>
cudnnStatus_t TryConvolutionEngine(cudnnHandle_t handle, const Problem& p, const Layouts& layouts) {
  OperationGraph graph;
  cudnnBackendDescriptor_t tensors[3];
  for (int role : {kX, kW, kY}) {
    tensors[role] = graph.AddTensor(kConvUids[role], layouts[role], CUDNN_DATA_FLOAT);
  }
  graph.AddConvolution(kForward, tensors, p, 1, 0);
  graph.Finalize(handle);
  return TryEngine(graph);
}

// Convolutions whose tensors do not fit: a 3-D one of 4-D tensors, a 2-D one of 5-D tensors, a
// 3-D one whose y is a plane deeper than its output.
void TestBadConvolutions(cudnnHandle_t handle) {
  g_what = "bad input: convolutions";
  if (TryConvolutionEngine(handle, kDeep, kDeep.Layouts(kNCHW)) != CUDNN_STATUS_SUCCESS) {
    Fail("the fitting 3-D convolution of the bad-input checks does not compile");
  }
  EXPECT_STATUS(TryConvolutionEngine(handle, kDeep, kPlain.Layouts(kNCHW)), IsBadParam);
  EXPECT_STATUS(TryConvolutionEngine(handle, kPlain, kDeep.Layouts(kNCHW)), IsBadParam);
  std::array<Layout5, 3> deeper = kDeep.Layouts(kNCHW);
  Index5 dims = deeper[kY].dims;
  ++dims[2];
  deeper[kY] = Packed5(kNCHW, dims);
  EXPECT_STATUS(TryConvolutionEngine(handle, kDeep, deeper), IsBadParam);
  std::printf("bad input: convolutions of tensors of the wrong rank or size\n");
}

// Executions refused before anything runs: a variant pack without one of the graph's tensors, one
// not finalized, no plan at all.
void TestBadExecution(cudnnHandle_t handle) {
  g_what = "bad input: execution";
  const Layout& l = kPointwiseLayout;
  OperationGraph graph;
  const auto x = graph.AddTensor(kUidX, l, CUDNN_DATA_FLOAT);
  const auto b = graph.AddTensor(kUidB, l, CUDNN_DATA_FLOAT);
  const auto y = graph.AddTensor(kUidY, l, CUDNN_DATA_FLOAT);
  graph.AddPointwise(CUDNN_POINTWISE_ADD, x, b, y);
  graph.Finalize(handle);
  const Plan plan = BuildPlan(handle, graph, CUDNN_DATA_FLOAT);
  if (plan.workspace_size > 0) Fail("a pointwise ADD asks for a workspace: the checks assume none");
  const DeviceArray<float> dev_x(Values<float>(l.Extent(), 8));
  const DeviceArray<float> dev_y(std::vector<float>(l.Extent(), kNaN));

  const Descriptor without_b =
      MakeVariantPack({{kUidX, dev_x.get()}, {kUidY, dev_y.get()}}, nullptr);
  EXPECT_STATUS(cudnnBackendExecute(handle, plan.plan.get(), without_b.get()), IsBadParam);
  Descriptor open(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  EXPECT_STATUS(cudnnBackendExecute(handle, plan.plan.get(), open.get()), IsWrongState);
  EXPECT_STATUS(cudnnBackendExecute(handle, nullptr, without_b.get()), IsBadParam);
  cudaStream_t stream = nullptr;
  CHECK_CUDNN(cudnnGetStream(handle, &stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  // Nothing ran: y is still NaN.
  const std::vector<float> y_after = ToHost(dev_y.get(), l.Extent());
  for (size_t i = 0; i < y_after.size(); ++i) {
    if (!std::isnan(y_after[i])) Fail("a refused execution wrote y[" + std::to_string(i) + "]");
  }
  std::printf("bad input: variant pack without a tensor, one not finalized, no plan\n");
}

}  // namespace

int main() {
  cudnnHandle_t handle = HandleOnOwnStream();
  std::printf("cuDNN %zu: backend API\n", cudnnGetVersion());
  TestConvolutions(handle);
  TestConvolutions3d(handle);
  TestConvolutionBiasRelu(handle);
  TestPointwiseGraphs(handle);
  TestIntrospection(handle);
  TestBadDescriptors();
  TestBadConvolutions(handle);
  TestBadExecution(handle);
  DestroyHandleAndStream(handle);
  std::printf("CUDNN GRAPHS OK\n");
  return 0;
}
