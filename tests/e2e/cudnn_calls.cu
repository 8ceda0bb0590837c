// cuDNN through Tally: an unmodified program linked with -lcudnn calls every entry point of cuDNN's
// classic C API that the stand-in covers and compares each result with a CPU reference computed in
// double. It checks the library and handle calls; tensor, filter, convolution, activation and
// pooling descriptors set and read back; convolution forward, backward data and backward filter in
// f32 (NCHW and NHWC), f64, f16 and bf16 (padding, strides, a non-square filter, dilation, groups,
// convolution and cross-correlation), each with the algorithm the heuristic, Find or FindEx ranks
// first and the workspace that algorithm asks for; the same for 3-D convolutions of 5-D tensors
// (NCDHW and NDHWC, f32, f16 and bf16); the bias gradient and the fused convolution,
// bias and ReLU; tensor add, set and scale; activations, pooling and softmax forward and backward;
// batch normalization training, inference and backward. An output computed with beta = 0 starts as
// NaN (cuDNN must not read it); others blend. Then the documented statuses for bad input. Prints
// "CUDNN OK" when all passed.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "dnn_check.h"

namespace {

// Batch normalization's scale, bias, means and variances are f32 for f32 and f16 data.
const double kParamTolerance = Element<float>::kTolerance;

// cuDNN's scaling factors (alpha, beta) are host doubles for double data, floats for the rest.
template <typename T>
using Scale = std::conditional_t<std::is_same_v<T, double>, double, float>;

// n distinct multiples of 1/256, so that a max-pooling window has one maximum: i * 37 % n is a
// permutation of 0..n-1 while n is no multiple of the prime 37.
std::vector<float> Distinct(size_t n) {
  EXPECT(n % 37 != 0);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = (static_cast<double>(i * 37 % n) - n / 2.0) / 256;
  return v;
}

// ---- Tensor layouts and descriptors ----

// The offsets of l's elements gathered by key(n, c, h, w), a number below count.
template <typename Key>
std::vector<std::vector<size_t>> GroupBy(const Layout& l, size_t count, Key key) {
  std::vector<std::vector<size_t>> groups(count);
  ForEachElement(l, [&](int n, int c, int h, int w, size_t offset) {
    groups[key(n, c, h, w)].push_back(offset);
  });
  return groups;
}

// Descriptors are set through the 4-D calls or through the N-D ones.
enum class Api { k4d, kNd };

// A descriptor for a packed tensor: cudnnSetTensor4dDescriptor with the format, or
// cudnnSetTensorNdDescriptor with the layout's strides.
cudnnTensorDescriptor_t MakeTensor(cudnnDataType_t type, cudnnTensorFormat_t format,
                                   const Layout& l, Api api = Api::k4d) {
  cudnnTensorDescriptor_t desc = nullptr;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&desc));
  if (api == Api::kNd) {
    const int dims[] = {l.n, l.c, l.h, l.w};
    const int strides[] = {l.n_stride, l.c_stride, l.h_stride, l.w_stride};
    CHECK_CUDNN(cudnnSetTensorNdDescriptor(desc, type, 4, dims, strides));
  } else {
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(desc, format, type, l.n, l.c, l.h, l.w));
  }
  return desc;
}

// A filter descriptor, k x c x r x s in l.
cudnnFilterDescriptor_t MakeFilter(cudnnDataType_t type, cudnnTensorFormat_t format,
                                   const Layout& l, Api api = Api::k4d) {
  cudnnFilterDescriptor_t desc = nullptr;
  CHECK_CUDNN(cudnnCreateFilterDescriptor(&desc));
  if (api == Api::kNd) {
    const int dims[] = {l.n, l.c, l.h, l.w};
    CHECK_CUDNN(cudnnSetFilterNdDescriptor(desc, type, format, 4, dims));
  } else {
    CHECK_CUDNN(cudnnSetFilter4dDescriptor(desc, type, format, l.n, l.c, l.h, l.w));
  }
  return desc;
}

// The descriptor reads back as that type with those dimensions.
void ExpectDims(cudnnTensorDescriptor_t desc, cudnnDataType_t type, int n, int c, int h, int w) {
  cudnnDataType_t got_type;
  int got[8];
  CHECK_CUDNN(cudnnGetTensor4dDescriptor(desc, &got_type, &got[0], &got[1], &got[2], &got[3],
                                         &got[4], &got[5], &got[6], &got[7]));
  EXPECT(got_type == type && got[0] == n && got[1] == c && got[2] == h && got[3] == w);
}

// The descriptor reads back as that type and layout, strides included.
void ExpectLayout(cudnnTensorDescriptor_t desc, cudnnDataType_t type, const Layout& l) {
  cudnnDataType_t got_type;
  Layout got;
  CHECK_CUDNN(cudnnGetTensor4dDescriptor(desc, &got_type, &got.n, &got.c, &got.h, &got.w,
                                         &got.n_stride, &got.c_stride, &got.h_stride,
                                         &got.w_stride));
  EXPECT(got_type == type && got.n == l.n && got.c == l.c && got.h == l.h && got.w == l.w);
  EXPECT(got.n_stride == l.n_stride && got.c_stride == l.c_stride && got.h_stride == l.h_stride &&
         got.w_stride == l.w_stride);
}

size_t TensorBytes(cudnnTensorDescriptor_t desc) {
  size_t bytes = 0;
  CHECK_CUDNN(cudnnGetTensorSizeInBytes(desc, &bytes));
  return bytes;
}

// Set4d in both formats, Set4dEx with a padded row, SetNd, and what each reads back.
void TestTensorDescriptors() {
  for (cudnnTensorFormat_t format : {kNCHW, kNHWC}) {
    const Layout l = Packed(format, 2, 3, 4, 5);
    cudnnTensorDescriptor_t desc = MakeTensor(CUDNN_DATA_FLOAT, format, l);
    ExpectLayout(desc, CUDNN_DATA_FLOAT, l);
    EXPECT(TensorBytes(desc) == 2 * 3 * 4 * 5 * sizeof(float));
    CHECK_CUDNN(cudnnDestroyTensorDescriptor(desc));
  }
  // Rows of 5 f16 elements, 8 apart.
  const Layout padded = {2, 3, 4, 5, 3 * 4 * 8, 4 * 8, 8, 1};
  cudnnTensorDescriptor_t desc = nullptr;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&desc));
  CHECK_CUDNN(cudnnSetTensor4dDescriptorEx(desc, CUDNN_DATA_HALF, 2, 3, 4, 5, padded.n_stride,
                                           padded.c_stride, padded.h_stride, padded.w_stride));
  ExpectLayout(desc, CUDNN_DATA_HALF, padded);
  EXPECT(TensorBytes(desc) >= padded.Extent() * sizeof(__half));
  // N-D: asked for up to 8 dimensions, it says it has 4.
  const Layout nhwc = Packed(kNHWC, 2, 3, 4, 5);
  const int dims[] = {2, 3, 4, 5};
  const int strides[] = {nhwc.n_stride, nhwc.c_stride, nhwc.h_stride, nhwc.w_stride};
  CHECK_CUDNN(cudnnSetTensorNdDescriptor(desc, CUDNN_DATA_DOUBLE, 4, dims, strides));
  cudnnDataType_t type;
  int count = 0, got_dims[8] = {}, got_strides[8] = {};
  CHECK_CUDNN(cudnnGetTensorNdDescriptor(desc, 8, &type, &count, got_dims, got_strides));
  EXPECT(type == CUDNN_DATA_DOUBLE && count == 4);
  for (int i = 0; i < 4; ++i) EXPECT(got_dims[i] == dims[i] && got_strides[i] == strides[i]);
  ExpectLayout(desc, CUDNN_DATA_DOUBLE, nhwc);
  EXPECT(TensorBytes(desc) == 2 * 3 * 4 * 5 * sizeof(double));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(desc));
  std::printf("tensor descriptors: 4-D (NCHW, NHWC, explicit strides) and N-D read back\n");
}

// Set4d in both formats and SetNd, and what each reads back.
void TestFilterDescriptors() {
  for (cudnnTensorFormat_t format : {kNCHW, kNHWC}) {
    cudnnFilterDescriptor_t desc = MakeFilter(CUDNN_DATA_HALF, format, Packed(format, 4, 3, 3, 2));
    cudnnDataType_t type;
    cudnnTensorFormat_t got_format;
    int k, c, r, s;
    CHECK_CUDNN(cudnnGetFilter4dDescriptor(desc, &type, &got_format, &k, &c, &r, &s));
    EXPECT(type == CUDNN_DATA_HALF && got_format == format);
    EXPECT(k == 4 && c == 3 && r == 3 && s == 2);
    size_t bytes = 0;
    CHECK_CUDNN(cudnnGetFilterSizeInBytes(desc, &bytes));
    EXPECT(bytes == 4 * 3 * 3 * 2 * sizeof(__half));
    CHECK_CUDNN(cudnnDestroyFilterDescriptor(desc));
  }
  cudnnFilterDescriptor_t desc =
      MakeFilter(CUDNN_DATA_FLOAT, kNCHW, Packed(kNCHW, 6, 2, 3, 5), Api::kNd);
  cudnnDataType_t type;
  cudnnTensorFormat_t format;
  int count = 0, dims[8] = {};
  CHECK_CUDNN(cudnnGetFilterNdDescriptor(desc, 8, &type, &format, &count, dims));
  EXPECT(type == CUDNN_DATA_FLOAT && format == kNCHW && count == 4);
  EXPECT(dims[0] == 6 && dims[1] == 2 && dims[2] == 3 && dims[3] == 5);
  int k, c, r, s;
  CHECK_CUDNN(cudnnGetFilter4dDescriptor(desc, &type, &format, &k, &c, &r, &s));
  EXPECT(k == 6 && c == 2 && r == 3 && s == 5);
  size_t bytes = 0;
  CHECK_CUDNN(cudnnGetFilterSizeInBytes(desc, &bytes));
  EXPECT(bytes == 6 * 2 * 3 * 5 * sizeof(float));
  CHECK_CUDNN(cudnnDestroyFilterDescriptor(desc));
  std::printf("filter descriptors: 4-D (NCHW, NHWC) and N-D read back\n");
}

