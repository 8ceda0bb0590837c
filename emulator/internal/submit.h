// Stream submission shared by the copy, memset, launch and host-function entry points.
#pragma once

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "emulator/internal/context.h"
#include "emulator/internal/driver.h"

namespace tally::emu {

// Enqueues `work` on `stream` (a handle as passed to the entry point) of the current context.
// With `wait`, blocks until it ran (the synchronous cuMemcpy* / cuMemset* forms, which are
// issued on the legacy NULL stream) and reports a sticky error that asynchronous work raised.
absl::Status Submit(Driver& driver, CUstream stream, std::function<void()> work, bool wait);

// Waits for `seq` on `stream`, then reports `context`'s sticky error if there is one, else the
// sticky error of the stream's tenant.
absl::Status WaitAndCheck(Driver& driver, const Context& context, const Stream& stream,
                          uint64_t seq);

}  // namespace tally::emu
