// Shared by the cuDNN end-to-end programs (cudnn_calls, cudnn_graphs, cudnn_rnn), beside the
// generic helpers of device_vectors.h (inputs, copies, comparison with a CPU reference):
// CHECK_CUDNN and Fail (naming the check under way, g_what, where the program sets one), a handle
// on a stream of its own, cuDNN 9's status categories, each element type's cuDNN names and
// tolerance, inputs off the activations' kinks, outputs that start as NaN where beta = 0 and
// cuDNN's alpha/beta blend, device buffers checked against a reference, packed 4-D and 5-D layouts
// (NCHW, NHWC; NCDHW, NDHWC), and the CPU reference of a 2-D and a 3-D convolution (padding,
// strides, dilation, groups, either mode) for all three directions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "device_vectors.h"

// ---- Failures ----

// The check under way, named before every failure reported here; none while it is empty.
inline std::string g_what;

[[noreturn]] inline void Fail(const std::string& message) {
  if (g_what.empty()) {
    std::fprintf(stderr, "%s\n", message.c_str());
  } else {
    std::fprintf(stderr, "%s: %s\n", g_what.c_str(), message.c_str());
  }
  std::exit(1);
}

// A cuDNN status that must be success; call names what returned it.
inline void CheckStatus(cudnnStatus_t status, const std::string& call) {
  if (status != CUDNN_STATUS_SUCCESS) {
    Fail(call + " failed: " + cudnnGetErrorString(status) + " (" + std::to_string(status) + ")");
  }
}

// A cuDNN call that must succeed.
#define CHECK_CUDNN(call) \
  CheckStatus((call), std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " + #call)

// cuDNN 9's statuses are a category (the thousands) and a detail: the documented category counts.
inline bool InCategory(cudnnStatus_t status, cudnnStatus_t category) {
  return status / 1000 == category / 1000;
}
inline bool IsBadParam(cudnnStatus_t status) { return InCategory(status, CUDNN_STATUS_BAD_PARAM); }
inline bool IsNotSupported(cudnnStatus_t status) {
  return InCategory(status, CUDNN_STATUS_NOT_SUPPORTED);
}

// A cuDNN handle working on a stream of its own (the programs' setup, named "setup").
inline cudnnHandle_t HandleOnOwnStream() {
  g_what = "setup";
  cudnnHandle_t handle = nullptr;
  CHECK_CUDNN(cudnnCreate(&handle));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDNN(cudnnSetStream(handle, stream));
  return handle;
}
inline void DestroyHandleAndStream(cudnnHandle_t handle) {
  cudaStream_t stream = nullptr;
  CHECK_CUDNN(cudnnGetStream(handle, &stream));
  CHECK_CUDNN(cudnnDestroy(handle));
  CHECK_CUDA(cudaStreamDestroy(stream));
}

// ---- Element types ----

// What the programs need to know of each element type: cuDNN's name for it, the compute type of
// its convolutions, the math its classic-API convolutions may use, how near its results must
// come, and its name in messages.
template <typename T>
struct Element;
template <>
struct Element<float> {
  static constexpr cudnnDataType_t kType = CUDNN_DATA_FLOAT;
  static constexpr cudnnDataType_t kCompute = CUDNN_DATA_FLOAT;
  // FMA only: by default cuDNN may round f32 convolution inputs to TF32 on Ampere and later.
  static constexpr cudnnMathType_t kMath = CUDNN_FMA_MATH;
  static constexpr double kTolerance = 1e-5;
  static constexpr const char* kName = "f32";
};
template <>
struct Element<double> {
  static constexpr cudnnDataType_t kType = CUDNN_DATA_DOUBLE;
  static constexpr cudnnDataType_t kCompute = CUDNN_DATA_DOUBLE;
  static constexpr cudnnMathType_t kMath = CUDNN_DEFAULT_MATH;
  static constexpr double kTolerance = 1e-5;
  static constexpr const char* kName = "f64";
};
// The 16-bit types compute in f32 (PSEUDO_HALF_CONFIG, PSEUDO_BFLOAT16_CONFIG); their outputs are
// rounded to the type.
template <>
struct Element<__half> {
  static constexpr cudnnDataType_t kType = CUDNN_DATA_HALF;
  static constexpr cudnnDataType_t kCompute = CUDNN_DATA_FLOAT;
  static constexpr cudnnMathType_t kMath = CUDNN_DEFAULT_MATH;
  static constexpr double kTolerance = 1e-2;
  static constexpr const char* kName = "f16";
};
template <>
struct Element<__nv_bfloat16> {
  static constexpr cudnnDataType_t kType = CUDNN_DATA_BFLOAT16;
  static constexpr cudnnDataType_t kCompute = CUDNN_DATA_FLOAT;
  static constexpr cudnnMathType_t kMath = CUDNN_DEFAULT_MATH;
  static constexpr double kTolerance = 1e-2;
  static constexpr const char* kName = "bf16";
};

// ---- Inputs and expected outputs ----

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Values in [-1, 1] as Values gives them, moved by 1/16: never 0 nor on any activation's kink
// (ReLU's 0, clipped ReLU's ceiling 0.5), nor is x + b for b a multiple of 1/8; still exact in
// every type.
template <typename T>
std::vector<T> OffGrid(size_t n, int seed) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>(((i * 7 + seed * 13) % 17) / 8.0 - 1.0 + 1.0 / 16);
  }
  return v;
}

