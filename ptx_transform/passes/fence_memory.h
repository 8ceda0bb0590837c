// Memory fencing (tenant isolation on a driver where every client shares one address space):
// every global memory access of a kernel, and of the functions it calls, is confined to the
// launching client's ranges, which the kernel receives as one more parameter (FenceParams in
// transform.h). An access outside them goes to base[0] (memory the client owns, a sink) and
// sets the violation flag. The kernel keeps its name; fenced clones of the called functions
// take the fence values as one more parameter.
//
// Before:
//   ld.global.u32 %r1, [%rd4+8];
// After (range 0's base and size loaded into registers once, at entry):
//   add.s64 %fa, %rd4, 8;
//   sub.s64 %fd, %fa, %base0;  setp.lt.u64 %ok, %fd, %size0;
//   @%ok bra checked;                              // the fast path: in range 0
//   ld.param.u64 %base1, [fence+8]; ...            // ranges 1 and 2 and the flag, read here
//   sub.s64 %fd, %fa, %base1;  setp.ge.u64 %bad, %fd, %size1;
//   sub.s64 %fd, %fa, %base2;  setp.ge.and.u64 %bad, %fd, %size2, %bad;
//   selp.b64 %fa, %base0, %fa, %bad;
//   @%bad st.global.u32 [%flag], 1;
// checked:
//   ld.global.u32 %r1, [%fa];
// Range 0 is the client's partition, where its device memory lies, so almost every access takes
// the fast path: six instructions fewer at entry and four or five fewer per access than testing
// every range each time. Ranges 1 and 2 (the client's host memory, the module's variables) take the
// slow path, except that an address computed from a module variable compares with range 2 first,
// and one that provably lies inside a variable is not checked (fence_variables.h). Unguarded global
// accesses through one unchanged base register in straight-line code share one check of their span
// (fence_spans.h). A guard enters %ok negated (an access that does not run takes the fast path). A
// generic access adds `isspacep.global %g, %fa;` and enters %ok with !%g, so that generic addresses
// of shared and local memory pass unchanged; in a module that makes generic addresses of kernel
// parameters (cvta.param), `isspacep.param` exempts those too. Generic addresses of `.const`
// variables lie in the global window: the server's range 2 must cover them.
//
// Why only the start address is checked: PTX requires every access to be naturally aligned
// (PTX ISA "Addresses as Operands": the address must be a multiple of the access size, else the
// behaviour is undefined and the hardware faults), accesses are at most 256 bytes (v8 of b32,
// discard and applypriority of 128 bytes, the L2::256B prefetch hint), and the server makes
// every base and size a multiple of 256. An aligned access of s <= 256 bytes (s a power of two)
// starting in [base, base + size) therefore ends in the same 256-byte block, inside the range;
// and a redirected access stays aligned, base[0] being a multiple of 256. The sink absorbs
// whatever a violating kernel does (its own memory, so only the violator's results suffer).
//
// wmma.load/store reach a strided tile: its first and last byte must lie in the same range, else
// it goes to base[0] with the dense stride (FenceTile in fence_memory.cc says why that is sound).
// __assertfail and vprintf read strings through their pointer arguments: each is checked like a
// generic access before its st.param and replaced by base[0] when outside. Where device output
// is redirected (device_output.h) the strings are read by Tally's own functions, which the fence
// also checks byte by byte (FenceTarget below): printf's `%s` arguments too, pointers inside its
// argument buffer that no check at the call can see.
//
// Why the called functions get the fence values as a parameter (a clone `f__tally_fence` per
// function, as the virtual grid's clones get the grid) rather than through a module-scope
// `.shared` slot written at kernel entry: the slot would take shared memory from every kernel
// of the module, so a kernel at the shared memory limit would no longer load, and kernels
// that the fence refuses would pay for it too. Parameters cost nothing in shared memory, and the
// clones compose with GridFunctionCloner: slicing or PTB applied to a fenced kernel clones the
// fenced clones again, appending the grid parameters after the fence parameter.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ptx_transform/ir.h"
#include "ptx_transform/passes/builder.h"
#include "ptx_transform/passes/fence_spans.h"
#include "ptx_transform/passes/fence_variables.h"
#include "ptx_transform/passes/function_clones.h"
#include "ptx_transform/passes/ir_walk.h"

