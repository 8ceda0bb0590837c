// Decoding of the integer operations on narrow lanes (executed by narrow_int_ops.cc): mul24,
// mad24, dp4a, dp2a and the SIMD video instructions vop2/vop4.
#include "emulator/exec/decoder.h"

namespace tally::emu::exec::internal {
namespace {

constexpr std::pair<std::string_view, VideoOp> kVideoOps[] = {
    {"vadd", VideoOp::kAdd},         {"vsub", VideoOp::kSub}, {"vavrg", VideoOp::kAvrg},
    {"vabsdiff", VideoOp::kAbsdiff}, {"vmin", VideoOp::kMin}, {"vmax", VideoOp::kMax},
};

// vop2/vop4 opcodes: their operation and lane count.
std::optional<std::pair<VideoOp, uint8_t>> VideoOpcode(std::string_view opcode) {
  for (const auto& [name, op] : kVideoOps) {
    if (opcode.size() == name.size() + 1 && opcode.starts_with(name) &&
        (opcode.back() == '2' || opcode.back() == '4')) {
      return std::pair{op, static_cast<uint8_t>(opcode.back() - '0')};
    }
  }
  return std::nullopt;
}

}  // namespace

absl::Status Decoder::NarrowInt() {
  const std::string& opcode = in_.opcode;
  // Every operand is a plain 32-bit register or value: byte/halfword selectors and masks on
  // operands (`a.b3210`, `d.h10`) are not implemented.
  for (const ptx::Operand& operand : in_.operands) {
    if (operand.component != 0) return Fail("operand selectors and masks");
  }
  auto integer_type = [&]() -> absl::StatusOr<Type> {
    auto type = mods_.TakeType();
    if (type != Type::kU32 && type != Type::kS32) return Fail("needs .u32 or .s32 types");
    return *type;
  };
  if (opcode == "mul24" || opcode == "mad24") {
    // mul24.mode.type d, a, b; mad24.mode.type d, a, b, c; mad24.hi.sat.s32 (PTX ISA).
    inst_.op = Op::kMul24;
    if (mods_.Take("hi")) {
      inst_.mod = 1;
    } else if (!mods_.Take("lo")) {
      return Fail("needs .lo or .hi");
    }
    TALLY_ASSIGN_OR_RETURN(inst_.type, integer_type());
    if (opcode == "mad24" && mods_.Take("sat")) {
      if (inst_.mod != 1 || inst_.type != Type::kS32) return Fail(".sat needs .hi.s32");
      inst_.flags |= kFlagSat;
    }
    return Operands(opcode == "mad24" ? 3 : 2);
  }
  if (opcode == "dp4a" || opcode == "dp2a") {
    // dp4a.atype.btype d, a, b, c; dp2a.mode.atype.btype d, a, b, c (PTX ISA).
    inst_.op = Op::kDot;
    if (opcode == "dp2a") {
      if (mods_.Take("lo")) {
        inst_.mod = static_cast<uint8_t>(DotMode::k2Lo);
      } else if (mods_.Take("hi")) {
        inst_.mod = static_cast<uint8_t>(DotMode::k2Hi);
      } else {
        return Fail("needs .lo or .hi");
      }
    }
    TALLY_ASSIGN_OR_RETURN(inst_.type, integer_type());
    TALLY_ASSIGN_OR_RETURN(inst_.type2, integer_type());
    return Operands(3, {Type::kU32, Type::kU32, Type::kU32});
  }
  // vop4.dtype.atype.btype{.sat} d, a, b, c; vop4.dtype.atype.btype.add d, a, b, c (and vop2).
  auto [op, lanes] = *VideoOpcode(opcode);
  inst_.op = Op::kVideo;
  inst_.mod = static_cast<uint8_t>(op);
  inst_.vec = lanes;
  const uint8_t signedness[] = {kVideoSignedD, kVideoSignedA, kVideoSignedB};
  for (uint8_t flag : signedness) {
    TALLY_ASSIGN_OR_RETURN(Type type, integer_type());
    if (IsSigned(type)) inst_.mod2 |= flag;
  }
  inst_.type = Type::kU32;
  if (mods_.Take("add")) inst_.mod2 |= kVideoAdd;
  if (mods_.Take("sat")) {
    if (inst_.mod2 & kVideoAdd) return Fail(".sat cannot be used with .add");
    inst_.flags |= kFlagSat;
  }
  return Operands(3);
}

}  // namespace tally::emu::exec::internal
