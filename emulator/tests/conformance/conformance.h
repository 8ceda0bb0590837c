// The emulator's conformance suite as data: every case names a kernel of one theme module
// (kernels/THEME.cu, compiled to PTX by nvcc and by NVRTC), its launch shape, how to build its
// arguments, and a CPU reference that says what each output buffer must hold. The conformance
// test runs every case on the emulator; the transformation semantics test reuses the same
// cases to compare the sliced and PTB forms with the original.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace tally::emu::conformance {

struct Dim {
  unsigned x = 1, y = 1, z = 1;
};

// How a texture object samples (CUDA_TEXTURE_DESC's fields that cases vary); the address mode
// applies to every dimension, values are cuda.h's CUaddress_mode.
enum class AddressMode : uint8_t { kWrap = 0, kClamp = 1, kMirror = 2, kBorder = 3 };
struct Sampler {
  bool linear = false;      // CU_TR_FILTER_MODE_LINEAR (else point)
  AddressMode address = AddressMode::kClamp;
  bool normalized = false;  // CU_TRSF_NORMALIZED_COORDINATES
  float border = 0;         // every channel of the border color
};

// A 2-D CUDA array of one-channel float texels behind a texture or surface object argument.
struct Image {
  uint32_t width = 0, height = 0;
  bool surface = false;  // a CUsurfObject (else a CUtexObject sampled with `sampler`)
  Sampler sampler;
};

// One kernel argument: a device buffer with its initial contents, a scalar value, or a texture
// or surface object over a CUDA array whose texels are `bytes` (row-major floats).
struct Arg {
  bool is_buffer = false;
  std::vector<uint8_t> bytes;
  std::optional<Image> image;
};

template <typename T>
Arg In(const std::vector<T>& values) {
  Arg arg;
  arg.is_buffer = true;
  arg.bytes.resize(values.size() * sizeof(T));
  std::memcpy(arg.bytes.data(), values.data(), arg.bytes.size());
  return arg;
}
template <typename T>
Arg Out(size_t count, T fill = T{}) {
  return In(std::vector<T>(count, fill));
}
// A CUtexObject over a width x (texels / width) array holding `texels`.
inline Arg Texture2D(const std::vector<float>& texels, uint32_t width, Sampler sampler) {
  Arg arg = In(texels);
  arg.is_buffer = false;
  arg.image = Image{width, static_cast<uint32_t>(texels.size() / width), false, sampler};
  return arg;
}
// A CUsurfObject over such an array; after a run, the argument's bytes are the array's texels.
inline Arg Surface2D(const std::vector<float>& texels, uint32_t width) {
  Arg arg = Texture2D(texels, width, {});
  arg.image->surface = true;
  return arg;
}
template <typename T>
Arg Value(T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  Arg arg;
  arg.bytes.resize(sizeof(T));
  std::memcpy(arg.bytes.data(), &value, sizeof(T));
  return arg;
}

// Typed views of argument bytes: the initial arguments (for references) or the buffers after
// a run.
class Values {
 public:
  explicit Values(std::vector<std::vector<uint8_t>> bytes) : bytes_(std::move(bytes)) {}
  template <typename T>
  std::vector<T> Get(size_t arg) const {
    std::vector<T> values(bytes_.at(arg).size() / sizeof(T));
    std::memcpy(values.data(), bytes_[arg].data(), values.size() * sizeof(T));
    return values;
  }
  template <typename T>
  T Scalar(size_t arg) const {
    return Get<T>(arg).at(0);
  }
  const std::vector<uint8_t>& Bytes(size_t arg) const { return bytes_.at(arg); }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<std::vector<uint8_t>> bytes_;
};

// What a run produced: every argument's bytes after the kernel (scalars unchanged), and the
// lines the kernel printed.
struct Outputs {
  Values args;
  std::vector<std::string> printed;
};

// The expectations a case's reference registers; Check() lists every violation (empty: pass).
class Expect {
 public:
  // Bit-exact, element by element (floating point included: bit patterns compare, except that
  // NaN payloads are free).
  template <typename T>
  void Equal(size_t arg, std::vector<T> expected);
  // Floating point within max(abs, rel * |expected|); NaN matches NaN of either sign.
  template <typename T>
  void Near(size_t arg, std::vector<T> expected, double rel, double abs = 0.0);
  // Near with a bound per column: the results interleave bounds.size() values per thread and
  // element i is held to bounds[i % bounds.size()] = {rel, abs}.
  template <typename T>
  void NearColumns(size_t arg, std::vector<T> expected,
                   std::vector<std::pair<double, double>> bounds);
  // The same elements in any order: results whose order depends on scheduling.
  template <typename T>
  void SameElements(size_t arg, std::vector<T> expected);
  // The printed lines, in any order (threads print concurrently).
  void Printed(std::vector<std::string> lines);
  // Any other property of the outputs: `check` returns what is wrong (empty: nothing).
  void Satisfies(std::function<std::string(const Values& outputs)> check);

  std::string Check(const Outputs& outputs) const;

 private:
  using Checker = std::function<void(const Outputs&, std::string&)>;
  std::vector<Checker> checkers_;
};

struct Case {
  const char* module = "";  // theme: kernels/MODULE.cu
  const char* kernel = "";  // extern "C" __global__ name
  const char* covers = "";  // the issue 3 feature(s) the case exercises
  Dim grid, block;
  uint32_t dynamic_shared = 0;
  bool cooperative = false;  // launched with cuLaunchCooperativeKernel (grid-wide sync)
  std::function<std::vector<Arg>()> args;                    // seeded: the same every call
  std::function<void(const Values& in, Expect&)> reference;  // `in`: the initial arguments
  // Output order depends on how blocks and warps are scheduled (e.g. atomicExch results): the
  // reference is order-free, and transformed forms are compared through it, not bytewise.
  bool order_dependent = false;
  // When the transformation analysis must refuse the kernel: a substring of its reason for
  // each form (nullptr: the form must be made).
  const char* slice_refusal = nullptr;
  const char* ptb_refusal = nullptr;
};

// Every registered case, in theme order (themes.def, generated by CMake).
const std::vector<Case>& AllCases();

// PTX modules: one per theme and producer, built at build time.
extern const char* const kProducers[];  // "nvcc", "nvrtc"
std::string ModulePath(const std::string& producer, const std::string& module);

// Random inputs with a fixed seed (integers: inclusive range).
template <typename T>
std::vector<T> Random(size_t count, T lo, T hi, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> values(count);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<T> dist(lo, hi);
    for (T& v : values) v = dist(rng);
  } else {
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    std::uniform_int_distribution<Wide> dist(lo, hi);
    for (T& v : values) v = static_cast<T>(dist(rng));
  }
  return values;
}

// `values` with its first elements replaced by `edges` (the interesting corner cases).
template <typename T>
std::vector<T> WithEdges(std::vector<T> values, std::initializer_list<std::type_identity_t<T>> edges) {
  std::copy(edges.begin(), edges.end(), values.begin());
  return values;
}

// Threads in a launch shape.
inline size_t Threads(Dim grid, Dim block) {
  return size_t{grid.x} * grid.y * grid.z * block.x * block.y * block.z;
}

}  // namespace tally::emu::conformance

#include "emulator/tests/conformance/expect_inl.h"