namespace tally::ptx::passes {

// Bytes of the fence parameter: sizeof(FenceParams) in transform.h.
inline constexpr uint64_t kFenceParamBytes = 56;

class FunctionNames;

// What a MemoryFencer fences.
enum class FenceTarget {
  // A program's kernels and the functions they call.
  kKernels,
  // The same where device output is redirected after the fence: calls of vprintf and
  // __assertfail pass the fence as one more argument, from which RedirectDeviceOutput
  // (device_output.h) knows to call its fenced functions. Until then the module is no valid PTX.
  kKernelsBeforeDeviceOutput,
  // Tally's device output functions (RedirectDeviceOutput). Their `.global` accesses reach
  // Tally's memory (the output ring) and stay unchecked; their generic ones reach the client's
  // (the format, the arguments, the strings) and are checked, and a load outside the ranges
  // reads 0, which ends a string at the fence (base[0]'s byte, read again and again, might not).
  kDeviceOutput,
};

// A wmma.load/store tile: `lines` lines of `line_elements` elements of `element_bytes` bytes,
// line r at address + r * stride * element_bytes, the stride (in elements) in operand `stride`.
struct WmmaTile {
  uint64_t lines = 0, line_elements = 0, element_bytes = 0;
  size_t stride = 0;
};

class MemoryFencer {
 public:
  MemoryFencer(Module& module, NameAllocator& names, FenceTarget target = FenceTarget::kKernels);

  // Why `kernel` (an entry of the module) cannot be fenced, following its calls; empty when it
  // can. Every reason, separated by "; ".
  std::string Refusal(const Function& kernel);

  // Fences `kernel` in place (its Refusal must be empty): appends the fence parameter, checks
  // every access and redirects calls to fenced clones.
  void Fence(Function& kernel);

  // The name of the fenced clone of `function` (a function of the module with a body), made at
  // the first request: it takes the fence as its last parameter.
  const std::string& CloneOf(const std::string& function);

  // Adds the fenced clones to the module: their prototypes before its first function (the
  // fenced kernels call them where they stand), their bodies at the end. Call once, after the
  // last Fence and before anything else indexes the module's functions.
  void Finish();

 private:
  struct Registers;
  void FenceFunction(Function& function, const std::string& param, NameAllocator& local_names);
  void FenceStatements(std::vector<Statement>& statements, Registers& regs,
                       const FunctionNames& names, const VariableAddresses& variables,
                       NameAllocator& local_names);
  bool InModuleVariable(const Operand& base, const FunctionNames& names) const;
  uint64_t ModuleVariableBytes(const std::string& name, const FunctionNames& names) const;
  static int FirstRange(const std::string& base, const Registers& regs,
                        const VariableAddresses& variables);
  std::optional<size_t> CheckedOperand(const Instruction& inst, const FunctionNames& names,
                                       const std::set<const Instruction*>& pointer_stores) const;
  void LoadOtherRanges(const Registers& regs, std::vector<Statement>& out);
  void CheckAccess(const Instruction& inst, bool generic, bool raise_flag, const Registers& regs,
                   int first, const std::string& checked, std::vector<Statement>& out);
  void CheckSpan(const SpanGroup& group, const Registers& regs, int first,
                 const std::string& checked_label, std::vector<Statement>& out);
  void FenceTile(Instruction& inst, const WmmaTile& tile, size_t operand,
                 const std::string& address, const Registers& regs, const std::string& checked,
                 std::vector<Statement>& out);
  // What one function's own instructions refuse, and the functions it calls (with bodies):
  // computed once per function, shared by every kernel that reaches it.
  struct OwnFacts {
    std::vector<std::string> reasons;
    std::vector<const Function*> callees;
  };
  const OwnFacts& FactsOf(const Function& function);
  void FindFunctionsNeedingFence();
  bool NeedsFence(const Function& function) const;
  void CollectRefusals(const Function& function, std::vector<std::string>& reasons,
                       std::set<std::string>& visited);

  Module& module_;
  FunctionClones clones_;
  const FunctionIndex& functions_;
  NameAllocator& names_;
  std::map<std::string, std::string, std::less<>> module_variables_;  // name -> state space
  std::map<std::string, uint64_t> global_variable_bytes_;  // the `.global` ones it defines

  std::map<std::string, OwnFacts> facts_;
  std::map<std::string, bool> needs_fence_;  // NeedsFence, for every function with a body
  bool generic_params_ = false;  // the module makes generic addresses of parameters
  FenceTarget target_;
};

}  // namespace tally::ptx::passes
