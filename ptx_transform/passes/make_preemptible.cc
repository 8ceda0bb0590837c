// PTB (persistent thread block) pass: a variant of a kernel whose blocks are workers that loop
// over the original grid's blocks ("tasks"), and that stop at a task boundary when the host
// raises a flag. Relaunching with the same task counter resumes where it stopped; no task is
// lost or run twice, because a worker takes a task only after it checked the flag and then
// always finishes it.
//
//   .entry k(.param .u64 p)          .entry k__tally_ptb(.param .u64 p, .param .u64 state,
//   {                                    .param .u32 nx, .param .u32 ny, .param .u32 nz)
//     <body>                         {   .shared .u32 slot;  (state: {u32 next; u32 preempt})
//     ret;                           $loop:
//   }                                    leader: flag = ld.volatile [state+4];
//                                            task = flag ? NONE : atom.add [state], 1
//                                            task = task < nx*ny*nz ? task : NONE
//                                            st.shared [slot], task
//                                        barrier; task = ld.shared [slot]; barrier
//                                        task == NONE: bra $done
//                                        %ctaid_x/y/z = task as a 3-D block index
//                                        <body; exits and barriers through the unified
//                                         synchronisation point, ending at $task_end>
//                                      $task_end: bra $loop
//                                      $done: ret;
//                                    }
//
// The barrier after the read keeps the leader from overwriting the slot for the next task
// while a thread is still reading it.
#include "common/status.h"
#include "ptx_transform/passes/passes.h"

