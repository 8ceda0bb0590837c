// Slicing pass: a variant of a kernel that runs a contiguous range of the original grid's
// blocks, so that a long best-effort kernel can be issued a few blocks at a time.
//
// The variant is launched with a 1-D grid of `count` blocks and two extra inputs: the linear
// index of its first block and the original grid. Every read of %ctaid/%nctaid, also in
// called functions, sees the original kernel's values:
//
//   .entry k(.param .u64 p)              .entry k__tally_slice(.param .u64 p,
//   {                                        .param .u32 base, .param .u32 nx, ny, nz)
//     mov.u32 %r1, %ctaid.y;             {
//     ...                                  ld.param.u32 %nctaid_x, [nx]; ... (y, z)
//   }                                      ld.param.u32 %lin, [base];
//                                          mov.u32 %t, %ctaid.x; add.u32 %lin, %lin, %t;
//                                          rem.u32 %ctaid_x, %lin, %nctaid_x; ... (y, z)
//                                          mov.u32 %r1, %ctaid_y;
//                                          ...
//                                        }
#include "ptx_transform/passes/passes.h"

namespace tally::ptx::passes {

size_t FirstExecutableIndex(const std::vector<Statement>& body) {
  size_t i = 0;
  while (i < body.size() && (std::holds_alternative<RegDecl>(body[i].value) ||
                             std::holds_alternative<Box<VarDecl>>(body[i].value))) {
    ++i;
  }
  return i;
}

Function MakeSlicedKernel(const Function& kernel, const std::string& name,
                          NameAllocator& module_names, GridFunctionCloner& cloner) {
  NameAllocator names(module_names, kernel);
  Function sliced = kernel;
  sliced.name = name;
  sliced.linkage = "visible";
  std::string base_param = names.Fresh("__tally_slice_base");
  std::string grid_params[3];
  sliced.params.push_back(Param("u32", base_param));
  for (int c = 0; c < 3; ++c) {
    grid_params[c] = names.Fresh(std::string("__tally_grid_") + "xyz"[c]);
    sliced.params.push_back(Param("u32", grid_params[c]));
  }

  auto& body = sliced.body->statements;
  std::vector<Statement> prologue;
  VirtualGrid grid = MakeVirtualGrid(names, prologue);
  std::string linear = names.Fresh("%__tally_linear_block");
  std::string scratch = names.Fresh("%__tally_scratch");
  prologue.push_back(DeclareRegisters("b32", {linear, scratch}));
  ReplaceGridReads(body, grid);
  cloner.RedirectCalls(body, grid, names);

  for (int c = 0; c < 3; ++c) {
    prologue.push_back(
        Stmt(Inst("ld", {"param", "u32"}, {Reg(grid.nctaid[c]), Addr(grid_params[c])})));
  }
  prologue.push_back(Stmt(Inst("ld", {"param", "u32"}, {Reg(linear), Addr(base_param)})));
  prologue.push_back(Stmt(Inst("mov", {"u32"}, {Reg(scratch), Operand::Name("%ctaid", 'x')})));
  prologue.push_back(Stmt(Inst("add", {"u32"}, {Reg(linear), Reg(linear), Reg(scratch)})));
  AppendDecomposeLinear(prologue, linear, grid, scratch);

  body.insert(body.begin() + static_cast<std::ptrdiff_t>(FirstExecutableIndex(body)),
              std::make_move_iterator(prologue.begin()), std::make_move_iterator(prologue.end()));
  return sliced;
}

}  // namespace tally::ptx::passes
