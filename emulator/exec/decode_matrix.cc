// Decoding of the warp-level matrix instructions (PTX ISA, "Warp Level Matrix Multiply-
// Accumulate Instructions"): wmma.load/store/mma, mma.sync, ldmatrix, stmatrix and movmatrix.
// Each becomes one kMatrix instruction whose MatrixInst lists the fragments' registers and, per
// lane and element, the element's place in its matrix, so that execution (matrix_ops.cc) is a
// table-driven gather and scatter. Forms outside the tables below fail the load.
//
// Fragment layouts: mma.sync, ldmatrix/stmatrix and movmatrix use the layouts the PTX ISA
// documents ("Matrix Fragments for mma.m16n8k16" & co., "ldmatrix"). For wmma the ISA leaves the
// layout unspecified ("the mapping of matrix elements into fragments is unspecified"); ours is
// linear: element e of lane l holds element (l * elements + e) mod (rows * cols) of the matrix
// in row-major order, so the f16 multiplicand fragments (16 elements per lane whatever the shape)
// hold every element one, two or four times. Only wmma.load, wmma.mma and element-wise code can
// observe it, and those work with any layout.
#include <functional>

#include "emulator/exec/decoder.h"

namespace tally::emu::exec::internal {
namespace {

struct Shape {
  uint16_t m, n, k;
};
constexpr std::pair<std::string_view, Shape> kShapes[] = {
    {"m16n16k16", {16, 16, 16}}, {"m32n8k16", {32, 8, 16}}, {"m8n32k16", {8, 32, 16}},
    {"m16n16k8", {16, 16, 8}},   {"m8n8k4", {8, 8, 4}},     {"m16n8k4", {16, 8, 4}},
    {"m16n8k8", {16, 8, 8}},     {"m16n8k16", {16, 8, 16}}, {"m16n8k32", {16, 8, 32}},
    {"m8n8k16", {8, 8, 16}},
};

using E = MatrixElement;
constexpr std::pair<std::string_view, MatrixElement> kElements[] = {
    {"f16", E::kF16}, {"bf16", E::kBF16}, {"tf32", E::kTF32}, {"f32", E::kF32},
    {"f64", E::kF64}, {"s8", E::kS8},     {"u8", E::kU8},     {"s32", E::kS32},
};
constexpr std::pair<std::string_view, bool> kLayouts[] = {{"row", false}, {"col", true}};

// The implemented forms: multiplicand type, shapes, accumulator (C and D) types. Integer
// multiplicands may mix .s8 and .u8.
struct Form {
  MatrixElement multiplicand;
  std::array<std::string_view, 3> shapes;
  std::array<MatrixElement, 2> accumulators;
};
// PTX ISA "wmma.load", "wmma.mma": the dense forms (not the sub-byte .s4/.u4/.b1 ones).
constexpr Form kWmmaForms[] = {
    {E::kF16, {"m16n16k16", "m32n8k16", "m8n32k16"}, {E::kF16, E::kF32}},
    {E::kBF16, {"m16n16k16", "m32n8k16", "m8n32k16"}, {E::kF32, E::kF32}},
    {E::kS8, {"m16n16k16", "m32n8k16", "m8n32k16"}, {E::kS32, E::kS32}},
    {E::kU8, {"m16n16k16", "m32n8k16", "m8n32k16"}, {E::kS32, E::kS32}},
    {E::kTF32, {"m16n16k8"}, {E::kF32, E::kF32}},
    {E::kF64, {"m8n8k4"}, {E::kF64, E::kF64}},
};
// PTX ISA "mma": the .row.col forms of one MMA per warp (not m8n8k4 .f16, which computes four).
constexpr Form kMmaForms[] = {
    {E::kF16, {"m16n8k8", "m16n8k16"}, {E::kF16, E::kF32}},
    {E::kBF16, {"m16n8k8", "m16n8k16"}, {E::kF32, E::kF32}},
    {E::kTF32, {"m16n8k4", "m16n8k8"}, {E::kF32, E::kF32}},
    {E::kF64, {"m8n8k4"}, {E::kF64, E::kF64}},
    {E::kS8, {"m8n8k16", "m16n8k16", "m16n8k32"}, {E::kS32, E::kS32}},
    {E::kU8, {"m8n8k16", "m16n8k16", "m16n8k32"}, {E::kS32, E::kS32}},
};

// Which form (if any) has this multiplicand type (nullopt: any), shape and accumulator type.
template <size_t N>
bool HasForm(const Form (&forms)[N], std::optional<MatrixElement> multiplicand,
             std::string_view shape, std::optional<MatrixElement> accumulator) {
  for (const Form& form : forms) {
    if (multiplicand && form.multiplicand != *multiplicand) continue;
    bool shape_ok = false, type_ok = !accumulator;
    for (std::string_view s : form.shapes) shape_ok |= s == shape;
    for (MatrixElement a : form.accumulators) type_ok |= accumulator && a == *accumulator;
    if (shape_ok && type_ok) return true;
  }
  return false;
}

Type RegisterType(MatrixElement e) {
  return e == E::kF32 ? Type::kF32 : e == E::kF64 ? Type::kF64 : Type::kB32;
}

enum class Role { kA, kB, kC };

// (row, col) of element i of `lane` in an mma.sync fragment (PTX ISA, "Matrix Fragments for
// mma.m16n8k*" / "mma.m8n8k*"): lanes form 8 groups of 4; a 32-bit register holds `per`
// consecutive k-elements, and A's rows beyond 8 (m16) come before its next k-block.
std::pair<int, int> MmaPosition(Role role, int m, int per, int lane, int i) {
  const int group = lane >> 2, in_group = lane & 3;
  switch (role) {
    case Role::kA: {
      const int row_blocks = m / 8;
      return {group + 8 * ((i / per) % row_blocks),
              per * in_group + i % per + 4 * per * (i / (per * row_blocks))};
    }
    case Role::kB:
      return {per * in_group + i % per + 4 * per * (i / per), group};
    case Role::kC:
      break;
  }
  return {group + 8 * (i / 2), 2 * in_group + i % 2};
}

// Element e of lane l in an 8x8 .b16 matrix fragment (PTX ISA, "ldmatrix"): register e / 2
// holds matrix e / 2; lane l holds row l / 4, columns 2 * (l % 4) and the next one. Transposed:
// the same of the transposed matrix. Matrices stack vertically (row 8 * j + r of the stack is
// row r of matrix j, whose address ldmatrix takes from lane 8 * j + r).
std::pair<int, int> EightByEightPosition(bool transposed, int lane, int e) {
  const int matrix = e / 2, row = lane >> 2, col = 2 * (lane & 3) + e % 2;
  return transposed ? std::pair{8 * matrix + col, row} : std::pair{8 * matrix + row, col};
}

}  // namespace

// Decodes one matrix instruction into the Decoder's Inst (op, address, stride) and a MatrixInst.
class MatrixDecoder {
 public:
  explicit MatrixDecoder(Decoder& decoder)
      : decoder_(decoder),
        in_(decoder.in_),
        mods_(decoder.mods_),
        context_(decoder.context_),
        inst_(decoder.inst_) {}