// coef is the clipped ReLU's ceiling, ELU's alpha and SWISH's beta.
cudnnActivationDescriptor_t MakeActivation(cudnnActivationMode_t mode, double coef) {
  cudnnActivationDescriptor_t desc = nullptr;
  CHECK_CUDNN(cudnnCreateActivationDescriptor(&desc));
  if (mode == CUDNN_ACTIVATION_SWISH) {
    CHECK_CUDNN(cudnnSetActivationDescriptor(desc, mode, CUDNN_NOT_PROPAGATE_NAN, 0));
    CHECK_CUDNN(cudnnSetActivationDescriptorSwishBeta(desc, coef));
  } else {
    CHECK_CUDNN(cudnnSetActivationDescriptor(desc, mode, CUDNN_NOT_PROPAGATE_NAN, coef));
  }
  return desc;
}

// ---- Convolutions ----

// clang-format off
//                            n  c  h  w  k  r  s  pad   stride  dilation  groups  mode
const ConvProblem kPlain   = {2, 3, 6, 5, 4, 3, 3, 1, 1, 1, 1,   1, 1,     1,      kCross};
const ConvProblem kStrided = {2, 3, 7, 7, 4, 2, 3, 0, 0, 2, 2,   1, 1,     1,      kCross};
const ConvProblem kDilated = {2, 3, 7, 7, 4, 3, 3, 2, 2, 1, 1,   2, 2,     1,      kCross};
const ConvProblem kGrouped = {2, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1,   1, 1,     2,      kCross};
const ConvProblem kFlipped = {2, 3, 5, 6, 4, 2, 3, 1, 0, 1, 1,   1, 1,     1,      kFlip};
// clang-format on

cudnnConvolutionDescriptor_t MakeConvolution(const ConvProblem& p, cudnnDataType_t compute,
                                             cudnnMathType_t math, Api api) {
  cudnnConvolutionDescriptor_t conv = nullptr;
  CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
  if (api == Api::kNd) {
    const int pad[] = {p.pad_h, p.pad_w}, stride[] = {p.stride_h, p.stride_w};
    const int dilation[] = {p.dilation_h, p.dilation_w};
    CHECK_CUDNN(cudnnSetConvolutionNdDescriptor(conv, 2, pad, stride, dilation, p.mode, compute));
  } else {
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(conv, p.pad_h, p.pad_w, p.stride_h, p.stride_w,
                                                p.dilation_h, p.dilation_w, p.mode, compute));
  }
  CHECK_CUDNN(cudnnSetConvolutionGroupCount(conv, p.groups));
  CHECK_CUDNN(cudnnSetConvolutionMathType(conv, math));
  return conv;
}

// Set2d and SetNd, group count and math type read back; output dimensions in 2-D and N-D.
void TestConvolutionDescriptors() {
  cudnnConvolutionDescriptor_t conv = nullptr;
  CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
  CHECK_CUDNN(cudnnSetConvolution2dDescriptor(conv, 1, 0, 2, 1, 1, 2, kFlip, CUDNN_DATA_FLOAT));
  int pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute;
  CHECK_CUDNN(cudnnGetConvolution2dDescriptor(conv, &pad_h, &pad_w, &stride_h, &stride_w,
                                              &dilation_h, &dilation_w, &mode, &compute));
  EXPECT(pad_h == 1 && pad_w == 0 && stride_h == 2 && stride_w == 1);
  EXPECT(dilation_h == 1 && dilation_w == 2 && mode == kFlip && compute == CUDNN_DATA_FLOAT);
  CHECK_CUDNN(cudnnSetConvolutionGroupCount(conv, 2));
  int groups = 0;
  CHECK_CUDNN(cudnnGetConvolutionGroupCount(conv, &groups));
  EXPECT(groups == 2);
  for (cudnnMathType_t math : {CUDNN_TENSOR_OP_MATH, CUDNN_FMA_MATH, CUDNN_DEFAULT_MATH}) {
    CHECK_CUDNN(cudnnSetConvolutionMathType(conv, math));
    cudnnMathType_t got;
    CHECK_CUDNN(cudnnGetConvolutionMathType(conv, &got));
    EXPECT(got == math);
  }
  // x 2 x 4 x 7 x 6, filter 6 x 2 x 3 x 2 (2 groups): 2 x 6 x 4 x 4.
  cudnnTensorDescriptor_t x = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, Packed(kNCHW, 2, 4, 7, 6));
  cudnnFilterDescriptor_t w = MakeFilter(CUDNN_DATA_FLOAT, kNCHW, Packed(kNCHW, 6, 2, 3, 2));
  int out[4];
  CHECK_CUDNN(
      cudnnGetConvolution2dForwardOutputDim(conv, x, w, &out[0], &out[1], &out[2], &out[3]));
  EXPECT(out[0] == 2 && out[1] == 6 && out[2] == 4 && out[3] == 4);
  const int pad[] = {0, 1}, stride[] = {1, 2}, dilation[] = {2, 1};
  CHECK_CUDNN(
      cudnnSetConvolutionNdDescriptor(conv, 2, pad, stride, dilation, kCross, CUDNN_DATA_DOUBLE));
  CHECK_CUDNN(cudnnSetConvolutionGroupCount(conv, 2));  // kept or not by SetNd: not documented
  int count = 0, got_pad[4], got_stride[4], got_dilation[4];
  CHECK_CUDNN(cudnnGetConvolutionNdDescriptor(conv, 4, &count, got_pad, got_stride, got_dilation,
                                              &mode, &compute));
  EXPECT(count == 2 && mode == kCross && compute == CUDNN_DATA_DOUBLE);
  for (int i = 0; i < 2; ++i) {
    EXPECT(got_pad[i] == pad[i] && got_stride[i] == stride[i] && got_dilation[i] == dilation[i]);
  }
  // Now H: 1 + (7 - 5) / 1 = 3, W: 1 + (6 + 2 - 2) / 2 = 4.
  CHECK_CUDNN(cudnnGetConvolutionNdForwardOutputDim(conv, x, w, 4, out));
  EXPECT(out[0] == 2 && out[1] == 6 && out[2] == 3 && out[3] == 4);
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(x));
  CHECK_CUDNN(cudnnDestroyFilterDescriptor(w));
  CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(conv));
  std::printf("convolution descriptors: 2-D and N-D, groups, math type, output dimensions\n");
}

// The descriptors of one convolution: y is the output of the forward direction (dy of the
// backward ones), x its input (dx), w the filter (dw).
struct ConvDescriptors {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
};

// The three directions, each as two inputs and an output: forward (x, w) -> y, backward data
// (w, dy) -> dx, backward filter (x, dy) -> dw.
struct Forward {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  using Algo = cudnnConvolutionFwdAlgo_t;
  static constexpr const char* kName = "ConvolutionForward";
  static cudnnStatus_t MaxCount(cudnnHandle_t h, int* count) {
    return cudnnGetConvolutionForwardAlgorithmMaxCount(h, count);
  }
  static cudnnStatus_t Heuristic(cudnnHandle_t h, const ConvDescriptors& d, int requested,
                                 int* returned, Perf* perf) {
    return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, requested, returned,
                                                  perf);
  }
  static cudnnStatus_t Find(cudnnHandle_t h, const ConvDescriptors& d, int requested, int* returned,
                            Perf* perf) {
    return cudnnFindConvolutionForwardAlgorithm(h, d.x, d.w, d.conv, d.y, requested, returned,
                                                perf);
  }
  static cudnnStatus_t FindEx(cudnnHandle_t h, const ConvDescriptors& d, const void* in1,
                              const void* in2, void* out, int requested, int* returned, Perf* perf,
                              void* workspace, size_t workspace_size) {
    return cudnnFindConvolutionForwardAlgorithmEx(h, d.x, in1, d.w, in2, d.conv, d.y, out,
                                                  requested, returned, perf, workspace,
                                                  workspace_size);
  }
  static cudnnStatus_t WorkspaceSize(cudnnHandle_t h, const ConvDescriptors& d, Algo algo,
                                     size_t* size) {
    return cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, algo, size);
  }
  static cudnnStatus_t Run(cudnnHandle_t h, const ConvDescriptors& d, const void* alpha,
                           const void* in1, const void* in2, Algo algo, void* workspace,
                           size_t workspace_size, const void* beta, void* out) {
    return cudnnConvolutionForward(h, alpha, d.x, in1, d.w, in2, d.conv, algo, workspace,
                                   workspace_size, beta, d.y, out);
  }
};

struct BackwardData {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  static constexpr const char* kName = "ConvolutionBackwardData";
  static cudnnStatus_t MaxCount(cudnnHandle_t h, int* count) {
    return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, count);
  }
  static cudnnStatus_t Heuristic(cudnnHandle_t h, const ConvDescriptors& d, int requested,
                                 int* returned, Perf* perf) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, requested,
                                                       returned, perf);
  }
  static cudnnStatus_t Find(cudnnHandle_t h, const ConvDescriptors& d, int requested, int* returned,
                            Perf* perf) {
    return cudnnFindConvolutionBackwardDataAlgorithm(h, d.w, d.y, d.conv, d.x, requested, returned,
                                                     perf);
  }
  static cudnnStatus_t FindEx(cudnnHandle_t h, const ConvDescriptors& d, const void* in1,
                              const void* in2, void* out, int requested, int* returned, Perf* perf,
                              void* workspace, size_t workspace_size) {
    return cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w, in1, d.y, in2, d.conv, d.x, out,
                                                       requested, returned, perf, workspace,
                                                       workspace_size);
  }
  static cudnnStatus_t WorkspaceSize(cudnnHandle_t h, const ConvDescriptors& d, Algo algo,
                                     size_t* size) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, algo, size);
  }
  static cudnnStatus_t Run(cudnnHandle_t h, const ConvDescriptors& d, const void* alpha,
                           const void* in1, const void* in2, Algo algo, void* workspace,
                           size_t workspace_size, const void* beta, void* out) {
    return cudnnConvolutionBackwardData(h, alpha, d.w, in1, d.y, in2, d.conv, algo, workspace,
                                        workspace_size, beta, d.x, out);
  }
};