// What an output holds before a call: NaN where beta = 0 (cuDNN must not read it), else values
// for the result to blend with.
template <typename T>
std::vector<T> Before(size_t n, double beta, int seed) {
  return beta == 0 ? std::vector<T>(n, static_cast<T>(kNaN)) : Values<T>(n, seed);
}

// cuDNN's blend: alpha * result + beta * before, before not read where beta = 0.
inline std::vector<double> Blend(double alpha, const std::vector<double>& result, double beta,
                                 const std::vector<double>& before) {
  std::vector<double> out(result.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = alpha * result[i] + (beta == 0 ? 0 : beta * before[i]);
  }
  return out;
}

// ---- Device buffers ----

template <typename T>
void Upload(T* device, const std::vector<T>& host) {
  CHECK_CUDA(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
}

// The device buffer holds the reference, element by element; what names the buffer (after g_what,
// where set).
template <typename T>
void ExpectDevice(const T* device, const std::vector<double>& want, double tolerance,
                  const std::string& what) {
  const std::vector<double> got = Widen(ToHost(device, want.size()));
  const std::string name = g_what.empty() ? what : g_what + ": " + what;
  for (size_t i = 0; i < want.size(); ++i) ExpectNear(got[i], want[i], tolerance, name.c_str(), i);
}

inline void Free(std::initializer_list<const void*> buffers) {
  for (const void* p : buffers) CHECK_CUDA(cudaFree(const_cast<void*>(p)));
}

// A device copy of a host vector, freed with the object.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : size_(host.size()), data_(ToDevice(host)) {}
  ~DeviceArray() { CHECK_CUDA(cudaFree(data_)); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return data_; }

  // The device holds the reference, every element of it; what names the tensor.
  void Expect(const std::vector<double>& want, double tolerance, const std::string& what) const {
    if (want.size() != size_) {
      Fail(what + ": " + std::to_string(size_) + " elements checked against " +
           std::to_string(want.size()));
    }
    ExpectDevice(data_, want, tolerance, what);
  }

 private:
  size_t size_;
  T* data_;
};

// ---- Layouts ----

constexpr cudnnTensorFormat_t kNCHW = CUDNN_TENSOR_NCHW;
constexpr cudnnTensorFormat_t kNHWC = CUDNN_TENSOR_NHWC;

// A 4-D tensor's dimensions and strides in elements, as cuDNN's descriptors hold them; filters use
// it too, with (k, c, r, s) for (n, c, h, w). The dimensions stay in that order whatever the
// layout: the strides say the layout, as PyTorch passes channels-last tensors.
struct Layout {
  int n, c, h, w;
  int n_stride, c_stride, h_stride, w_stride;