  absl::Status Decode() {
    const std::string& op = in_.opcode;
    if (op == "wmma") return Wmma();
    if (op == "mma") return Mma();
    if (op == "movmatrix") return Movmatrix();
    return MatrixTransfer(op == "stmatrix");
  }

 private:
  absl::Status Fail(std::string_view why) const { return decoder_.Fail(why); }
  const ptx::Operand& Operand(size_t i) const { return decoder_.Operand(i); }
  absl::Status Arity(size_t n) const { return decoder_.Arity(n); }
  absl::Status Wmma();
  absl::Status Mma();
  absl::Status MatrixTransfer(bool store);
  absl::Status Movmatrix();
  template <size_t N, typename FragmentFn>
  absl::Status MmaOperands(const Form (&forms)[N], std::string_view shape_name,
                           const std::vector<MatrixElement>& types, FragmentFn fragment,
                           Shape shape, MatrixInst matrix);
  absl::StatusOr<MatrixFragment> Fragment(
      const ptx::Operand& operand, bool is_dest, MatrixElement element, int rows, int cols,
      int elements_per_lane, const std::function<std::pair<int, int>(int, int)>& position);
  absl::StatusOr<MatrixFragment> WmmaFragment(const ptx::Operand& operand, bool is_dest,
                                              MatrixElement element, Role role, int rows,
                                              int cols);
  void EmitMatrix(MatrixInst matrix);
  std::optional<std::string_view> TakeShapeName();
  static Shape ShapeOf(std::string_view name);