struct BackwardFilter {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  static constexpr const char* kName = "ConvolutionBackwardFilter";
  static cudnnStatus_t MaxCount(cudnnHandle_t h, int* count) {
    return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, count);
  }
  static cudnnStatus_t Heuristic(cudnnHandle_t h, const ConvDescriptors& d, int requested,
                                 int* returned, Perf* perf) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, requested,
                                                         returned, perf);
  }
  static cudnnStatus_t Find(cudnnHandle_t h, const ConvDescriptors& d, int requested, int* returned,
                            Perf* perf) {
    return cudnnFindConvolutionBackwardFilterAlgorithm(h, d.x, d.y, d.conv, d.w, requested,
                                                       returned, perf);
  }
  static cudnnStatus_t FindEx(cudnnHandle_t h, const ConvDescriptors& d, const void* in1,
                              const void* in2, void* out, int requested, int* returned, Perf* perf,
                              void* workspace, size_t workspace_size) {
    return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x, in1, d.y, in2, d.conv, d.w, out,
                                                         requested, returned, perf, workspace,
                                                         workspace_size);
  }
  static cudnnStatus_t WorkspaceSize(cudnnHandle_t h, const ConvDescriptors& d, Algo algo,
                                     size_t* size) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, algo, size);
  }
  static cudnnStatus_t Run(cudnnHandle_t h, const ConvDescriptors& d, const void* alpha,
                           const void* in1, const void* in2, Algo algo, void* workspace,
                           size_t workspace_size, const void* beta, void* out) {
    return cudnnConvolutionBackwardFilter(h, alpha, d.x, in1, d.y, in2, d.conv, algo, workspace,
                                          workspace_size, beta, d.w, out);
  }
};

// How a convolution gets its algorithm: the heuristic (..._v7), Find (cuDNN's own buffers) or
// FindEx (the program's buffers, the output overwritten, and a workspace of kFindWorkspace bytes).
enum class Search { kHeuristic, kFind, kFindEx };
const size_t kFindWorkspace = 1 << 20;

// The algorithm cuDNN ranks first: at least one returned, the first with status success.
template <typename Direction>
typename Direction::Algo ChooseAlgorithm(cudnnHandle_t handle, const ConvDescriptors& d,
                                         Search search, const void* in1, const void* in2, void* out,
                                         const std::string& what) {
  int max_count = 0;
  CHECK_CUDNN(Direction::MaxCount(handle, &max_count));
  EXPECT(max_count >= 1);
  std::vector<typename Direction::Perf> perf(max_count);
  int count = 0;
  if (search == Search::kHeuristic) {
    CHECK_CUDNN(Direction::Heuristic(handle, d, max_count, &count, perf.data()));
  } else if (search == Search::kFind) {
    CHECK_CUDNN(Direction::Find(handle, d, max_count, &count, perf.data()));
  } else {
    void* workspace = nullptr;
    CHECK_CUDA(cudaMalloc(&workspace, kFindWorkspace));
    CHECK_CUDNN(Direction::FindEx(handle, d, in1, in2, out, max_count, &count, perf.data(),
                                  workspace, kFindWorkspace));
    CHECK_CUDA(cudaFree(workspace));
  }
  if (count < 1 || perf[0].status != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: %d algorithms, the first with status %s\n", what.c_str(), count,
                 count < 1 ? "(none)" : cudnnGetErrorString(perf[0].status));
    std::exit(1);
  }
  return perf[0].algo;
}

// One direction on the device with the algorithm `search` finds and the workspace it asks for,
// against alpha * sums + beta * before; `out` holds `before` when the call begins.
template <typename Direction, typename T>
void CheckDirection(cudnnHandle_t handle, const ConvDescriptors& d, Search search, const T* in1,
                    const T* in2, T* out, const std::vector<T>& before, Scale<T> alpha,
                    Scale<T> beta, const std::vector<double>& sums, const std::string& name) {
  const std::string what = name + ": " + Direction::kName;
  const auto algo = ChooseAlgorithm<Direction>(handle, d, search, in1, in2, out, what);
  size_t workspace_size = 0;
  CHECK_CUDNN(Direction::WorkspaceSize(handle, d, algo, &workspace_size));
  void* workspace = nullptr;
  if (workspace_size > 0) CHECK_CUDA(cudaMalloc(&workspace, workspace_size));
  Upload(out, before);
  CHECK_CUDNN(
      Direction::Run(handle, d, &alpha, in1, in2, algo, workspace, workspace_size, &beta, out));
  ExpectDevice(out, Blend(alpha, sums, beta, Widen(before)), Element<T>::kTolerance, what);
  CHECK_CUDA(cudaFree(workspace));
}

// A convolution to run in every direction: its problem, layout, how it finds its algorithm,
// which calls set its descriptors, and beta (alpha is 1.5).
struct ConvRun {
  const char* name;
  ConvProblem problem;
  cudnnTensorFormat_t format;
  Search search;
  Api api;
  double beta;
};

// Forward, backward data and backward filter of the convolution `d` describes, each against the
// CPU reference: taps(fn) calls fn(x, w, y offsets) for every product; extents are x's, w's and
// y's elements; alpha is 1.5.
template <typename T, typename Taps>
void CheckDirections(cudnnHandle_t handle, const ConvDescriptors& d, Search search, double beta,
                     const std::array<size_t, 3>& extents, Taps taps, const std::string& name) {
  const size_t x_extent = extents[0], w_extent = extents[1], y_extent = extents[2];
  const auto x = Values<T>(x_extent, 1), w = Values<T>(w_extent, 2), dy = Values<T>(y_extent, 3);
  const auto wide_x = Widen(x), wide_w = Widen(w), wide_dy = Widen(dy);
  std::vector<double> y_sums(y_extent), dx_sums(x_extent), dw_sums(w_extent);
  taps([&](size_t x_offset, size_t w_offset, size_t y_offset) {
    y_sums[y_offset] += wide_x[x_offset] * wide_w[w_offset];
    dx_sums[x_offset] += wide_dy[y_offset] * wide_w[w_offset];
    dw_sums[w_offset] += wide_x[x_offset] * wide_dy[y_offset];
  });
  const DeviceArray<T> dev_x(x), dev_w(w), dev_dy(dy);
  const DeviceArray<T> dev_y{std::vector<T>(y_extent)}, dev_dx{std::vector<T>(x_extent)};
  const DeviceArray<T> dev_dw{std::vector<T>(w_extent)};
  const Scale<T> alpha = 1.5, blend = beta;
  CheckDirection<Forward>(handle, d, search, dev_x.get(), dev_w.get(), dev_y.get(),
                          Before<T>(y_extent, blend, 4), alpha, blend, y_sums, name);
  CheckDirection<BackwardData>(handle, d, search, dev_w.get(), dev_dy.get(), dev_dx.get(),
                               Before<T>(x_extent, blend, 5), alpha, blend, dx_sums, name);
  CheckDirection<BackwardFilter>(handle, d, search, dev_x.get(), dev_dy.get(), dev_dw.get(),
                                 Before<T>(w_extent, blend, 6), alpha, blend, dw_sums, name);
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(d.x));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(d.y));
  CHECK_CUDNN(cudnnDestroyFilterDescriptor(d.w));
  CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(d.conv));
  std::printf("%s: forward, backward data and backward filter correct\n", name.c_str());
}

template <typename T>
void TestConvolution(cudnnHandle_t handle, const ConvRun& run) {
  const ConvProblem& p = run.problem;
  const std::string name = std::string(Element<T>::kName) + " " + run.name;
  const Layout xl = Packed(run.format, p.n, p.c, p.h, p.w);
  const Layout wl = Packed(run.format, p.k, p.c / p.groups, p.r, p.s);
  const Layout yl = Packed(run.format, p.n, p.k, p.OutH(), p.OutW());
  ConvDescriptors d;
  d.x = MakeTensor(Element<T>::kType, run.format, xl, run.api);
  d.w = MakeFilter(Element<T>::kType, run.format, wl, run.api);
  d.conv = MakeConvolution(p, Element<T>::kCompute, Element<T>::kMath, run.api);
  int out[4];
  if (run.api == Api::kNd) {
    CHECK_CUDNN(cudnnGetConvolutionNdForwardOutputDim(d.conv, d.x, d.w, 4, out));
  } else {
    CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &out[0], &out[1], &out[2],
                                                      &out[3]));
  }
  EXPECT(out[0] == yl.n && out[1] == yl.c && out[2] == yl.h && out[3] == yl.w);
  d.y = MakeTensor(Element<T>::kType, run.format, yl, run.api);
  CheckDirections<T>(
      handle, d, run.search, run.beta, {xl.Extent(), wl.Extent(), yl.Extent()},
      [&](auto fn) { ForEachTap(p, xl, wl, yl, fn); }, name);
}

// ---- 3-D convolutions ----

// A 5-D tensor descriptor: NCDHW through cudnnSetTensorNdDescriptor with the layout's strides,
// NDHWC through cudnnSetTensorNdDescriptorEx with the format (PyTorch uses both).
cudnnTensorDescriptor_t MakeTensor5(cudnnDataType_t type, cudnnTensorFormat_t format,
                                    const Layout5& l) {
  cudnnTensorDescriptor_t desc = nullptr;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&desc));
  if (format == kNHWC) {
    CHECK_CUDNN(cudnnSetTensorNdDescriptorEx(desc, format, type, 5, l.dims.data()));
  } else {
    CHECK_CUDNN(cudnnSetTensorNdDescriptor(desc, type, 5, l.dims.data(), l.strides.data()));
  }
  return desc;
}

cudnnFilterDescriptor_t MakeFilter5(cudnnDataType_t type, cudnnTensorFormat_t format,
                                    const Layout5& l) {
  cudnnFilterDescriptor_t desc = nullptr;
  CHECK_CUDNN(cudnnCreateFilterDescriptor(&desc));
  CHECK_CUDNN(cudnnSetFilterNdDescriptor(desc, type, format, 5, l.dims.data()));
  return desc;
}

cudnnConvolutionDescriptor_t MakeConvolution3d(const Conv3dProblem& p, cudnnDataType_t compute,
                                               cudnnMathType_t math) {
  cudnnConvolutionDescriptor_t conv = nullptr;
  CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
  CHECK_CUDNN(cudnnSetConvolutionNdDescriptor(conv, 3, p.pad.data(), p.stride.data(),
                                              p.dilation.data(), p.mode, compute));
  CHECK_CUDNN(cudnnSetConvolutionGroupCount(conv, p.groups));
  CHECK_CUDNN(cudnnSetConvolutionMathType(conv, math));
  return conv;
}