  size_t At(int in, int ic, int ih, int iw) const {
    return static_cast<size_t>(in) * n_stride + static_cast<size_t>(ic) * c_stride +
           static_cast<size_t>(ih) * h_stride + static_cast<size_t>(iw) * w_stride;
  }
  // The elements from the first to the last, gaps included.
  size_t Extent() const { return At(n - 1, c - 1, h - 1, w - 1) + 1; }
  // The dimensions and the strides as the backend API's attributes hold them.
  std::array<int64_t, 4> Dims() const { return {n, c, h, w}; }
  std::array<int64_t, 4> Strides() const { return {n_stride, c_stride, h_stride, w_stride}; }
};

// The packed layout of a tensor (or filter) in that format: NHWC filters are KRSC.
inline Layout Packed(cudnnTensorFormat_t format, int n, int c, int h, int w) {
  if (format == kNHWC) return {n, c, h, w, h * w * c, 1, w * c, c};
  return {n, c, h, w, c * h * w, h * w, w, 1};
}

template <typename Fn>
void ForEachElement(const Layout& l, Fn fn) {
  for (int n = 0; n < l.n; ++n)
    for (int c = 0; c < l.c; ++c)
      for (int h = 0; h < l.h; ++h)
        for (int w = 0; w < l.w; ++w) fn(n, c, h, w, l.At(n, c, h, w));
}

// A 5-D tensor's dimensions and strides in elements (n, c, d, h, w; a filter's k, c, t, r, s), in
// that order whatever the layout.
using Index5 = std::array<int, 5>;
struct Layout5 {
  Index5 dims, strides;

  size_t At(const Index5& index) const {
    size_t offset = 0;
    for (int d = 0; d < 5; ++d) offset += static_cast<size_t>(index[d]) * strides[d];
    return offset;
  }
  size_t Extent() const {
    Index5 last;
    for (int d = 0; d < 5; ++d) last[d] = dims[d] - 1;
    return At(last) + 1;
  }
  std::array<int64_t, 5> Dims() const { return {dims[0], dims[1], dims[2], dims[3], dims[4]}; }
  std::array<int64_t, 5> Strides() const {
    return {strides[0], strides[1], strides[2], strides[3], strides[4]};
  }
};

// The packed layout in that format: NCDHW, or NDHWC (filters KTRSC).
inline Layout5 Packed5(cudnnTensorFormat_t format, const Index5& dims) {
  Layout5 l{dims, {}};
  // The dimensions from the fastest.
  const Index5 order = format == kNHWC ? Index5{1, 4, 3, 2, 0} : Index5{4, 3, 2, 1, 0};
  int stride = 1;
  for (int d : order) {
    l.strides[d] = stride;
    stride *= dims[d];
  }
  return l;
}

// A 4-D layout as 5-D with a depth of 1.
inline Layout5 WithDepth(const Layout& l) {
  return {{l.n, l.c, 1, l.h, l.w}, {l.n_stride, l.c_stride, 0, l.h_stride, l.w_stride}};
}

// fn(index) for every index of the layout's dimensions.
template <typename Fn>
void ForEachIndex(const Layout5& l, Fn fn) {
  const int count = l.dims[0] * l.dims[1] * l.dims[2] * l.dims[3] * l.dims[4];
  for (int i = 0; i < count; ++i) {
    Index5 index;
    int rest = i;
    for (int d = 4; d >= 0; --d) {
      index[d] = rest % l.dims[d];
      rest /= l.dims[d];
    }
    fn(index);
  }
}

// ---- Convolutions ----

constexpr cudnnConvolutionMode_t kCross = CUDNN_CROSS_CORRELATION;
constexpr cudnnConvolutionMode_t kFlip = CUDNN_CONVOLUTION;

// One 2-D convolution: x is n x c x h x w, the filter k x (c / groups) x r x s, the same padding
// before and after.
struct ConvProblem {
  int n, c, h, w, k, r, s;
  int pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w, groups;
  cudnnConvolutionMode_t mode;

