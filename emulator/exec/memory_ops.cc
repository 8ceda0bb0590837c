// Memory instructions: ld, st (scalar and vector) and atom/red, through bounds-checked address
// translation; global atomics are host atomics, since blocks run on several host threads.
#include <cstring>

#include "emulator/exec/block.h"
#include "emulator/exec/float16.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

// One atomic read-modify-write on host memory; returns the old value.
template <typename U, typename F>
U AtomicUpdate(U* target, F update) {
  U old = __atomic_load_n(target, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(target, &old, update(old), false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_RELAXED)) {
  }
  return old;
}

template <typename U>
uint64_t Atomic(U* target, AtomOp op, Type type, uint64_t b, uint64_t c) {
  const int width = sizeof(U) * 8;
  auto as = [&](U v) { return static_cast<uint64_t>(v); };
  switch (op) {
    case AtomOp::kAdd:
      if (IsHalf(type)) {  // atom.add.noftz.{f16,bf16}{,x2}: round to nearest, no flushing
        const HalfFormat f = FormatOf(type);
        return as(AtomicUpdate(target, [&](U old) {
          return static_cast<U>(IsPackedHalf(type) ? PackedHalfAdd(old, b, f) : HalfAdd(old, b, f));
        }));
      }
      if (type == Type::kF32 || type == Type::kF64) {
        return as(AtomicUpdate(target, [&](U old) {
          if constexpr (sizeof(U) == 4)
            return static_cast<U>(Bits(AsF32(old) + AsF32(b)));
          else
            return static_cast<U>(Bits(AsF64(old) + AsF64(b)));
        }));
      }
      return as(AtomicUpdate(target, [&](U old) { return static_cast<U>(old + b); }));
    case AtomOp::kMin:
    case AtomOp::kMax: {
      bool is_min = op == AtomOp::kMin;
      return as(AtomicUpdate(target, [&](U old) {
        bool less = IsSigned(type) ? ReadSigned(b, width) < ReadSigned(old, width)
                                   : static_cast<U>(b) < old;
        return (less == is_min && static_cast<U>(b) != old) ? static_cast<U>(b) : old;
      }));
    }
    case AtomOp::kInc:  // ((old >= b) ? 0 : old + 1), PTX ISA "atom"
      return as(AtomicUpdate(target, [&](U old) {
        return old >= static_cast<U>(b) ? U{0} : static_cast<U>(old + 1);
      }));
    case AtomOp::kDec:  // ((old == 0) || (old > b)) ? b : old - 1
      return as(AtomicUpdate(target, [&](U old) {
        return (old == 0 || old > static_cast<U>(b)) ? static_cast<U>(b) : static_cast<U>(old - 1);
      }));
    case AtomOp::kExch:
      return as(__atomic_exchange_n(target, static_cast<U>(b), __ATOMIC_SEQ_CST));
    case AtomOp::kCas: {
      U expected = static_cast<U>(b);
      __atomic_compare_exchange_n(target, &expected, static_cast<U>(c), false, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST);
      return as(expected);
    }
    case AtomOp::kAnd:
      return as(__atomic_fetch_and(target, static_cast<U>(b), __ATOMIC_SEQ_CST));
    case AtomOp::kOr:
      return as(__atomic_fetch_or(target, static_cast<U>(b), __ATOMIC_SEQ_CST));
    case AtomOp::kXor:
      return as(__atomic_fetch_xor(target, static_cast<U>(b), __ATOMIC_SEQ_CST));
  }
  return 0;
}

// Plain ld/st are relaxed atomic accesses of their (naturally aligned) size: other blocks run
// on other host threads and may use atomics on the same words, which PTX's memory model
// allows; on x86 these compile to ordinary moves.
uint64_t LoadRelaxed(const uint8_t* p, uint32_t size) {
  switch (size) {
    case 1:
      return __atomic_load_n(p, __ATOMIC_RELAXED);
    case 2:
      return __atomic_load_n(reinterpret_cast<const uint16_t*>(p), __ATOMIC_RELAXED);
    case 4:
      return __atomic_load_n(reinterpret_cast<const uint32_t*>(p), __ATOMIC_RELAXED);
    default:
      return __atomic_load_n(reinterpret_cast<const uint64_t*>(p), __ATOMIC_RELAXED);
  }
}