// A 3-D convolution to run in every direction: its problem, layout (NCHW: NCDHW, NHWC: NDHWC), how
// it finds its algorithm, and beta (alpha is 1.5).
struct Conv3dRun {
  const char* name;
  Conv3dProblem problem;
  cudnnTensorFormat_t format;
  Search search;
  double beta;
};

template <typename T>
void TestConvolution3d(cudnnHandle_t handle, const Conv3dRun& run) {
  const Conv3dProblem& p = run.problem;
  const std::string name = std::string(Element<T>::kName) + " 3-D " + run.name;
  const std::array<Layout5, 3> layouts = p.Layouts(run.format);
  const Layout5 &xl = layouts[0], &wl = layouts[1], &yl = layouts[2];
  ConvDescriptors d;
  d.x = MakeTensor5(Element<T>::kType, run.format, xl);
  d.w = MakeFilter5(Element<T>::kType, run.format, wl);
  d.conv = MakeConvolution3d(p, Element<T>::kCompute, Element<T>::kMath);
  Index5 out;
  CHECK_CUDNN(cudnnGetConvolutionNdForwardOutputDim(d.conv, d.x, d.w, 5, out.data()));
  EXPECT(out == yl.dims);
  d.y = MakeTensor5(Element<T>::kType, run.format, yl);
  CheckDirections<T>(
      handle, d, run.search, run.beta, {xl.Extent(), wl.Extent(), yl.Extent()},
      [&](auto fn) { ForEachTap(p, xl, wl, yl, fn); }, name);
}

// Padding, strides and dilation differing per dimension, groups, both modes, both layouts; f16
// and bf16 too.
void TestConvolutions3d(cudnnHandle_t handle) {
  TestConvolution3d<float>(handle, {"NCDHW", kDeep, kNCHW, Search::kHeuristic, 0});
  TestConvolution3d<float>(handle, {"NDHWC 2 groups, convolution mode (FindEx)", kDeepFlip, kNHWC,
                                    Search::kFindEx, 0.5});
  TestConvolution3d<__half>(
      handle, {"NCDHW 2 groups, convolution mode (Find)", kDeepFlip, kNCHW, Search::kFind, 0});
  TestConvolution3d<__nv_bfloat16>(handle, {"NDHWC", kDeep, kNHWC, Search::kHeuristic, -0.5});
}

// Every shape class in f32 NCHW; one each in NHWC and the other types.
void TestConvolutions(cudnnHandle_t handle) {
  const Search heuristic = Search::kHeuristic;
  const ConvRun f32_runs[] = {
      {"NCHW 3x3 pad 1", kPlain, kNCHW, heuristic, Api::k4d, 0},
      {"NCHW stride 2, 2x3 filter (Find)", kStrided, kNCHW, Search::kFind, Api::k4d, 0.5},
      {"NCHW dilation 2 (FindEx, N-D descriptors)", kDilated, kNCHW, Search::kFindEx, Api::kNd, 0},
      {"NCHW 2 groups", kGrouped, kNCHW, heuristic, Api::k4d, -0.5},
      {"NCHW convolution mode, 2x3 filter", kFlipped, kNCHW, heuristic, Api::k4d, 0},
      {"NHWC stride 2, 2x3 filter", kStrided, kNHWC, heuristic, Api::k4d, 0.5},
  };
  for (const ConvRun& run : f32_runs) TestConvolution<float>(handle, run);
  TestConvolution<double>(
      handle, {"NCHW convolution mode, 2x3 filter", kFlipped, kNCHW, heuristic, Api::k4d, 0.5});
  TestConvolution<__half>(handle, {"NCHW 2 groups", kGrouped, kNCHW, heuristic, Api::k4d, 0});
  TestConvolution<__nv_bfloat16>(
      handle, {"NCHW dilation 2 (N-D descriptors)", kDilated, kNCHW, heuristic, Api::kNd, 0.5});
}

// db = alpha * (dy summed over n, h, w) + beta * db.
void TestBackwardBias(cudnnHandle_t handle) {
  const Layout dyl = Packed(kNCHW, 2, 4, 5, 5), dbl = Packed(kNCHW, 1, 4, 1, 1);
  cudnnTensorDescriptor_t dy_desc = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, dyl);
  cudnnTensorDescriptor_t db_desc = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, dbl);
  const auto dy = Values<float>(dyl.Extent(), 7), db = Values<float>(dbl.Extent(), 8);
  std::vector<double> sums(dbl.Extent());
  ForEachElement(dyl, [&](int, int c, int, int, size_t offset) { sums[c] += dy[offset]; });
  float *dev_dy = ToDevice(dy), *dev_db = ToDevice(db);
  const float alpha = 1.5f, beta = 0.5f;
  CHECK_CUDNN(
      cudnnConvolutionBackwardBias(handle, &alpha, dy_desc, dev_dy, &beta, db_desc, dev_db));
  ExpectDevice(dev_db, Blend(alpha, sums, beta, Widen(db)), kParamTolerance,
               "ConvolutionBackwardBias");
  Free({dev_dy, dev_db});
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(dy_desc));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(db_desc));
  std::printf("ConvolutionBackwardBias correct\n");
}

// y = relu(alpha1 * conv(x, w) + alpha2 * z + bias), in f32 with IMPLICIT_PRECOMP_GEMM (the
// algorithm the documentation names for this call).
void TestConvolutionBiasActivation(cudnnHandle_t handle) {
  const ConvProblem& p = kPlain;
  const Layout xl = Packed(kNCHW, p.n, p.c, p.h, p.w), wl = Packed(kNCHW, p.k, p.c, p.r, p.s);
  const Layout yl = Packed(kNCHW, p.n, p.k, p.OutH(), p.OutW());
  const Layout bias_layout = Packed(kNCHW, 1, p.k, 1, 1);
  ConvDescriptors d;
  d.x = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, xl);
  d.w = MakeFilter(CUDNN_DATA_FLOAT, kNCHW, wl);
  d.y = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, yl);
  d.conv = MakeConvolution(p, CUDNN_DATA_FLOAT, Element<float>::kMath, Api::k4d);
  cudnnTensorDescriptor_t bias_desc = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, bias_layout);
  cudnnActivationDescriptor_t relu = MakeActivation(CUDNN_ACTIVATION_RELU, 0);
  const auto x = Values<float>(xl.Extent(), 1), w = Values<float>(wl.Extent(), 2);
  const auto z = Values<float>(yl.Extent(), 3), bias = Values<float>(bias_layout.Extent(), 4);
  std::vector<double> sums(yl.Extent());
  ForEachTap(p, xl, wl, yl, [&](size_t x_offset, size_t w_offset, size_t y_offset) {
    sums[y_offset] += static_cast<double>(x[x_offset]) * w[w_offset];
  });
  const float alpha1 = 1.5f, alpha2 = 0.5f;
  std::vector<double> want(yl.Extent());
  ForEachElement(yl, [&](int, int k, int, int, size_t offset) {
    want[offset] = std::max(0.0, alpha1 * sums[offset] + alpha2 * z[offset] + bias[k]);
  });
  const auto algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t workspace_size = 0;
  CHECK_CUDNN(Forward::WorkspaceSize(handle, d, algo, &workspace_size));
  void* workspace = nullptr;
  if (workspace_size > 0) CHECK_CUDA(cudaMalloc(&workspace, workspace_size));
  float *dev_x = ToDevice(x), *dev_w = ToDevice(w), *dev_z = ToDevice(z);
  float *dev_bias = ToDevice(bias), *dev_y = ToDevice(std::vector<float>(yl.Extent(), kNaN));
  CHECK_CUDNN(cudnnConvolutionBiasActivationForward(handle, &alpha1, d.x, dev_x, d.w, dev_w, d.conv,
                                                    algo, workspace, workspace_size, &alpha2, d.y,
                                                    dev_z, bias_desc, dev_bias, relu, d.y, dev_y));
  ExpectDevice(dev_y, want, Element<float>::kTolerance, "ConvolutionBiasActivationForward");
  Free({dev_x, dev_w, dev_z, dev_bias, dev_y, workspace});
  CHECK_CUDNN(cudnnDestroyActivationDescriptor(relu));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(bias_desc));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(d.x));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(d.y));
  CHECK_CUDNN(cudnnDestroyFilterDescriptor(d.w));
  CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(d.conv));
  std::printf("ConvolutionBiasActivationForward (ReLU) correct\n");
}

// ---- Tensor operations ----

