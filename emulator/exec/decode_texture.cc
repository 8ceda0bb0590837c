// Decoding of texture fetches and surface loads/stores on texture/surface objects (PTX ISA,
// "Texture Instructions: tex" and "Surface Instructions: suld, sust"):
//   tex.{1d,2d,3d}.v4.{f32,s32,u32}.{s32,f32} d, [tex, {x{, y{, z, _}}}];
//   suld.b.{1d,2d,3d}{.v2,.v4}.{b8,b16,b32,b64}.{trap,clamp,zero} d, [surf, {x{, y{, z, _}}}];
//   sust.b.{1d,2d,3d}{.v2,.v4}.{b8,b16,b32,b64}.{trap,clamp,zero} [surf, {x{, y{, z, _}}}], a;
// The object handle goes to `address`, the coordinates to src[0..2]; tex and suld write dst[],
// sust reads its values from the slots in dst[] (it has no destination).
#include "emulator/exec/decoder.h"

namespace tally::emu::exec::internal {

absl::Status Decoder::Texture(Op op) {
  inst_.op = op;
  constexpr std::pair<std::string_view, uint8_t> kGeometries[] = {{"1d", 1}, {"2d", 2}, {"3d", 3}};
  if (op != Op::kTex && !mods_.Take("b")) return Fail("only .b (unformatted) surface access");
  auto dims = mods_.TakeOne(kGeometries);
  if (!dims) return Fail("only 1d, 2d and 3d geometries are implemented");
  inst_.mod = *dims;
  if (op == Op::kTex) {
    if (!mods_.Take("v4")) return Fail("tex returns .v4");
    inst_.vec = 4;
    auto result = mods_.TakeType();
    auto coordinate = mods_.TakeType();
    if (!result || (*result != Type::kF32 && *result != Type::kS32 && *result != Type::kU32) ||
        !coordinate || (*coordinate != Type::kF32 && *coordinate != Type::kS32)) {
      return Fail("tex needs .f32/.s32/.u32 results and .f32/.s32 coordinates");
    }
    inst_.type = *result;
    inst_.type2 = *coordinate;
  } else {
    inst_.vec = mods_.TakeVector();
    auto type = mods_.TakeType();
    if (!type ||
        (*type != Type::kB8 && *type != Type::kB16 && *type != Type::kB32 && *type != Type::kB64)) {
      return Fail("surface access needs .b8/.b16/.b32/.b64");
    }
    inst_.type = *type;
    constexpr std::pair<std::string_view, uint8_t> kModes[] = {
        {"trap", 0}, {"clamp", 1}, {"zero", 2}};
    auto mode = mods_.TakeOne(kModes);
    if (!mode) return Fail("surface access needs .trap, .clamp or .zero");
    inst_.mod2 = *mode;
  }
  TALLY_RETURN_IF_ERROR(Arity(2));
  const bool store = op == Op::kSust;
  const ptx::Operand& target = Operand(store ? 0 : 1);
  const ptx::Operand& values = Operand(store ? 1 : 0);
  if (target.kind != ptx::Operand::Kind::kAddress || target.elements.size() != 2 ||
      target.elements[0].kind != ptx::Operand::Kind::kName ||
      target.elements[1].kind != ptx::Operand::Kind::kVector) {
    return Fail("expected [object, {coordinates}] with the object in a register");
  }
  TALLY_ASSIGN_OR_RETURN(inst_.address, context_.Source(target.elements[0], Type::kU64));
  const auto& coordinates = target.elements[1].elements;
  const size_t needed = inst_.mod == 3 ? 4 : inst_.mod;  // 3-D coordinates are a 4-vector
  if (coordinates.size() != needed) return Fail("wrong number of coordinates");
  const Type coordinate_type = op == Op::kTex ? inst_.type2 : Type::kS32;
  for (uint8_t i = 0; i < inst_.mod; ++i) {
    TALLY_ASSIGN_OR_RETURN(inst_.src[i], context_.Source(coordinates[i], coordinate_type));
  }
  const size_t count = values.kind == ptx::Operand::Kind::kVector ? values.elements.size() : 1;
  if (count != inst_.vec) return Fail("value count does not match the vector width");
  for (size_t i = 0; i < count; ++i) {
    const ptx::Operand& value =
        values.kind == ptx::Operand::Kind::kVector ? values.elements[i] : values;
    if (value.kind == ptx::Operand::Kind::kSink) continue;
    if (store) {
      TALLY_ASSIGN_OR_RETURN(inst_.dst[i], context_.Source(value, inst_.type));
    } else {
      TALLY_ASSIGN_OR_RETURN(inst_.dst[i], context_.Dest(value));
    }
  }
  return absl::OkStatus();
}

}  // namespace tally::emu::exec::internal