void StoreRelaxed(uint8_t* p, uint32_t size, uint64_t value) {
  switch (size) {
    case 1:
      return __atomic_store_n(p, static_cast<uint8_t>(value), __ATOMIC_RELAXED);
    case 2:
      return __atomic_store_n(reinterpret_cast<uint16_t*>(p), static_cast<uint16_t>(value),
                              __ATOMIC_RELAXED);
    case 4:
      return __atomic_store_n(reinterpret_cast<uint32_t*>(p), static_cast<uint32_t>(value),
                              __ATOMIC_RELAXED);
    default:
      return __atomic_store_n(reinterpret_cast<uint64_t*>(p), value, __ATOMIC_RELAXED);
  }
}

}  // namespace

bool Block::ExecuteMemory(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc) {
  const int width = TypeBits(in.type);
  if (in.op != Op::kLd) ++writes_;
  uint64_t* d = in.dst[0] != kNoSlot ? TALLY_R(in.dst[0]) : nullptr;
  const uint64_t* a = in.src[0] != kNoSlot ? TALLY_R(in.src[0]) : nullptr;
  const uint64_t* b = in.src[1] != kNoSlot ? TALLY_R(in.src[1]) : nullptr;
  if (in.op == Op::kLd || in.op == Op::kSt) {
    const bool store = in.op == Op::kSt;
    const uint32_t size = static_cast<uint32_t>(width / 8);
    const uint32_t total = size * in.vec;
    const uint64_t* base = TALLY_R(in.address);
    const bool sign_extend = IsSigned(in.type);
    bool ok = true;
    ForLanes(mask, [&](int l) {
      if (!ok) return;
      uint64_t address = base[l] + in.offset;
      uint8_t* host =
          store && in.space == Space::kParam ? nullptr : CachedGlobal(in.space, address, total, pc);
      if (host == nullptr) host = Translate(in.space, address, total, warp, l, pc, store);
      if (host == nullptr) {
        ok = false;
        return;
      }
      if ((address & (total - 1)) != 0) {  // sizes are powers of two
        Fault(warp, l, pc, CUDA_ERROR_MISALIGNED_ADDRESS,
              "misaligned access of " + std::to_string(total) + " bytes");
        ok = false;
        return;
      }
      for (int i = 0; i < in.vec; ++i) {
        if (store) {
          StoreRelaxed(host + i * size, size, TALLY_R(in.src[i])[l]);
        } else {
          uint64_t value = LoadRelaxed(host + i * size, size);
          TALLY_R(in.dst[i])
          [l] = sign_extend ? static_cast<uint64_t>(ReadSigned(value, width)) : value;
        }
      }
    });
    return ok;
  }
  {
    const uint32_t size = static_cast<uint32_t>(width / 8);
    const uint64_t* base = TALLY_R(in.address);
    const bool has_result = in.flags & kFlagHasResult;
    const AtomOp op = static_cast<AtomOp>(in.mod);
    bool ok = true;
    ForLanes(mask, [&](int l) {
      if (!ok) return;
      uint64_t address = base[l] + in.offset;
      uint8_t* host = Translate(in.space, address, size, warp, l, pc, true);
      if (host == nullptr || address % size != 0) {
        if (host != nullptr) {
          Fault(warp, l, pc, CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned atomic");
        }
        ok = false;
        return;
      }
      const uint64_t operand_b = b != nullptr ? b[l] : 0;
      uint64_t old =
          size == 2   ? Atomic(reinterpret_cast<uint16_t*>(host), op, in.type, a[l], operand_b)
          : size == 4 ? Atomic(reinterpret_cast<uint32_t*>(host), op, in.type, a[l], operand_b)
                      : Atomic(reinterpret_cast<uint64_t*>(host), op, in.type, a[l], operand_b);
      if (has_result) d[l] = old;
    });
    return ok;
  }
}

}  // namespace tally::emu::exec