// AddTensor with a 1 x C x 1 x 1 bias broadcast and with a tensor of C's shape; SetTensor and
// ScaleTensor on a tensor with padded rows, whose gaps they leave alone.
void TestTensorOps(cudnnHandle_t handle) {
  const Layout cl = Packed(kNCHW, 2, 4, 3, 3), bias_layout = Packed(kNCHW, 1, 4, 1, 1);
  cudnnTensorDescriptor_t c_desc = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, cl);
  cudnnTensorDescriptor_t bias_desc = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, bias_layout);
  const auto c = Values<float>(cl.Extent(), 1), bias = Values<float>(bias_layout.Extent(), 2);
  const auto a = Values<float>(cl.Extent(), 3);
  float *dev_c = ToDevice(c), *dev_bias = ToDevice(bias), *dev_a = ToDevice(a);
  const float alpha = 1.5f, beta = 0.5f;
  CHECK_CUDNN(cudnnAddTensor(handle, &alpha, bias_desc, dev_bias, &beta, c_desc, dev_c));
  std::vector<double> broadcast(cl.Extent());
  ForEachElement(cl, [&](int, int ic, int, int, size_t offset) { broadcast[offset] = bias[ic]; });
  auto want = Blend(alpha, broadcast, beta, Widen(c));
  ExpectDevice(dev_c, want, Element<float>::kTolerance, "AddTensor (bias broadcast)");
  const float minus_half = -0.5f, one = 1;
  CHECK_CUDNN(cudnnAddTensor(handle, &minus_half, c_desc, dev_a, &one, c_desc, dev_c));
  want = Blend(minus_half, Widen(a), one, want);
  ExpectDevice(dev_c, want, Element<float>::kTolerance, "AddTensor (same shape)");

  const Layout padded = {2, 3, 4, 5, 3 * 4 * 8, 4 * 8, 8, 1};
  cudnnTensorDescriptor_t padded_desc = nullptr;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&padded_desc));
  CHECK_CUDNN(cudnnSetTensor4dDescriptorEx(padded_desc, CUDNN_DATA_FLOAT, 2, 3, 4, 5,
                                           padded.n_stride, padded.c_stride, padded.h_stride,
                                           padded.w_stride));
  const float gap = 7;
  float* dev_padded = ToDevice(std::vector<float>(padded.Extent(), gap));
  const float value = 0.25f, factor = -2;
  CHECK_CUDNN(cudnnSetTensor(handle, padded_desc, dev_padded, &value));
  std::vector<double> set(padded.Extent(), gap);
  ForEachElement(padded, [&](int, int, int, int, size_t offset) { set[offset] = value; });
  ExpectDevice(dev_padded, set, 0, "SetTensor (padded rows)");
  CHECK_CUDNN(cudnnScaleTensor(handle, padded_desc, dev_padded, &factor));
  ForEachElement(padded, [&](int, int, int, int, size_t offset) { set[offset] *= factor; });
  ExpectDevice(dev_padded, set, 0, "ScaleTensor (padded rows)");
  Free({dev_c, dev_bias, dev_a, dev_padded});
  for (auto desc : {c_desc, bias_desc, padded_desc})
    CHECK_CUDNN(cudnnDestroyTensorDescriptor(desc));
  std::printf("AddTensor, SetTensor, ScaleTensor correct\n");
}

// TransformTensor from NCHW into NHWC (blended); OpTensor's ADD with a broadcast B, MUL over
// NaN (beta = 0), MAX and SQRT, its descriptor read back, and NOT refused as unsupported.
void TestTransformAndOpTensor(cudnnHandle_t handle) {
  const Layout nchw = Packed(kNCHW, 2, 3, 4, 5), nhwc = Packed(kNHWC, 2, 3, 4, 5);
  cudnnTensorDescriptor_t x_desc = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, nchw);
  cudnnTensorDescriptor_t y_desc = MakeTensor(CUDNN_DATA_FLOAT, kNHWC, nhwc);
  const auto x = Values<float>(nchw.Extent(), 4), y = Values<float>(nhwc.Extent(), 5);
  float *dev_x = ToDevice(x), *dev_y = ToDevice(y);
  const float alpha = 1.5f, beta = 0.5f;
  CHECK_CUDNN(cudnnTransformTensor(handle, &alpha, x_desc, dev_x, &beta, y_desc, dev_y));
  std::vector<double> moved(nhwc.Extent());
  ForEachElement(nchw, [&](int n, int c, int h, int w, size_t offset) {
    moved[nhwc.At(n, c, h, w)] = x[offset];
  });
  ExpectDevice(dev_y, Blend(alpha, moved, beta, Widen(y)), Element<float>::kTolerance,
               "TransformTensor (NCHW into NHWC)");

  const Layout cl = Packed(kNCHW, 2, 4, 3, 3), bl = Packed(kNCHW, 1, 4, 1, 1);
  cudnnTensorDescriptor_t c_desc = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, cl);
  cudnnTensorDescriptor_t b_desc = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, bl);
  std::vector<float> a = Values<float>(cl.Extent(), 6);
  for (float& v : a) v += 1;  // in [0, 2]: SQRT takes it
  const auto b = Values<float>(bl.Extent(), 7), c = Values<float>(cl.Extent(), 8);
  float *dev_a = ToDevice(a), *dev_b = ToDevice(b), *dev_c = ToDevice(c);
  cudnnOpTensorDescriptor_t op = nullptr;
  CHECK_CUDNN(cudnnCreateOpTensorDescriptor(&op));
  struct OpCase {
    cudnnOpTensorOp_t op;
    const char* name;
    double (*apply)(double, double);
    float alpha1, alpha2, beta;
  };
  const OpCase cases[] = {
      {CUDNN_OP_TENSOR_ADD, "ADD", [](double p, double q) { return p + q; }, 1.5f, -1, 0.5f},
      {CUDNN_OP_TENSOR_MUL, "MUL", [](double p, double q) { return p * q; }, 1, 2, 0},
      {CUDNN_OP_TENSOR_MAX, "MAX", [](double p, double q) { return std::max(p, q); }, 1, 1, 1},
      {CUDNN_OP_TENSOR_SQRT, "SQRT", [](double p, double) { return std::sqrt(p); }, 2, 0, 0},
  };
  for (const OpCase& k : cases) {
    CHECK_CUDNN(cudnnSetOpTensorDescriptor(op, k.op, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN));
    const std::vector<float> before = k.beta == 0 ? std::vector<float>(cl.Extent(), kNaN) : c;
    Upload(dev_c, before);
    CHECK_CUDNN(cudnnOpTensor(handle, op, &k.alpha1, c_desc, dev_a, &k.alpha2, b_desc, dev_b,
                              &k.beta, c_desc, dev_c));
    std::vector<double> want(cl.Extent());
    ForEachElement(cl, [&](int, int ic, int, int, size_t offset) {
      want[offset] = k.apply(double{k.alpha1} * a[offset], double{k.alpha2} * b[ic]) +
                     (k.beta == 0 ? 0 : k.beta * double{before[offset]});
    });
    ExpectDevice(dev_c, want, Element<float>::kTolerance, k.name);
  }
  cudnnOpTensorOp_t got_op;
  cudnnDataType_t got_type;
  cudnnNanPropagation_t got_nan;
  CHECK_CUDNN(cudnnGetOpTensorDescriptor(op, &got_op, &got_type, &got_nan));
  EXPECT(got_op == CUDNN_OP_TENSOR_SQRT && got_type == CUDNN_DATA_FLOAT &&
         got_nan == CUDNN_NOT_PROPAGATE_NAN);
  const float one = 1, zero = 0;
  CHECK_CUDNN(cudnnSetOpTensorDescriptor(op, CUDNN_OP_TENSOR_NOT, CUDNN_DATA_FLOAT,
                                         CUDNN_NOT_PROPAGATE_NAN));
  const cudnnStatus_t refused =
      cudnnOpTensor(handle, op, &one, c_desc, dev_a, &one, b_desc, dev_b, &zero, c_desc, dev_c);
  EXPECT(refused == CUDNN_STATUS_SUCCESS || IsNotSupported(refused));
  CHECK_CUDNN(cudnnDestroyOpTensorDescriptor(op));
  Free({dev_x, dev_y, dev_a, dev_b, dev_c});
  for (auto desc : {x_desc, y_desc, c_desc, b_desc}) CHECK_CUDNN(cudnnDestroyTensorDescriptor(desc));
  std::printf("TransformTensor, OpTensor correct\n");
}

// ---- Activations ----

void TestActivationDescriptor() {
  cudnnActivationDescriptor_t desc = MakeActivation(CUDNN_ACTIVATION_CLIPPED_RELU, 6);
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  double coef = 0;
  CHECK_CUDNN(cudnnGetActivationDescriptor(desc, &mode, &nan, &coef));
  EXPECT(mode == CUDNN_ACTIVATION_CLIPPED_RELU && nan == CUDNN_NOT_PROPAGATE_NAN && coef == 6);
  CHECK_CUDNN(cudnnSetActivationDescriptorSwishBeta(desc, 1.5));
  double swish_beta = 0;
  CHECK_CUDNN(cudnnGetActivationDescriptorSwishBeta(desc, &swish_beta));
  EXPECT(swish_beta == 1.5);
  CHECK_CUDNN(cudnnDestroyActivationDescriptor(desc));
  std::printf("activation descriptor read back\n");
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// f(x) and f'(x) of an activation.
double Activate(cudnnActivationMode_t mode, double coef, double x) {
  switch (mode) {
    case CUDNN_ACTIVATION_SIGMOID:
      return Sigmoid(x);
    case CUDNN_ACTIVATION_RELU:
      return std::max(x, 0.0);
    case CUDNN_ACTIVATION_TANH:
      return std::tanh(x);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
      return std::min(std::max(x, 0.0), coef);
    case CUDNN_ACTIVATION_ELU:
      return x > 0 ? x : coef * (std::exp(x) - 1);
    case CUDNN_ACTIVATION_SWISH:
      return x * Sigmoid(coef * x);
    default:
      std::abort();
  }
}
double Slope(cudnnActivationMode_t mode, double coef, double x) {
  switch (mode) {
    case CUDNN_ACTIVATION_SIGMOID:
      return Sigmoid(x) * (1 - Sigmoid(x));
    case CUDNN_ACTIVATION_RELU:
      return x > 0;
    case CUDNN_ACTIVATION_TANH:
      return 1 - std::tanh(x) * std::tanh(x);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
      return x > 0 && x < coef;
    case CUDNN_ACTIVATION_ELU:
      return x > 0 ? 1 : coef * std::exp(x);
    case CUDNN_ACTIVATION_SWISH: {
      const double s = Sigmoid(coef * x);
      return s + coef * x * s * (1 - s);
    }
    default:
      std::abort();
  }
}

struct ActivationCase {
  const char* name;
  cudnnActivationMode_t mode;
  double coef;
  bool blend;  // beta != 0 in both directions, and alpha != 1
};

// Forward into NaN (alpha 1, beta 0), then backward from that y; a blending case runs backward
// with alpha 0.5 and beta 0.75, then forward again onto y with those. The descriptor is N-D.
template <typename T>
void TestActivation(cudnnHandle_t handle, const ActivationCase& a) {
  const std::string name = std::string(Element<T>::kName) + " " + a.name;
  const Layout l = Packed(kNCHW, 2, 3, 4, 5);
  cudnnTensorDescriptor_t desc = MakeTensor(Element<T>::kType, kNCHW, l, Api::kNd);
  cudnnActivationDescriptor_t act = MakeActivation(a.mode, a.coef);
  const auto x = OffGrid<T>(l.Extent(), 9), dy = Values<T>(l.Extent(), 10);
  const auto wide_x = Widen(x), wide_dy = Widen(dy);
  std::vector<double> f(l.Extent()), dy_slope(l.Extent());
  for (size_t i = 0; i < f.size(); ++i) {
    f[i] = Activate(a.mode, a.coef, wide_x[i]);
    dy_slope[i] = wide_dy[i] * Slope(a.mode, a.coef, wide_x[i]);
  }
  T *dev_x = ToDevice(x), *dev_dy = ToDevice(dy);
  T* dev_y = ToDevice(std::vector<T>(l.Extent(), static_cast<T>(kNaN)));
  const Scale<T> one = 1, zero = 0, alpha = a.blend ? 0.5 : 1, beta = a.blend ? 0.75 : 0;
  CHECK_CUDNN(cudnnActivationForward(handle, act, &one, desc, dev_x, &zero, desc, dev_y));
  ExpectDevice(dev_y, f, Element<T>::kTolerance, name + ": ActivationForward");
  const auto dx_before = Before<T>(l.Extent(), beta, 11);
  T* dev_dx = ToDevice(dx_before);
  CHECK_CUDNN(cudnnActivationBackward(handle, act, &alpha, desc, dev_y, desc, dev_dy, desc, dev_x,
                                      &beta, desc, dev_dx));
  ExpectDevice(dev_dx, Blend(alpha, dy_slope, beta, Widen(dx_before)), Element<T>::kTolerance,
               name + ": ActivationBackward");
  if (a.blend) {
    const auto y_before = Widen(ToHost(dev_y, l.Extent()));
    CHECK_CUDNN(cudnnActivationForward(handle, act, &alpha, desc, dev_x, &beta, desc, dev_y));
    ExpectDevice(dev_y, Blend(alpha, f, beta, y_before), Element<T>::kTolerance,
                 name + ": ActivationForward (blending)");
  }
  Free({dev_x, dev_dy, dev_y, dev_dx});
  CHECK_CUDNN(cudnnDestroyActivationDescriptor(act));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(desc));
  std::printf("%s: activation forward and backward correct\n", name.c_str());
}

