// Base instruction names of the PTX ISA 9.x ("Instruction Set" chapter), without modifiers.
#include "ptx_transform/internal/opcodes.h"

#include "absl/container/flat_hash_set.h"

namespace tally::ptx::internal {
namespace {

// Sorted, for readers.
constexpr std::string_view kOpcodes[] = {
    "abs",          "activemask",    "add",       "addc",       "alloca",
    "and",          "applypriority", "atom",      "bar",        "barrier",
    "bfe",          "bfi",           "bfind",     "bmsk",       "bra",
    "brev",         "brkpt",         "brx",       "call",       "clusterlaunchcontrol",
    "clz",          "cnot",          "copysign",  "cos",        "cp",
    "createpolicy", "cvt",           "cvta",      "discard",    "div",
    "dp2a",         "dp4a",          "elect",     "ex2",        "exit",
    "fence",        "fma",           "fns",       "getctarank", "griddepcontrol",
    "isspacep",     "istypep",       "ld",        "ldmatrix",   "ldu",
    "lg2",          "lop3",          "mad",       "mad24",      "madc",
    "mapa",         "match",         "max",       "mbarrier",   "membar",
    "min",          "mma",           "mov",       "movmatrix",  "mul",
    "mul24",        "multimem",      "nanosleep", "neg",        "not",
    "or",           "pmevent",       "popc",      "prefetch",   "prefetchu",
    "prmt",         "rcp",           "red",       "redux",      "rem",
    "ret",          "rsqrt",         "sad",       "selp",       "set",
    "setmaxnreg",   "setp",          "shf",       "shfl",       "shl",
    "shr",          "sin",           "slct",      "sqrt",       "st",
    "stackrestore", "stacksave",     "stmatrix",  "sub",        "subc",
    "suld",         "suq",           "sured",     "sust",       "szext",
    "tanh",         "tcgen05",       "tensormap", "testp",      "tex",
    "tld4",         "trap",          "txq",       "vabsdiff",   "vabsdiff2",
    "vabsdiff4",    "vadd",          "vadd2",     "vadd4",      "vavrg2",
    "vavrg4",       "vmad",          "vmax",      "vmax2",      "vmax4",
    "vmin",         "vmin2",         "vmin4",     "vote",       "vset",
    "vset2",        "vset4",         "vshl",      "vshr",       "vsub",
    "vsub2",        "vsub4",         "wgmma",     "wmma",       "xor",
};

}  // namespace

bool IsKnownOpcode(std::string_view opcode) {
  // Checked once per parsed instruction: a hash lookup instead of a binary search.
  static const auto* const kSet = [] {
    auto* set = new absl::flat_hash_set<absl::string_view>();
    for (std::string_view name : kOpcodes) set->insert(absl::string_view(name.data(), name.size()));
    return set;
  }();
  return kSet->contains(absl::string_view(opcode.data(), opcode.size()));
}

}  // namespace tally::ptx::internal