  Decoder& decoder_;
  const ptx::Instruction& in_;
  Mods& mods_;
  LowerContext& context_;
  Inst& inst_;
};

// Registers of a fragment operand `{r0, r1, ...}` (or one register), with its element layout.
absl::StatusOr<MatrixFragment> MatrixDecoder::Fragment(
    const ptx::Operand& operand, bool is_dest, MatrixElement element, int rows, int cols,
    int elements_per_lane, const std::function<std::pair<int, int>(int, int)>& position) {
  std::vector<ptx::Operand> single;
  const std::vector<ptx::Operand>* registers = &operand.elements;
  if (operand.kind != ptx::Operand::Kind::kVector) {
    single.push_back(operand);
    registers = &single;
  }
  MatrixFragment fragment;
  fragment.element = element;
  fragment.rows = static_cast<uint16_t>(rows);
  fragment.cols = static_cast<uint16_t>(cols);
  fragment.elements_per_lane = static_cast<uint16_t>(elements_per_lane);
  const int per_register = MatrixElementsPerRegister(element);
  if (registers->size() * per_register != static_cast<size_t>(elements_per_lane)) {
    return Fail("expected " + std::to_string(elements_per_lane / per_register) +
                " registers in a fragment, got " + std::to_string(registers->size()));
  }
  for (const ptx::Operand& reg : *registers) {
    if (reg.negated) return Fail("negated fragment register");
    TALLY_ASSIGN_OR_RETURN(uint32_t slot, is_dest ? context_.Dest(reg)
                                                  : context_.Source(reg, RegisterType(element)));
    fragment.slots.push_back(slot);
  }
  for (int lane = 0; lane < 32; ++lane) {
    for (int e = 0; e < elements_per_lane; ++e) {
      auto [row, col] = position(lane, e);
      fragment.index.push_back(static_cast<uint16_t>(row * cols + col));
    }
  }
  return fragment;
}

// The wmma fragment layout (see the file comment) for a rows x cols operand.
absl::StatusOr<MatrixFragment> MatrixDecoder::WmmaFragment(const ptx::Operand& operand, bool is_dest,
                                                     MatrixElement element, Role role,
                                                     int rows, int cols) {
  // f16 multiplicands take eight f16x2 registers in every shape (PTX ISA, "wmma.load").
  const bool replicated = element == E::kF16 && role != Role::kC;
  const int elements = replicated ? 16 : rows * cols / 32;
  return Fragment(operand, is_dest, element, rows, cols, elements, [&](int lane, int e) {
    const int linear = (lane * elements + e) % (rows * cols);
    return std::pair{linear / cols, linear % cols};
  });
}

void MatrixDecoder::EmitMatrix(MatrixInst matrix) {
  inst_.op = Op::kMatrix;
  std::vector<MatrixInst>& insts = context_.function().matrix_insts;
  inst_.target = static_cast<uint32_t>(insts.size());
  insts.push_back(std::move(matrix));
}

// wmma.load.{a,b,c}.sync.aligned.layout.shape{.ss}.type r, [p]{, stride};
// wmma.store.d.sync.aligned.layout.shape{.ss}.type [p], r{, stride};
// wmma.mma.sync.aligned.alayout.blayout.shape.dtype{.atype.btype}.ctype{.satfinite} d, a, b, c;
absl::Status MatrixDecoder::Wmma() {
  const bool load = mods_.Take("load");
  const bool store = !load && mods_.Take("store");
  MatrixInst matrix;
  if (load || store) {
    Role role = Role::kC;
    if (load && mods_.Take("a")) {
      role = Role::kA;
    } else if (load && mods_.Take("b")) {
      role = Role::kB;
    } else if (!mods_.Take(load ? "c" : "d")) {
      return Fail("wmma.load needs .a, .b or .c; wmma.store needs .d");
    }
    auto column_major = mods_.TakeOne(kLayouts);
    auto shape_name = TakeShapeName();
    auto element = mods_.TakeOne(kElements);
    if (!column_major || !shape_name || !element) return Fail("needs a layout, shape and type");
    const bool multiplicand = role != Role::kC;
    if (!HasForm(kWmmaForms, multiplicand ? element : std::nullopt, *shape_name,
                 multiplicand ? std::nullopt : element)) {
      return Fail("this wmma shape and type are not implemented");
    }
    const Shape shape = ShapeOf(*shape_name);
    inst_.space = mods_.Take("shared::cta") ? Space::kShared : mods_.TakeSpace();
    if (inst_.space != Space::kGeneric && inst_.space != Space::kGlobal &&
        inst_.space != Space::kShared) {
      return Fail("wmma accesses generic, .global or .shared memory");
    }
    const int rows = role == Role::kB ? shape.k : shape.m;
    const int cols = role == Role::kA ? shape.k : shape.n;
    if (in_.operands.size() != 2 && in_.operands.size() != 3) return Fail("bad wmma operands");
    TALLY_ASSIGN_OR_RETURN(
        matrix.fragments[0],
        WmmaFragment(Operand(load ? 0 : 1), load, *element, role, rows, cols));
    TALLY_ASSIGN_OR_RETURN(LowerContext::Address address, context_.AddressOf(Operand(load ? 1 : 0)));
    inst_.address = address.base;
    inst_.offset = address.offset;
    // The stride counts elements between row (or column) starts; by default the matrix's own
    // row (column) length.
    if (in_.operands.size() == 3) {
      TALLY_ASSIGN_OR_RETURN(inst_.src[0], context_.Source(Operand(2), Type::kU32));
    } else {
      inst_.src[0] = context_.Constant(static_cast<uint64_t>(*column_major ? rows : cols));
    }
    matrix.kind = load ? MatrixKind::kWmmaLoad : MatrixKind::kWmmaStore;
    matrix.column_major = *column_major;
    EmitMatrix(std::move(matrix));
    return absl::OkStatus();
  }
  if (!mods_.Take("mma")) return Fail("unknown wmma operation");
  // The layouts say how the fragments were loaded; ours do not depend on it.
  if (!mods_.TakeOne(kLayouts) || !mods_.TakeOne(kLayouts)) return Fail("needs two layouts");
  auto shape_name = TakeShapeName();
  if (!shape_name) return Fail("missing shape");
  std::vector<MatrixElement> types;
  while (auto type = mods_.TakeOne(kElements)) types.push_back(*type);
  if (types.size() == 2) types = {types[0], E::kF16, E::kF16, types[1]};  // .dtype.ctype: f16
  if (types.size() != 4) return Fail("needs .dtype.ctype or .dtype.atype.btype.ctype");
  if (types[3] == E::kF64) mods_.Take("rn");  // f64's default (and only implemented) rounding
  const Shape shape = ShapeOf(*shape_name);
  auto fragment = [&](size_t i, Role role, int rows, int cols) {
    return WmmaFragment(Operand(i), i == 0, types[i], role, rows, cols);
  };
  return MmaOperands(kWmmaForms, *shape_name, types, fragment, shape, std::move(matrix));
}

// mma.sync.aligned.shape.row.col.dtype.atype.btype.ctype{.satfinite} d, a, b, c;
absl::Status MatrixDecoder::Mma() {
  if (mods_.Take("sp")) return Fail("sparse mma (mma.sp) is not implemented");
  auto shape_name = TakeShapeName();
  if (!shape_name) return Fail("missing or unimplemented shape");
  if (!mods_.Take("row") || !mods_.Take("col")) return Fail("only .row.col is implemented");
  std::vector<MatrixElement> types;
  while (auto type = mods_.TakeOne(kElements)) types.push_back(*type);
  if (types.size() != 4) return Fail("needs .dtype.atype.btype.ctype");
  const Shape shape = ShapeOf(*shape_name);
  auto fragment = [&](size_t i, Role role, int rows, int cols) {
    const int per = MatrixElementsPerRegister(types[i]);
    return Fragment(Operand(i), i == 0, types[i], rows, cols, rows * cols / 32,
                    [&](int lane, int e) { return MmaPosition(role, shape.m, per, lane, e); });
  };
  return MmaOperands(kMmaForms, *shape_name, types, fragment, shape, MatrixInst{});
}

// The checks and operands wmma.mma and mma.sync share: types {d, a, b, c} of an implemented
// form, and the fragments d (M x N), a (M x K), b (K x N), c (M x N).
template <size_t N, typename FragmentFn>
absl::Status MatrixDecoder::MmaOperands(const Form (&forms)[N], std::string_view shape_name,
                                  const std::vector<MatrixElement>& types, FragmentFn fragment,
                                  Shape shape, MatrixInst matrix) {
  const bool integer = IsIntegerElement(types[1]);
  if (types[0] != types[3] && (integer || types[0] == E::kF64)) {
    return Fail("C and D types differ");
  }
  if (!HasForm(forms, types[1], shape_name, types[0]) ||
      !HasForm(forms, types[2], shape_name, types[3]) ||
      (!integer && types[1] != types[2]) || (integer && !IsIntegerElement(types[2]))) {
    return Fail("this shape and type combination is not implemented");
  }
  matrix.satfinite = mods_.Take("satfinite");
  if (matrix.satfinite && !integer) return Fail(".satfinite on floating-point operands");
  TALLY_RETURN_IF_ERROR(Arity(4));
  matrix.kind = MatrixKind::kMma;
  TALLY_ASSIGN_OR_RETURN(matrix.fragments[0], fragment(0, Role::kC, shape.m, shape.n));
  TALLY_ASSIGN_OR_RETURN(matrix.fragments[1], fragment(1, Role::kA, shape.m, shape.k));
  TALLY_ASSIGN_OR_RETURN(matrix.fragments[2], fragment(2, Role::kB, shape.k, shape.n));
  TALLY_ASSIGN_OR_RETURN(matrix.fragments[3], fragment(3, Role::kC, shape.m, shape.n));
  EmitMatrix(std::move(matrix));
  return absl::OkStatus();
}

// ldmatrix.sync.aligned.m8n8.num{.trans}{.ss}.b16 r, [p];
// stmatrix.sync.aligned.m8n8.num{.trans}{.ss}.b16 [p], r;   (num: .x1, .x2, .x4)
absl::Status MatrixDecoder::MatrixTransfer(bool store) {
  constexpr std::pair<std::string_view, int> kCounts[] = {{"x1", 1}, {"x2", 2}, {"x4", 4}};
  if (!mods_.Take("m8n8")) return Fail("only .m8n8 is implemented");
  auto count = mods_.TakeOne(kCounts);
  if (!count) return Fail("needs .x1, .x2 or .x4");
  if (!mods_.Take("b16")) return Fail("only .b16 is implemented");
  const bool transposed = mods_.Take("trans");
  inst_.space = mods_.Take("shared::cta") ? Space::kShared : mods_.TakeSpace();
  if (inst_.space != Space::kShared && inst_.space != Space::kGeneric) {
    return Fail("the matrices live in shared memory");
  }
  TALLY_RETURN_IF_ERROR(Arity(2));
  MatrixInst matrix;
  matrix.kind = store ? MatrixKind::kStmatrix : MatrixKind::kLdmatrix;
  TALLY_ASSIGN_OR_RETURN(
      matrix.fragments[0],
      Fragment(Operand(store ? 1 : 0), !store, E::kB16, 8 * *count, 8, 2 * *count,
               [&](int lane, int e) { return EightByEightPosition(transposed, lane, e); }));
  TALLY_ASSIGN_OR_RETURN(LowerContext::Address address, context_.AddressOf(Operand(store ? 0 : 1)));
  inst_.address = address.base;
  inst_.offset = address.offset;
  EmitMatrix(std::move(matrix));
  return absl::OkStatus();
}

// movmatrix.sync.aligned.m8n8.trans.b16 d, a;
absl::Status MatrixDecoder::Movmatrix() {
  if (!mods_.Take("m8n8") || !mods_.Take("trans") || !mods_.Take("b16")) {
    return Fail("only movmatrix.m8n8.trans.b16 exists");
  }
  TALLY_RETURN_IF_ERROR(Arity(2));
  MatrixInst matrix;
  matrix.kind = MatrixKind::kMovmatrix;
  for (int i = 0; i < 2; ++i) {
    TALLY_ASSIGN_OR_RETURN(
        matrix.fragments[i],
        Fragment(Operand(i), i == 0, E::kB16, 8, 8, 2,
                 [&](int lane, int e) { return EightByEightPosition(i == 0, lane, e); }));
  }
  EmitMatrix(std::move(matrix));
  return absl::OkStatus();
}

std::optional<std::string_view> MatrixDecoder::TakeShapeName() {
  for (const auto& [name, shape] : kShapes) {
    if (mods_.Take(name)) return name;
  }
  return std::nullopt;
}

Shape MatrixDecoder::ShapeOf(std::string_view name) {
  for (const auto& [shape_name, shape] : kShapes) {
    if (shape_name == name) return shape;
  }
  return {};
}

absl::Status Decoder::Matrix() { return MatrixDecoder(*this).Decode(); }

}  // namespace tally::emu::exec::internal