void TestActivations(cudnnHandle_t handle) {
  const ActivationCase cases[] = {
      {"sigmoid", CUDNN_ACTIVATION_SIGMOID, 0, false},
      {"relu", CUDNN_ACTIVATION_RELU, 0, false},
      {"tanh", CUDNN_ACTIVATION_TANH, 0, true},
      {"clipped relu (0.5)", CUDNN_ACTIVATION_CLIPPED_RELU, 0.5, false},
      {"elu (1.0)", CUDNN_ACTIVATION_ELU, 1.0, false},
      {"swish (beta 1.0)", CUDNN_ACTIVATION_SWISH, 1.0, false},
  };
  for (const ActivationCase& a : cases) TestActivation<float>(handle, a);
  TestActivation<__half>(handle, cases[0]);
}

// ---- Pooling ----

struct PoolCase {
  const char* name;
  cudnnPoolingMode_t mode;
  int window, pad, stride;
  Api api;      // the descriptor set through Set2d or SetNd
  double beta;  // of the backward call
};

// Calls fn(y offset, the x offsets under its window) for every output; padding is no element.
template <typename Fn>
void ForEachWindow(const PoolCase& p, const Layout& x, const Layout& y, Fn fn) {
  ForEachElement(y, [&](int n, int c, int oh, int ow, size_t y_offset) {
    std::vector<size_t> inputs;
    for (int ih = oh * p.stride - p.pad; ih < oh * p.stride - p.pad + p.window; ++ih) {
      for (int iw = ow * p.stride - p.pad; iw < ow * p.stride - p.pad + p.window; ++iw) {
        if (ih >= 0 && ih < x.h && iw >= 0 && iw < x.w) inputs.push_back(x.At(n, c, ih, iw));
      }
    }
    fn(y_offset, inputs);
  });
}

cudnnPoolingDescriptor_t MakePooling(const PoolCase& p) {
  cudnnPoolingDescriptor_t desc = nullptr;
  CHECK_CUDNN(cudnnCreatePoolingDescriptor(&desc));
  if (p.api == Api::kNd) {
    const int window[] = {p.window, p.window}, pad[] = {p.pad, p.pad};
    const int stride[] = {p.stride, p.stride};
    CHECK_CUDNN(
        cudnnSetPoolingNdDescriptor(desc, p.mode, CUDNN_NOT_PROPAGATE_NAN, 2, window, pad, stride));
  } else {
    CHECK_CUDNN(cudnnSetPooling2dDescriptor(desc, p.mode, CUDNN_NOT_PROPAGATE_NAN, p.window,
                                            p.window, p.pad, p.pad, p.stride, p.stride));
  }
  cudnnPoolingMode_t mode;
  cudnnNanPropagation_t nan;
  int got[6];
  CHECK_CUDNN(cudnnGetPooling2dDescriptor(desc, &mode, &nan, &got[0], &got[1], &got[2], &got[3],
                                          &got[4], &got[5]));
  EXPECT(mode == p.mode && nan == CUDNN_NOT_PROPAGATE_NAN);
  EXPECT(got[0] == p.window && got[1] == p.window && got[2] == p.pad && got[3] == p.pad &&
         got[4] == p.stride && got[5] == p.stride);
  return desc;
}

// Forward (alpha 1, beta 0 into NaN), then backward from that y with the case's beta (alpha 1.5);
// x holds distinct values, so every max window has one maximum, to which its gradient goes.
void TestPool(cudnnHandle_t handle, const PoolCase& p) {
  const std::string name = std::string("f32 ") + p.name;
  const Layout xl = Packed(kNCHW, 2, 3, 7, 7);
  cudnnTensorDescriptor_t x_desc = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, xl);
  cudnnPoolingDescriptor_t pool = MakePooling(p);
  const int out_h = 1 + (xl.h + 2 * p.pad - p.window) / p.stride;
  const int out_w = 1 + (xl.w + 2 * p.pad - p.window) / p.stride;
  int out[4];
  CHECK_CUDNN(cudnnGetPooling2dForwardOutputDim(pool, x_desc, &out[0], &out[1], &out[2], &out[3]));
  EXPECT(out[0] == xl.n && out[1] == xl.c && out[2] == out_h && out[3] == out_w);
  const Layout yl = Packed(kNCHW, xl.n, xl.c, out_h, out_w);
  cudnnTensorDescriptor_t y_desc = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, yl);

  const auto x = Distinct(xl.Extent());
  const auto dy = Values<float>(yl.Extent(), 12);
  std::vector<double> y(yl.Extent()), dx(xl.Extent());
  ForEachWindow(p, xl, yl, [&](size_t y_offset, const std::vector<size_t>& inputs) {
    if (p.mode == CUDNN_POOLING_MAX) {
      const size_t at = *std::max_element(inputs.begin(), inputs.end(),
                                          [&](size_t a, size_t b) { return x[a] < x[b]; });
      y[y_offset] = x[at];
      dx[at] += dy[y_offset];
      return;
    }
    const double divisor = p.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                               ? p.window * p.window
                               : static_cast<double>(inputs.size());
    for (size_t i : inputs) {
      y[y_offset] += x[i] / divisor;
      dx[i] += dy[y_offset] / divisor;
    }
  });
  float *dev_x = ToDevice(x), *dev_dy = ToDevice(dy);
  float* dev_y = ToDevice(std::vector<float>(yl.Extent(), kNaN));
  const float one = 1, zero = 0, alpha = 1.5f, beta = p.beta;
  CHECK_CUDNN(cudnnPoolingForward(handle, pool, &one, x_desc, dev_x, &zero, y_desc, dev_y));
  ExpectDevice(dev_y, y, Element<float>::kTolerance, name + ": PoolingForward");
  const auto dx_before = Before<float>(xl.Extent(), beta, 13);
  float* dev_dx = ToDevice(dx_before);
  CHECK_CUDNN(cudnnPoolingBackward(handle, pool, &alpha, y_desc, dev_y, y_desc, dev_dy, x_desc,
                                   dev_x, &beta, x_desc, dev_dx));
  ExpectDevice(dev_dx, Blend(alpha, dx, beta, Widen(dx_before)), Element<float>::kTolerance,
               name + ": PoolingBackward");
  Free({dev_x, dev_dy, dev_y, dev_dx});
  CHECK_CUDNN(cudnnDestroyPoolingDescriptor(pool));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(x_desc));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(y_desc));
  std::printf("%s: pooling forward and backward correct\n", name.c_str());
}

void TestPooling(cudnnHandle_t handle) {
  const PoolCase cases[] = {
      {"max 3x3 pad 1 stride 2", CUDNN_POOLING_MAX, 3, 1, 2, Api::k4d, 0},
      {"average with padding 3x3 pad 1 stride 2 (N-D descriptor)",
       CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, 3, 1, 2, Api::kNd, 0},
      {"average without padding 3x3 pad 1 stride 2", CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, 3,
       1, 2, Api::k4d, 0.5},
      {"max 2x2 stride 2", CUDNN_POOLING_MAX, 2, 0, 2, Api::k4d, 0.5},
  };
  for (const PoolCase& p : cases) TestPool(handle, p);
}

// ---- Softmax ----

struct SoftmaxCase {
  const char* name;
  cudnnSoftmaxAlgorithm_t algo;
  cudnnSoftmaxMode_t mode;
  double beta;  // of the backward call
};

