// Spin-wait detection for the kernel analysis: loops that wait for memory another block writes
// (decoupled look-back, `while (flag == 0);`, ticket locks, grid barriers built from flags).
// Such a kernel needs all its blocks resident at once, which neither slicing nor PTB gives.
#pragma once

#include <string>
#include <vector>

#include "ptx_transform/ir.h"

namespace tally::ptx::passes {

// Why some loop of `body` may wait for another block, or empty when none does. A loop is a
// backward branch with the statements from its target label to it (in program order, nested
// `{ }` blocks included). It waits when it sleeps (`nanosleep`), or when it polls memory
// (volatile, relaxed, acquire, .cv/.cg or mmio loads of global or generic memory) and whether
// it leaves (or which way any of its branches goes) depends on a polled value, through
// registers, predicates, or memory written in the loop. A loop that only reads such memory,
// e.g. the last block of a threadfence reduction summing the other blocks' partial results,
// waits for nobody.
std::string FindSpinWait(const std::vector<Statement>& body);

}  // namespace tally::ptx::passes