  // The output's spatial size, as cuDNN documents it.
  int OutH() const { return 1 + (h + 2 * pad_h - ((r - 1) * dilation_h + 1)) / stride_h; }
  int OutW() const { return 1 + (w + 2 * pad_w - ((s - 1) * dilation_w + 1)) / stride_w; }
  // The packed layouts of x, the filter and y in that format, in that order.
  std::array<Layout, 3> Layouts(cudnnTensorFormat_t format) const {
    return {Packed(format, n, c, h, w), Packed(format, k, c / groups, r, s),
            Packed(format, n, k, OutH(), OutW())};
  }
};

// One 3-D convolution: x is n x c x in (depth, height, width), the filter k x (c / groups) x
// filter, the same padding before and after.
struct Conv3dProblem {
  int n, c, k;
  std::array<int, 3> in, filter, pad, stride, dilation;
  int groups;
  cudnnConvolutionMode_t mode;

  // The output's size along spatial dimension d, as cuDNN documents it.
  int Out(int d) const {
    return 1 + (in[d] + 2 * pad[d] - ((filter[d] - 1) * dilation[d] + 1)) / stride[d];
  }
  // The packed layouts of x, the filter and y in that format, in that order.
  std::array<Layout5, 3> Layouts(cudnnTensorFormat_t format) const {
    return {Packed5(format, {n, c, in[0], in[1], in[2]}),
            Packed5(format, {k, c / groups, filter[0], filter[1], filter[2]}),
            Packed5(format, {n, k, Out(0), Out(1), Out(2)})};
  }
};

// The 3-D convolutions the programs check, small for the emulated GPU: padding, strides and
// dilation differing per dimension; two groups and convolution mode.
// clang-format off
//                                       n  c  k  in         filter     pad        stride     dilation   groups mode
inline const Conv3dProblem kDeep     = {2, 2, 3, {3, 4, 5}, {2, 3, 2}, {1, 1, 0}, {1, 2, 1}, {1, 1, 2}, 1,     kCross};
inline const Conv3dProblem kDeepFlip = {1, 4, 4, {4, 3, 4}, {3, 2, 2}, {1, 0, 1}, {2, 1, 1}, {1, 2, 1}, 2,     kFlip};
// clang-format on

// Calls fn(x offset, w offset, y offset) for every product of the convolution: forward sums x * w
// into y, backward data dy * w into dx, backward filter x * dy into dw. CUDNN_CONVOLUTION flips
// the filter, CUDNN_CROSS_CORRELATION does not; padding contributes nothing.
template <typename Fn>
void ForEachTap(const Conv3dProblem& p, const Layout5& x, const Layout5& w, const Layout5& y,
                Fn fn) {
  const int group_c = p.c / p.groups, group_k = p.k / p.groups;
  const int taps = p.filter[0] * p.filter[1] * p.filter[2];
  ForEachIndex(y, [&](const Index5& out) {
    const int k = out[1];
    for (int gc = 0; gc < group_c; ++gc) {
      for (int tap = 0; tap < taps; ++tap) {
        Index5 in = {out[0], k / group_k * group_c + gc}, at = {k, gc};
        bool inside = true;
        int rest = tap;
        for (int d = 2; d >= 0; --d) {
          const int t = rest % p.filter[d];
          rest /= p.filter[d];
          in[d + 2] = out[d + 2] * p.stride[d] - p.pad[d] + t * p.dilation[d];
          at[d + 2] = p.mode == kFlip ? p.filter[d] - 1 - t : t;
          inside = inside && in[d + 2] >= 0 && in[d + 2] < p.in[d];
        }
        if (inside) fn(x.At(in), w.At(at), y.At(out));
      }
    }
  });
}

// The 2-D convolution's products: the 3-D convolution of depth 1.
template <typename Fn>
void ForEachTap(const ConvProblem& p, const Layout& x, const Layout& w, const Layout& y, Fn fn) {
  const Conv3dProblem deep = {p.n,
                              p.c,
                              p.k,
                              {1, p.h, p.w},
                              {1, p.r, p.s},
                              {0, p.pad_h, p.pad_w},
                              {1, p.stride_h, p.stride_w},
                              {1, p.dilation_h, p.dilation_w},
                              p.groups,
                              p.mode};
  ForEachTap(deep, WithDepth(x), WithDepth(w), WithDepth(y), fn);
}