// Forward (alpha 1, beta 0 into NaN), then backward from that y with the case's beta (alpha 1.5).
// FAST and ACCURATE give softmax, LOG its logarithm; INSTANCE normalizes each image's c, h, w
// together, CHANNEL each pixel's c.
template <typename T>
void TestSoftmaxCase(cudnnHandle_t handle, const SoftmaxCase& s) {
  const std::string name = std::string(Element<T>::kName) + " " + s.name;
  const Layout l = Packed(kNCHW, 2, 4, 2, 3);
  cudnnTensorDescriptor_t desc = MakeTensor(Element<T>::kType, kNCHW, l);
  const bool instance = s.mode == CUDNN_SOFTMAX_MODE_INSTANCE;
  const auto groups = GroupBy(l, instance ? l.n : l.n * l.h * l.w, [&](int n, int, int h, int w) {
    return instance ? n : (n * l.h + h) * l.w + w;
  });
  const auto x = Values<T>(l.Extent(), 14), dy = Values<T>(l.Extent(), 15);
  const auto wide_x = Widen(x), wide_dy = Widen(dy);
  std::vector<double> y(l.Extent());
  for (const auto& group : groups) {
    double max = -std::numeric_limits<double>::infinity(), sum = 0;
    for (size_t i : group) max = std::max(max, wide_x[i]);
    for (size_t i : group) sum += std::exp(wide_x[i] - max);
    for (size_t i : group) {
      y[i] = s.algo == CUDNN_SOFTMAX_LOG ? wide_x[i] - max - std::log(sum)
                                         : std::exp(wide_x[i] - max) / sum;
    }
  }
  T *dev_x = ToDevice(x), *dev_dy = ToDevice(dy);
  T* dev_y = ToDevice(std::vector<T>(l.Extent(), static_cast<T>(kNaN)));
  const float one = 1, zero = 0, alpha = 1.5f, beta = s.beta;
  CHECK_CUDNN(cudnnSoftmaxForward(handle, s.algo, s.mode, &one, desc, dev_x, &zero, desc, dev_y));
  ExpectDevice(dev_y, y, Element<T>::kTolerance, name + ": SoftmaxForward");
  // The gradient from the y cuDNN gave: y (dy - sum(dy y)), or for LOG dy - exp(y) sum(dy).
  const auto got_y = Widen(ToHost(dev_y, l.Extent()));
  std::vector<double> dx(l.Extent());
  for (const auto& group : groups) {
    double sum = 0;
    for (size_t i : group) sum += s.algo == CUDNN_SOFTMAX_LOG ? wide_dy[i] : wide_dy[i] * got_y[i];
    for (size_t i : group) {
      dx[i] = s.algo == CUDNN_SOFTMAX_LOG ? wide_dy[i] - std::exp(got_y[i]) * sum
                                          : got_y[i] * (wide_dy[i] - sum);
    }
  }
  const auto dx_before = Before<T>(l.Extent(), beta, 16);
  T* dev_dx = ToDevice(dx_before);
  CHECK_CUDNN(cudnnSoftmaxBackward(handle, s.algo, s.mode, &alpha, desc, dev_y, desc, dev_dy, &beta,
                                   desc, dev_dx));
  ExpectDevice(dev_dx, Blend(alpha, dx, beta, Widen(dx_before)), Element<T>::kTolerance,
               name + ": SoftmaxBackward");
  Free({dev_x, dev_dy, dev_y, dev_dx});
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(desc));
  std::printf("%s: softmax forward and backward correct\n", name.c_str());
}

void TestSoftmax(cudnnHandle_t handle) {
  const SoftmaxCase cases[] = {
      {"fast, channel", CUDNN_SOFTMAX_FAST, CUDNN_SOFTMAX_MODE_CHANNEL, 0},
      {"accurate, instance", CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, 0.5},
      {"log, channel", CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_CHANNEL, 0},
      {"log, instance", CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_INSTANCE, 0},
  };
  for (const SoftmaxCase& s : cases) TestSoftmaxCase<float>(handle, s);
  TestSoftmaxCase<__half>(
      handle, {"accurate, channel", CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, 0});
}

// ---- Batch normalization ----

const double kEpsilon = 1e-5;
const double kAverageFactor = 0.25;

// A batch's statistics for each parameter over the elements it normalizes: the mean, the biased
// variance, 1 / sqrt(variance + epsilon).
struct BatchStats {
  std::vector<double> mean, variance, inv_std;
};

BatchStats Statistics(const std::vector<std::vector<size_t>>& groups,
                      const std::vector<double>& x) {
  BatchStats stats;
  for (const auto& group : groups) {
    double sum = 0, squares = 0;
    for (size_t i : group) sum += x[i];
    const double mean = sum / group.size();
    for (size_t i : group) squares += (x[i] - mean) * (x[i] - mean);
    stats.mean.push_back(mean);
    stats.variance.push_back(squares / group.size());
    stats.inv_std.push_back(1 / std::sqrt(squares / group.size() + kEpsilon));
  }
  return stats;
}

// Training (which also updates the running mean and unbiased variance, and saves the mean and
// inverse deviation), inference from the running statistics, and backward with the saved
// statistics and without them; T data with f32 parameters.
template <typename T>
void TestBatchNorm(cudnnHandle_t handle, cudnnBatchNormMode_t mode, const Layout& xl,
                   const char* mode_name) {
  const std::string name = std::string(Element<T>::kName) + " batch norm " + mode_name;
  const bool spatial = mode == CUDNN_BATCHNORM_SPATIAL;
  cudnnTensorDescriptor_t x_desc = MakeTensor(Element<T>::kType, kNCHW, xl);
  cudnnTensorDescriptor_t param_desc = nullptr;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&param_desc));
  CHECK_CUDNN(cudnnDeriveBNTensorDescriptor(param_desc, x_desc, mode));
  ExpectDims(param_desc, CUDNN_DATA_FLOAT, 1, xl.c, spatial ? 1 : xl.h, spatial ? 1 : xl.w);
  const size_t params = spatial ? xl.c : static_cast<size_t>(xl.c) * xl.h * xl.w;
  const auto groups = GroupBy(xl, params, [&](int, int c, int h, int w) {
    return spatial ? c : (c * xl.h + h) * xl.w + w;
  });
  const auto x = Values<T>(xl.Extent(), 17), dy = Values<T>(xl.Extent(), 18);
  const auto scale = Values<float>(params, 19), bias = Values<float>(params, 20);
  const auto running_mean = Values<float>(params, 21);
  std::vector<float> running_var(params);
  for (size_t i = 0; i < params; ++i) running_var[i] = 1.25f + running_mean[i];
  const auto wide_x = Widen(x), wide_dy = Widen(dy);
  const BatchStats stats = Statistics(groups, wide_x);

  T *dev_x = ToDevice(x), *dev_dy = ToDevice(dy);
  T* dev_y = ToDevice(std::vector<T>(xl.Extent(), static_cast<T>(kNaN)));
  float *dev_scale = ToDevice(scale), *dev_bias = ToDevice(bias);
  float *dev_running_mean = ToDevice(running_mean), *dev_running_var = ToDevice(running_var);
  float* dev_saved_mean = ToDevice(std::vector<float>(params, kNaN));
  float* dev_saved_inv_std = ToDevice(std::vector<float>(params, kNaN));
  const float one = 1, zero = 0;
  CHECK_CUDNN(cudnnBatchNormalizationForwardTraining(
      handle, mode, &one, &zero, x_desc, dev_x, x_desc, dev_y, param_desc, dev_scale, dev_bias,
      kAverageFactor, dev_running_mean, dev_running_var, kEpsilon, dev_saved_mean,
      dev_saved_inv_std));
  std::vector<double> y(xl.Extent()), new_mean(params), new_var(params);
  for (size_t p = 0; p < params; ++p) {
    for (size_t i : groups[p]) {
      y[i] = scale[p] * (wide_x[i] - stats.mean[p]) * stats.inv_std[p] + bias[p];
    }
    const double m = groups[p].size();
    new_mean[p] = (1 - kAverageFactor) * running_mean[p] + kAverageFactor * stats.mean[p];
    new_var[p] =
        (1 - kAverageFactor) * running_var[p] + kAverageFactor * stats.variance[p] * m / (m - 1);
  }
  ExpectDevice(dev_y, y, Element<T>::kTolerance, name + ": ForwardTraining y");
  ExpectDevice(dev_running_mean, new_mean, kParamTolerance,
               name + ": ForwardTraining running mean");
  ExpectDevice(dev_running_var, new_var, kParamTolerance,
               name + ": ForwardTraining running variance (unbiased)");
  ExpectDevice(dev_saved_mean, stats.mean, kParamTolerance, name + ": ForwardTraining saved mean");
  ExpectDevice(dev_saved_inv_std, stats.inv_std, kParamTolerance,
               name + ": ForwardTraining saved inverse deviation");

  // Inference from the running statistics just updated, blending onto y.
  const auto estimated_mean = Widen(ToHost(dev_running_mean, params));
  const auto estimated_var = Widen(ToHost(dev_running_var, params));
  const auto y_before = Values<T>(xl.Extent(), 22);
  Upload(dev_y, y_before);
  const float half = 0.5f;
  CHECK_CUDNN(cudnnBatchNormalizationForwardInference(
      handle, mode, &one, &half, x_desc, dev_x, x_desc, dev_y, param_desc, dev_scale, dev_bias,
      dev_running_mean, dev_running_var, kEpsilon));
  for (size_t p = 0; p < params; ++p) {
    for (size_t i : groups[p]) {
      y[i] = scale[p] * (wide_x[i] - estimated_mean[p]) / std::sqrt(estimated_var[p] + kEpsilon) +
             bias[p];
    }
  }
  ExpectDevice(dev_y, Blend(1, y, 0.5, Widen(y_before)), Element<T>::kTolerance,
               name + ": ForwardInference");

  // Backward: dbias = sum(dy), dscale = sum(dy xhat),
  // dx = scale inv_std (dy - dbias / m - xhat dscale / m).
  std::vector<double> dx(xl.Extent()), dscale(params), dbias(params);
  for (size_t p = 0; p < params; ++p) {
    const double m = groups[p].size();
    for (size_t i : groups[p]) {
      dbias[p] += wide_dy[i];
      dscale[p] += wide_dy[i] * (wide_x[i] - stats.mean[p]) * stats.inv_std[p];
    }
    for (size_t i : groups[p]) {
      const double xhat = (wide_x[i] - stats.mean[p]) * stats.inv_std[p];
      dx[i] = scale[p] * stats.inv_std[p] * (wide_dy[i] - dbias[p] / m - xhat * dscale[p] / m);
    }
  }
  T* dev_dx = ToDevice(std::vector<T>(xl.Extent()));
  float* dev_dscale = ToDevice(std::vector<float>(params));
  float* dev_dbias = ToDevice(std::vector<float>(params));
  // With the saved statistics: dx computed fresh (NaN before), dscale and dbias blended.
  const auto param_before = Values<float>(params, 23);
  Upload(dev_dx, std::vector<T>(xl.Extent(), static_cast<T>(kNaN)));
  Upload(dev_dscale, param_before);
  Upload(dev_dbias, param_before);
  CHECK_CUDNN(cudnnBatchNormalizationBackward(
      handle, mode, &one, &zero, &one, &half, x_desc, dev_x, x_desc, dev_dy, x_desc, dev_dx,
      param_desc, dev_scale, dev_dscale, dev_dbias, kEpsilon, dev_saved_mean, dev_saved_inv_std));
  ExpectDevice(dev_dx, dx, Element<T>::kTolerance, name + ": Backward dx (saved statistics)");
  ExpectDevice(dev_dscale, Blend(1, dscale, 0.5, Widen(param_before)), kParamTolerance,
               name + ": Backward dscale (saved statistics)");
  ExpectDevice(dev_dbias, Blend(1, dbias, 0.5, Widen(param_before)), kParamTolerance,
               name + ": Backward dbias (saved statistics)");
  // Without them (cuDNN computes them again): dx blended, dscale and dbias fresh.
  const auto dx_before = Values<T>(xl.Extent(), 24);
  Upload(dev_dx, dx_before);
  Upload(dev_dscale, std::vector<float>(params, kNaN));
  Upload(dev_dbias, std::vector<float>(params, kNaN));
  const float quarter = 0.25f;
  CHECK_CUDNN(cudnnBatchNormalizationBackward(
      handle, mode, &half, &quarter, &one, &zero, x_desc, dev_x, x_desc, dev_dy, x_desc, dev_dx,
      param_desc, dev_scale, dev_dscale, dev_dbias, kEpsilon, nullptr, nullptr));
  ExpectDevice(dev_dx, Blend(0.5, dx, 0.25, Widen(dx_before)), Element<T>::kTolerance,
               name + ": Backward dx (no saved statistics)");
  ExpectDevice(dev_dscale, dscale, kParamTolerance,
               name + ": Backward dscale (no saved statistics)");
  ExpectDevice(dev_dbias, dbias, kParamTolerance, name + ": Backward dbias (no saved statistics)");

  Free({dev_x, dev_dy, dev_y, dev_scale, dev_bias, dev_running_mean, dev_running_var,
        dev_saved_mean, dev_saved_inv_std, dev_dx, dev_dscale, dev_dbias});
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(x_desc));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(param_desc));
  std::printf("%s: training, inference and backward correct\n", name.c_str());
}

