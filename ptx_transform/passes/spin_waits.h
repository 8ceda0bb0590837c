// Spin-wait detection for the kernel analysis: loops that wait for memory another block writes
// (decoupled look-back, `while (flag == 0);`, ticket locks, grid barriers built from flags).
// Such a kernel needs all its blocks resident at once, which neither slicing nor PTB gives.
#pragma once

#include <memory>
#include <string>

#include "ptx_transform/ir.h"
#include "ptx_transform/passes/ir_walk.h"

namespace tally::ptx::passes {

// Finds the loops of a module's kernels and functions that may wait for another block.
//
// A loop is a backward branch with the statements from its target label to it (in program
// order, nested `{ }` blocks included). It waits when it sleeps (`nanosleep`), or when it polls
// memory (volatile, relaxed, acquire, .cv/.cg or mmio loads of global or generic memory,
// atomics other than the compare-and-swap update idiom) and whether it leaves (or which way any
// of its branches goes) depends on a polled value, through registers, predicates, or memory
// written in the loop. A loop that only reads such memory, e.g. the last block of a threadfence
// reduction summing the other blocks' partial results, waits for nobody.
//
// Calls are followed: each function with a body is summarised (may its return values, or the
// memory it writes, carry a polled value; may a polled value decide whether it exits), callees
// before callers and to a fixed point around recursion, and a call in a loop is a polling read
// with those effects. A recursive function is a loop of its own. Calls of unknown functions
// (indirect, or external ones other than the device runtime's printf/malloc/free/assert) count
// as polling everything.
//
// The module must not change while the finder is in use; not thread-safe.
class SpinWaitFinder {
 public:
  explicit SpinWaitFinder(const FunctionIndex& functions);
  ~SpinWaitFinder();
  SpinWaitFinder(const SpinWaitFinder&) = delete;
  SpinWaitFinder& operator=(const SpinWaitFinder&) = delete;

  // Why `f` (a kernel, or a function with a body) may wait for another block, not counting
  // the loops inside the functions it calls (each is asked on its own), or empty when it does
  // not: "polls memory in a loop", "... in a loop through called function F", "sleeps in a
  // loop", "polls memory in a recursion".
  std::string Find(const Function& f);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tally::ptx::passes
