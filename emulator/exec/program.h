// The compact executable form of a PTX module: names resolved to register slots, symbols and
// instruction indices at load time, every instruction an enum opcode with type and modifier
// fields and pre-decoded operands, so the interpreter never looks anything up by name.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include <utility>
#include <vector>

namespace tally::emu::exec {

enum class Op : uint8_t {
#define TALLY_OP(name, family) name,
#include "emulator/exec/opcodes.def"
};

// PTX fundamental types (PTX ISA, "Fundamental Types"). Registers hold any type in 64 bits.
enum class Type : uint8_t {
  kNone,
  kPred,
  kB8,
  kB16,
  kB32,
  kB64,
  kU8,
  kU16,
  kU32,
  kU64,
  kS8,
  kS16,
  kS32,
  kS64,
  kF16,
  kF32,
  kF64,
  kBF16,
  kF16x2,  // two f16 (or bf16) values packed in 32 bits, the first in the low half
  kBF16x2,
};

inline int TypeBits(Type t) {
  switch (t) {
    case Type::kPred:
      return 1;
    case Type::kB8:
    case Type::kU8:
    case Type::kS8:
      return 8;
    case Type::kB16:
    case Type::kU16:
    case Type::kS16:
    case Type::kF16:
    case Type::kBF16:
      return 16;
    case Type::kB32:
    case Type::kU32:
    case Type::kS32:
    case Type::kF32:
    case Type::kF16x2:
    case Type::kBF16x2:
      return 32;
    case Type::kB64:
    case Type::kU64:
    case Type::kS64:
    case Type::kF64:
      return 64;
    case Type::kNone:
      return 0;
  }
  return 0;
}
inline bool IsSigned(Type t) {
  return t == Type::kS8 || t == Type::kS16 || t == Type::kS32 || t == Type::kS64;
}
// The 16-bit float formats and their packed pairs (interpreted by half_ops.cc).
inline bool IsHalf(Type t) {
  return t == Type::kF16 || t == Type::kBF16 || t == Type::kF16x2 || t == Type::kBF16x2;
}
inline bool IsPackedHalf(Type t) { return t == Type::kF16x2 || t == Type::kBF16x2; }
inline bool IsFloat(Type t) { return t == Type::kF32 || t == Type::kF64 || IsHalf(t); }

// State spaces (PTX ISA, "State Spaces"); kGeneric when an access names none.
enum class Space : uint8_t { kGeneric, kGlobal, kShared, kLocal, kParam, kConst };

enum class CmpOp : uint8_t {
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,  // signed or ordered float
  kLo,
  kLs,
  kHi,
  kHs,  // unsigned
  kEqu,
  kNeu,
  kLtu,
  kLeu,
  kGtu,
  kGeu,  // unordered float
  kNum,
  kNan,
};
enum class BoolOp : uint8_t { kNone, kAnd, kOr, kXor };
enum class MulMode : uint8_t { kLo, kHi, kWide };
enum class Rounding : uint8_t { kDefault, kRn, kRz, kRm, kRp, kRni, kRzi, kRmi, kRpi };
enum class AtomOp : uint8_t { kAdd, kMin, kMax, kInc, kDec, kExch, kCas, kAnd, kOr, kXor };
enum class ShflMode : uint8_t { kUp, kDown, kBfly, kIdx };
// The clock special registers (PTX ISA, "%clock, %clock_hi, %clock64", "%globaltimer,
// %globaltimer_lo, %globaltimer_hi"): a cycle counter (a steady nanosecond clock here) and the
// global nanosecond timer, whole or as their low or high 32 bits.
enum class ClockRead : uint8_t { kClock, kClockHi, kClock64, kTimerLo, kTimerHi, kTimer };
enum class VoteMode : uint8_t { kAll, kAny, kUni, kBallot };
enum class BarRedMode : uint8_t { kNone, kPopc, kAnd, kOr };
// dp4a, and dp2a taking the low or high half of b's bytes (PTX ISA, "dp4a", "dp2a").
enum class DotMode : uint8_t { k4, k2Lo, k2Hi };
// The SIMD video instructions vop2/vop4 (PTX ISA, "SIMD Video Instructions"); VideoFlags say
// which of d, a, b are signed and whether the lanes accumulate into c (.add).
enum class VideoOp : uint8_t { kAdd, kSub, kAvrg, kAbsdiff, kMin, kMax };
inline constexpr uint8_t kVideoSignedD = 1, kVideoSignedA = 2, kVideoSignedB = 4, kVideoAdd = 8;
// mbarrier operations (PTX ISA, "Parallel Synchronization and Communication Instructions:
// mbarrier"); the test/try waits take the state token or, with .parity, a phase parity.
enum class MbarrierOp : uint8_t {
  kInit,
  kArrive,
  kArriveDrop,
  kExpectTx,
  kCompleteTx,
  kArriveExpectTx,
  kTestWait,
  kTestWaitParity,
  kPendingCount,
  kInval,
};
// Device functions the driver provides (CUDA C++ Programming Guide, "Formatted Output",
// "Assertion", "Dynamic Global Memory Allocation and Operations"): arguments are the local-memory
// offsets of the call's .param variables.
enum class Builtin : uint8_t { kPrintf, kAssert, kMalloc, kFree };

// Modifiers of the f16/bf16 instructions (kHalfArith's mod2, kHalfCvt's mod); kHalfNan is also
// the mod of f32/f64 min/max.NaN.
inline constexpr uint8_t kHalfRelu = 1;        // negative results become +0, NaN stays NaN
inline constexpr uint8_t kHalfNan = 2;         // min/max.NaN: a NaN input gives NaN
inline constexpr uint8_t kHalfXorsignAbs = 4;  // min/max.xorsign.abs
inline constexpr uint8_t kHalfSatfinite = 8;   // cvt.satfinite: infinities become +-MAX

inline constexpr uint8_t kFlagFtz = 1;
inline constexpr uint8_t kFlagSat = 2;
inline constexpr uint8_t kFlagNegateGuard = 4;
inline constexpr uint8_t kFlagNegateSrcB = 8;  // setp's `!p` combine operand, selp/bool ops
inline constexpr uint8_t kFlagToGeneric = 16;  // cvta: space -> generic (else generic -> space)
inline constexpr uint8_t kFlagHasResult = 32;  // atom (vs red), shfl's predicate output
inline constexpr uint8_t kFlagCarryIn = 64;    // addc/subc/madc: add the carry (CC.CF)
inline constexpr uint8_t kFlagCarryOut = 128;  // .cc: write the carry

inline constexpr uint32_t kNoSlot = 0xffffffff;

// Element types of the warp-level matrix instructions (PTX ISA, "Warp Level Matrix Multiply-
// Accumulate Instructions"): .tf32 is f32 data of which the multiply uses only the top 19 bits.
enum class MatrixElement : uint8_t { kF16, kBF16, kTF32, kF32, kF64, kS8, kU8, kS32, kB16 };
inline int MatrixElementBits(MatrixElement e) {
  constexpr int kBits[] = {16, 16, 32, 32, 64, 8, 8, 32, 16};  // in MatrixElement's order
  return kBits[static_cast<int>(e)];
}
inline bool IsIntegerElement(MatrixElement e) {
  return e == MatrixElement::kS8 || e == MatrixElement::kU8 || e == MatrixElement::kS32;
}
// Elements below 32 bits share a 32-bit register, the first in the lowest bits.
inline int MatrixElementsPerRegister(MatrixElement e) {
  return MatrixElementBits(e) < 32 ? 32 / MatrixElementBits(e) : 1;
}
enum class MatrixKind : uint8_t { kWmmaLoad, kWmmaStore, kMma, kLdmatrix, kStmatrix, kMovmatrix };

// One matrix operand spread over the 32 lanes of a warp: its registers (each lane's elements
// packed from bit 0 of the first register up, several per register below 32 bits) and, per
// (lane * elements_per_lane + element), the element's index row * cols + col in the operand.
struct MatrixFragment {
  MatrixElement element = MatrixElement::kF32;
  uint16_t rows = 0, cols = 0;
  uint16_t elements_per_lane = 0;
  std::vector<uint32_t> slots;
  std::vector<uint16_t> index;
};

// A decoded wmma/mma/ldmatrix/stmatrix/movmatrix (exec/decode_matrix.cc, exec/matrix_ops.cc).
struct MatrixInst {
  MatrixKind kind = MatrixKind::kMma;
  // kMma: D, A, B, C. kWmmaLoad/kWmmaStore/kLdmatrix/kStmatrix: the register operand.
  // kMovmatrix: D (transposed layout), A.
  MatrixFragment fragments[4];
  bool column_major = false;  // wmma.load/store: the matrix's layout in memory
  bool satfinite = false;     // integer mma: clamp to the s32 range instead of wrapping
};

struct Inst {
  Op op = Op::kNop;
  Type type = Type::kNone;   // the operation's type
  Type type2 = Type::kNone;  // cvt's source type, setp/selp's comparison type
  uint8_t mod = 0;           // CmpOp, MulMode, AtomOp, ShflMode, VoteMode, ... by op
  uint8_t mod2 = 0;          // BoolOp of setp, Rounding, barrier id source, ...
  Space space = Space::kGeneric;
  uint8_t vec = 1;  // elements of a vector ld/st/pack
  uint8_t flags = 0;
  uint32_t guard = kNoSlot;  // predicate register slot
  uint32_t dst[4] = {kNoSlot, kNoSlot, kNoSlot, kNoSlot};
  uint32_t src[4] = {kNoSlot, kNoSlot, kNoSlot, kNoSlot};
  uint32_t address = kNoSlot;  // base address slot of ld/st/atom
  int64_t offset = 0;          // added to it
  uint32_t target = 0;         // branch target instruction; kMatrix: index in matrix_insts
  uint32_t line = 0;           // PTX source line, for fault reports
};

// A `.func` lowered once, after the kernel's code, and entered with a real call (kCall) because
// it is recursive or its address is taken; the other .funcs are inlined at each call. Its
// frame lives on the calling lane's stack in local memory (exec/call_ops.cc):
//   [call record: 16 bytes][saved registers: recursive functions only][frame: frame_bytes]
// and its variables (formals, .local variables, call arguments) are at offsets in the frame.
struct Callee {
  std::string name;
  uint32_t entry = kNoEntry;  // first instruction; kNoEntry when the kernel cannot reach it
  uint32_t frame_bytes = 0;   // 16-byte multiple
  // What a call charges against the stack size limit: its call record and .local variables.
  // Formals and call arguments are not charged: a GPU passes them in registers.
  uint32_t stack_charge = 0;
  // Register slots a recursive function saves on entry and restores on return: every slot its
  // code (inlined callees included) uses, since an outer activation may still need them.
  uint32_t saved_begin = 0, saved_end = 0;
  std::vector<std::pair<uint32_t, uint32_t>> returns, params;  // (frame offset, size) of formals
  static constexpr uint32_t kNoEntry = 0xffffffff;
};

// One kCall instruction: its callee and the caller's `.param` variables (frame offsets and sizes)
// that are copied to the callee's formals on entry, and from its return formals on return.
struct CallSite {
  uint32_t callee = kIndirect;  // index in `callees`, or kIndirect (the address is in a register)
  uint32_t return_pc = 0;
  uint32_t caller_frame_bytes = 0;  // the callee's call record starts after the caller's frame
  std::vector<std::pair<uint32_t, uint32_t>> returns, arguments;
  static constexpr uint32_t kIndirect = 0xffffffff;
};

// Bytes of a call record (call site index, callee index, caller's frame base) on the stack.
inline constexpr uint32_t kCallRecordBytes = 16;

// Shared memory the system reserves per block (CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK
// of the emulated sm_80 device, device_attributes.def), and where the region starts: after the
// block's own shared memory, at this alignment.
inline constexpr uint32_t kReservedSharedBytes = 1024;
inline constexpr uint32_t kReservedSharedAlignment = 128;

// A kernel ready to run: its code, then the code of the out-of-line .funcs it may call.
struct Function {
  std::string name;
  // Not OK when the emulated GPU cannot run the kernel (a construct it does not implement,
  // CUDA_ERROR_NOT_SUPPORTED from lowering): the rest of its module loads and runs, and every
  // use of this kernel (launch, attributes, occupancy) fails with that reason (Driver::
  // UsableKernel).
  absl::Status unusable;
  std::vector<Inst> code;
  // Register file layout: slots [0, SpecialSlot::kCount) hold the special registers, the rest
  // the function's registers and its constants (immediates and symbol addresses: the same value
  // in every lane, written once per launch).
  std::vector<std::pair<uint32_t, uint64_t>> constants;  // (slot, value)
  uint32_t num_slots = 0;
  uint32_t local_bytes = 0;          // per thread
  uint32_t static_shared_bytes = 0;  // dynamic shared memory starts here (16-byte aligned)
  uint32_t param_bytes = 0;
  std::vector<std::pair<uint32_t, uint32_t>> param_layout;  // (offset, size) per parameter
  uint32_t max_threads = 1024;                              // .maxntid / .reqntid product
  bool uses_heap = false;                                   // calls malloc or free
  // Reads %reserved_smem_offset_*: each block then has the reserved shared memory region of
  // kReservedSharedBytes after its own shared memory.
  bool uses_reserved_shared = false;
  // Thread-block clusters (PTX ISA, "Cluster Dimension Directives"): .reqnctapercluster's
  // dimensions (all 0 without it), .explicitcluster (or .reqnctapercluster: a launch must have
  // cluster dimensions), .maxclusterrank (0: none).
  uint32_t required_cluster[3] = {0, 0, 0};
  bool explicit_cluster = false;
  uint32_t max_cluster_rank = 0;
  // Reads %clusterid, %cluster_ctaid or %cluster_ctarank: the per-block cluster position is
  // written into the register file at each block start only for such kernels.
  bool reads_cluster_position = false;
  // brx.idx target lists (.branchtargets), as instruction indices.
  std::vector<std::vector<uint32_t>> branch_tables;
  // The module's out-of-line .funcs, indexed as their addresses are (FunctionAddress), and
  // this kernel's real call sites. Both empty for a kernel without real calls.
  std::vector<Callee> callees;
  std::vector<CallSite> call_sites;
  // The operands and layouts of the kernel's warp-level matrix instructions.
  std::vector<MatrixInst> matrix_insts;
};

// Special registers materialised per lane at warp start (PTX ISA, "Special Registers").
enum class SpecialSlot : uint32_t {
  kTidX,
  kTidY,
  kTidZ,
  kNtidX,
  kNtidY,
  kNtidZ,
  kCtaidX,
  kCtaidY,
  kCtaidZ,
  kNctaidX,
  kNctaidY,
  kNctaidZ,
  kLaneId,
  kWarpId,
  kNwarpId,
  kSmId,
  kNsmId,
  kGridId,
  kLanemaskEq,
  kLanemaskLt,
  kLanemaskLe,
  kLanemaskGt,
  kLanemaskGe,
  kDynamicSmemSize,
  kTotalSmemSize,
  // %aggr_smem_size and the reserved shared memory region's %reserved_smem_offset_begin, _end,
  // _cap and %reserved_smem_offset_<2> (PTX ISA, "Special Registers"); the region exists only
  // in kernels that read them (Function::uses_reserved_shared). The two offsets are the
  // driver's to lay out: here each starts one half of the region (cooperative groups keep their
  // multi-warp scratch, at least 288 bytes, at %reserved_smem_offset_1).
  kAggrSmemSize,
  kReservedSmemBegin,
  kReservedSmemEnd,
  kReservedSmemCap,
  kReservedSmemOffset0,
  kReservedSmemOffset1,
  // %envreg1:%envreg2 = high:low half of the cooperative-groups grid workspace address
  // (cooperative_groups/details/driver_abi.h); 0 outside cooperative launches.
  kEnvReg1,
  kEnvReg2,
  // Thread-block clusters (PTX ISA, "Special Registers"): the CTA's position in its cluster and
  // the cluster's in the grid (per block), the shapes and %is_explicit_cluster (per launch).
  kClusterCtaidX,
  kClusterCtaidY,
  kClusterCtaidZ,
  kClusterIdX,
  kClusterIdY,
  kClusterIdZ,
  kClusterCtarank,
  kClusterNctaidX,
  kClusterNctaidY,
  kClusterNctaidZ,
  kNclusterIdX,
  kNclusterIdY,
  kNclusterIdZ,
  kClusterNctarank,
  kIsExplicitCluster,
  kCarry,  // the condition-code carry flag CC.CF of extended-precision arithmetic
  // Where the running out-of-line function's frame starts in the lane's local memory (0 in the
  // kernel's own code): its variables' addresses are this plus their offsets in the frame.
  kFrameBase,
  kCount,
};

// Generic addresses of the shared, local and param windows (PTX ISA, "Generic Addressing"):
// ranges no host allocation can occupy, so a generic address tells its space by its value.
inline constexpr uint64_t kSharedWindow = 0x100000000000ull;
inline constexpr uint64_t kLocalWindow = 0x110000000000ull;
inline constexpr uint64_t kParamWindow = 0x120000000000ull;
inline constexpr uint64_t kWindowSize = 0x10000000000ull;
// A .shared::cluster address (PTX ISA, "Distributed Shared Memory") is 32 bits like a shared
// one: the CTA's own shared memory at its offsets (so every .shared::cta address is also a
// .shared::cluster one), another CTA's at (rank + 1) << kClusterRankShift plus the offset
// (mapa makes these). Shared memory per CTA stays below 1 << kClusterRankShift.
inline constexpr uint32_t kClusterRankShift = 24;
inline constexpr uint32_t kClusterOffsetMask = (1u << kClusterRankShift) - 1;
inline constexpr uint32_t kMaxClusterSize = 16;  // non-portable maximum (CUDA 12+, sm_90)
// Function addresses (`mov.u64 %rd, f;`, function symbols in initializers): out-of-line function
// i of a module is at kFunctionWindow + i * kFunctionAlign, outside every data window.
inline constexpr uint64_t kFunctionWindow = 0x130000000000ull;
inline constexpr uint64_t kFunctionAlign = 16;
inline uint64_t FunctionAddress(uint32_t index) { return kFunctionWindow + index * kFunctionAlign; }
static_assert(kLocalWindow == kSharedWindow + kWindowSize &&
                  kParamWindow == kLocalWindow + kWindowSize,
              "the windows are contiguous: one range check tells a generic address's space");

}  // namespace tally::emu::exec