void TestBatchNorms(cudnnHandle_t handle) {
  TestBatchNorm<float>(handle, CUDNN_BATCHNORM_SPATIAL, Packed(kNCHW, 2, 3, 4, 4), "spatial");
  TestBatchNorm<float>(handle, CUDNN_BATCHNORM_PER_ACTIVATION, Packed(kNCHW, 4, 2, 2, 3),
                       "per activation");
  TestBatchNorm<__half>(handle, CUDNN_BATCHNORM_SPATIAL, Packed(kNCHW, 2, 3, 4, 4), "spatial");
}

// ---- Library, handle, bad input ----

void TestLibrary(cudnnHandle_t handle, cudaStream_t stream) {
  EXPECT(cudnnGetVersion() >= 90000);
  EXPECT(cudnnGetCudartVersion() >= 12000);
  int major = 0;
  CHECK_CUDNN(cudnnGetProperty(MAJOR_VERSION, &major));
  EXPECT(major == 9);
  EXPECT(std::string(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM)) == "CUDNN_STATUS_BAD_PARAM");
  cudnnHandle_t second = nullptr;
  CHECK_CUDNN(cudnnCreate(&second));
  EXPECT(second != nullptr && second != handle);
  CHECK_CUDNN(cudnnDestroy(second));
  CHECK_CUDNN(cudnnSetStream(handle, stream));
  cudaStream_t got = nullptr;
  CHECK_CUDNN(cudnnGetStream(handle, &got));
  EXPECT(got == stream);
  std::printf("cuDNN %zu (CUDA runtime %zu): version, property, handles, stream\n",
              cudnnGetVersion(), cudnnGetCudartVersion());
}

// The documented statuses for bad input, checked by category; none of these computes anything.
void TestBadInput(cudnnHandle_t handle) {
  EXPECT(IsBadParam(cudnnCreate(nullptr)));
  EXPECT(IsBadParam(cudnnSetStream(nullptr, nullptr)));
  cudnnTensorDescriptor_t bad = nullptr;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&bad));
  EXPECT(IsBadParam(cudnnSetTensor4dDescriptor(bad, kNCHW, CUDNN_DATA_FLOAT, 2, -3, 4, 4)));
  EXPECT(IsBadParam(cudnnSetTensor4dDescriptor(bad, kNCHW, CUDNN_DATA_FLOAT, 2, 3, 0, 4)));

  // kPlain's descriptors, and ones that do not fit them.
  const ConvProblem& p = kPlain;
  const Layout xl = Packed(kNCHW, p.n, p.c, p.h, p.w), wl = Packed(kNCHW, p.k, p.c, p.r, p.s);
  const Layout yl = Packed(kNCHW, p.n, p.k, p.OutH(), p.OutW());
  ConvDescriptors d;
  d.x = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, xl);
  d.w = MakeFilter(CUDNN_DATA_FLOAT, kNCHW, wl);
  d.y = MakeTensor(CUDNN_DATA_FLOAT, kNCHW, yl);
  d.conv = MakeConvolution(p, CUDNN_DATA_FLOAT, Element<float>::kMath, Api::k4d);
  float* dev = ToDevice(std::vector<float>(1024));
  const float one = 1, zero = 0;
  const auto algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  EXPECT(IsBadParam(cudnnConvolutionForward(nullptr, &one, d.x, dev, d.w, dev, d.conv, algo,
                                            nullptr, 0, &zero, d.y, dev)));
  // x with one channel more than the filter has.
  cudnnTensorDescriptor_t x_extra_channel =
      MakeTensor(CUDNN_DATA_FLOAT, kNCHW, Packed(kNCHW, p.n, p.c + 1, p.h, p.w));
  EXPECT(IsBadParam(cudnnConvolutionForward(handle, &one, x_extra_channel, dev, d.w, dev, d.conv,
                                            algo, nullptr, 0, &zero, d.y, dev)));
  // y (dy) a row taller than the convolution's output: the backward-data documentation says bad
  // parameter; the forward one lists it among the unsupported cases, so either counts there.
  cudnnTensorDescriptor_t y_extra_row =
      MakeTensor(CUDNN_DATA_FLOAT, kNCHW, Packed(kNCHW, p.n, p.k, p.OutH() + 1, p.OutW()));
  const cudnnStatus_t forward = cudnnConvolutionForward(handle, &one, d.x, dev, d.w, dev, d.conv,
                                                        algo, nullptr, 0, &zero, y_extra_row, dev);
  EXPECT(IsBadParam(forward) || IsNotSupported(forward));
  EXPECT(IsBadParam(cudnnConvolutionBackwardData(handle, &one, d.w, dev, y_extra_row, dev, d.conv,
                                                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, nullptr, 0,
                                                 &zero, d.x, dev)));

  // A 3-D convolution of those 4-D tensors; a 2-D one of 5-D tensors; a 3-D one whose dy is a
  // plane deeper than its output, or whose filter is 4-D.
  cudnnConvolutionDescriptor_t deep =
      MakeConvolution3d(kDeep, CUDNN_DATA_FLOAT, Element<float>::kMath);
  int out[5];
  EXPECT(IsBadParam(cudnnGetConvolutionNdForwardOutputDim(deep, d.x, d.w, 5, out)));
  EXPECT(IsBadParam(cudnnConvolutionForward(handle, &one, d.x, dev, d.w, dev, deep, algo, nullptr,
                                            0, &zero, d.y, dev)));
  const std::array<Layout5, 3> deep_layouts = kDeep.Layouts(kNCHW);
  cudnnTensorDescriptor_t x5 = MakeTensor5(CUDNN_DATA_FLOAT, kNCHW, deep_layouts[0]);
  cudnnFilterDescriptor_t w5 = MakeFilter5(CUDNN_DATA_FLOAT, kNCHW, deep_layouts[1]);
  cudnnTensorDescriptor_t y5 = MakeTensor5(CUDNN_DATA_FLOAT, kNCHW, deep_layouts[2]);
  EXPECT(IsBadParam(cudnnConvolutionForward(handle, &one, x5, dev, w5, dev, d.conv, algo, nullptr,
                                            0, &zero, y5, dev)));
  Index5 deeper = deep_layouts[2].dims;
  ++deeper[2];
  cudnnTensorDescriptor_t y5_deeper = MakeTensor5(CUDNN_DATA_FLOAT, kNCHW, Packed5(kNCHW, deeper));
  EXPECT(IsBadParam(cudnnConvolutionBackwardData(handle, &one, w5, dev, y5_deeper, dev, deep,
                                                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, nullptr, 0,
                                                 &zero, x5, dev)));
  EXPECT(IsBadParam(cudnnConvolutionBackwardFilter(handle, &one, x5, dev, y5, dev, deep,
                                                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr, 0,
                                                   &zero, d.w, dev)));
  CHECK_CUDNN(cudnnDestroyFilterDescriptor(w5));
  CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(deep));

  CHECK_CUDA(cudaFree(dev));
  for (auto desc : {bad, d.x, d.y, x_extra_channel, y_extra_row, x5, y5, y5_deeper})
    CHECK_CUDNN(cudnnDestroyTensorDescriptor(desc));
  CHECK_CUDNN(cudnnDestroyFilterDescriptor(d.w));
  CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(d.conv));
  std::printf("bad input: the documented statuses\n");
}

}  // namespace

int main() {
  cudnnHandle_t handle = nullptr;
  CHECK_CUDNN(cudnnCreate(&handle));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  TestLibrary(handle, stream);
  TestTensorDescriptors();
  TestFilterDescriptors();
  TestConvolutionDescriptors();
  TestActivationDescriptor();
  TestConvolutions(handle);
  TestConvolutions3d(handle);
  TestBackwardBias(handle);
  TestConvolutionBiasActivation(handle);
  TestTensorOps(handle);
  TestTransformAndOpTensor(handle);
  TestActivations(handle);
  TestPooling(handle);
  TestSoftmax(handle);
  TestBatchNorms(handle);
  TestBadInput(handle);
  CHECK_CUDNN(cudnnDestroy(handle));
  CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf("CUDNN OK\n");
  return 0;
}