namespace tally::ptx::passes {
namespace {

constexpr int64_t kNoTask = 0xFFFFFFFF;

// The lowest barrier id (PTX has 16) that the kernel does not use. ptxas reserves every id up
// to the highest one used for each block, and an SM has a fixed number of barriers: on an H100
// the PTB form of a kernel of 64-thread blocks with id 15 ("used 16 barriers") fit 4 blocks per
// SM (cuOccupancyMaxActiveBlocksPerMultiprocessor) and ran 1.4x slower than the original
// (docs/gpu-check.md).
int FreeBarrierId(const KernelAnalysis& analysis) {
  for (int id = 0; id < 16; ++id) {
    if (!analysis.barrier_ids.count(id)) return id;
  }
  return -1;  // the analysis refuses such kernels
}

}  // namespace

Function MakePreemptibleKernel(const Function& kernel, const std::string& name,
                               const KernelAnalysis& analysis, NameAllocator& module_names,
                               GridFunctionCloner& cloner) {
  NameAllocator names(module_names, kernel);
  Function ptb = kernel;
  ptb.name = name;
  ptb.linkage = "visible";
  std::string state_param = names.Fresh("__tally_ptb_state");
  ptb.params.push_back(Param("u64", state_param));
  std::string grid_params[3];
  for (int c = 0; c < 3; ++c) {
    grid_params[c] = names.Fresh(std::string("__tally_grid_") + "xyz"[c]);
    ptb.params.push_back(Param("u32", grid_params[c]));
  }
  int barrier_id = FreeBarrierId(analysis);
  TALLY_CHECK(barrier_id >= 0);  // AnalyzeKernel refuses kernels using all 16

  std::vector<Statement> original = std::move(ptb.body->statements);
  std::vector<Statement> head;  // our declarations and the loop head
  VirtualGrid grid = MakeVirtualGrid(names, head);
  std::string state = names.Fresh("%__tally_state");
  std::string task = names.Fresh("%__tally_task");
  std::string total = names.Fresh("%__tally_total");
  std::string flag = names.Fresh("%__tally_flag");
  std::string scratch = names.Fresh("%__tally_scratch");
  std::string leader = names.Fresh("%__tally_leader");
  std::string take = names.Fresh("%__tally_take");
  std::string none = names.Fresh("%__tally_none");
  head.push_back(DeclareRegisters("b64", {state}));
  head.push_back(DeclareRegisters("b32", {task, total, flag, scratch}));
  head.push_back(DeclareRegisters("pred", {leader, take, none}));
  VarDecl slot_decl;
  slot_decl.state_space = "shared";
  slot_decl.align = 4;
  slot_decl.type = "u32";
  slot_decl.name = names.Fresh("__tally_task_slot");
  std::string slot = slot_decl.name;
  head.push_back({Box<VarDecl>(std::move(slot_decl))});

  std::string loop = names.Fresh("$__tally_loop");
  std::string task_end = names.Fresh("$__tally_task_end");
  std::string done = names.Fresh("$__tally_done");

  FlattenBlocksWithBarriers(original, names);
  ReplaceGridReads(original, grid);
  cloner.RedirectCalls(original, grid, names);
  UnifySynchronisation(original, barrier_id, task_end, names, head);

  size_t first = FirstExecutableIndex(original);
  std::vector<Statement> body(std::make_move_iterator(head.begin()),
                              std::make_move_iterator(head.end()));
  body.insert(body.end(), std::make_move_iterator(original.begin()),
              std::make_move_iterator(original.begin() + static_cast<std::ptrdiff_t>(first)));

  auto emit = [&](Instruction inst) { body.push_back(Stmt(std::move(inst))); };
  emit(Inst("ld", {"param", "u64"}, {Reg(state), Addr(state_param)}));
  emit(Inst("cvta", {"to", "global", "u64"}, {Reg(state), Reg(state)}));
  for (int c = 0; c < 3; ++c)
    emit(Inst("ld", {"param", "u32"}, {Reg(grid.nctaid[c]), Addr(grid_params[c])}));
  emit(Inst("mul", {"lo", "u32"}, {Reg(total), Reg(grid.nctaid[0]), Reg(grid.nctaid[1])}));
  emit(Inst("mul", {"lo", "u32"}, {Reg(total), Reg(total), Reg(grid.nctaid[2])}));
  // The leader is thread (0, 0, 0): tid.x | tid.y | tid.z == 0.
  emit(Inst("mov", {"u32"}, {Reg(scratch), Operand::Name("%tid", 'x')}));
  emit(Inst("mov", {"u32"}, {Reg(flag), Operand::Name("%tid", 'y')}));
  emit(Inst("or", {"b32"}, {Reg(scratch), Reg(scratch), Reg(flag)}));
  emit(Inst("mov", {"u32"}, {Reg(flag), Operand::Name("%tid", 'z')}));
  emit(Inst("or", {"b32"}, {Reg(scratch), Reg(scratch), Reg(flag)}));
  emit(Inst("setp", {"eq", "u32"}, {Reg(leader), Reg(scratch), Imm(0)}));

  body.push_back(LabelAt(loop));
  emit(Inst("mov", {"u32"}, {Reg(task), Imm(kNoTask)}));
  emit(Inst("mov", {"u32"}, {Reg(flag), Imm(1)}));
  emit(Guard(Inst("ld", {"volatile", "global", "u32"}, {Reg(flag), Addr(state, 4)}), leader));
  emit(Inst("setp", {"eq", "and", "u32"}, {Reg(take), Reg(flag), Imm(0), Reg(leader)}));
  emit(Guard(Inst("atom", {"global", "add", "u32"}, {Reg(task), Addr(state), Imm(1)}), take));
  emit(Inst("setp", {"ge", "u32"}, {Reg(none), Reg(task), Reg(total)}));
  emit(Guard(Inst("mov", {"u32"}, {Reg(task), Imm(kNoTask)}), none));
  emit(Guard(Inst("st", {"shared", "u32"}, {Addr(slot), Reg(task)}), leader));
  // Non-aligned barriers: threads that left the previous task early arrive here diverged.
  emit(Inst("barrier", {"sync"}, {Imm(barrier_id)}));
  emit(Inst("ld", {"shared", "u32"}, {Reg(task), Addr(slot)}));
  emit(Inst("barrier", {"sync"}, {Imm(barrier_id)}));
  emit(Inst("setp", {"eq", "u32"}, {Reg(none), Reg(task), Imm(kNoTask)}));
  emit(Guard(Inst("bra", {}, {Reg(done)}), none));
  AppendDecomposeLinear(body, task, grid, scratch);

  body.insert(body.end(),
              std::make_move_iterator(original.begin() + static_cast<std::ptrdiff_t>(first)),
              std::make_move_iterator(original.end()));
  body.push_back(LabelAt(task_end));
  emit(Inst("bra", {}, {Reg(loop)}));
  body.push_back(LabelAt(done));
  emit(Inst("ret", {}, {}));
  ptb.body->statements = std::move(body);
  return ptb;
}

}  // namespace tally::ptx::passes
