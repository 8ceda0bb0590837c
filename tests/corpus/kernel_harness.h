// Running corpus kernels whose argument semantics are unknown (corpus_semantics_test.cc):
// arguments made from the kernel's signature, device buffers and module globals that are reset
// before and read back after every run, the block shape, and guards for device printf, the
// emulator's log and kernels that never finish.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "emulator/tests/emu_library.h"
#include "ptx_transform/ir.h"
#include "ptx_transform/kernel_signature.h"
#include "ptx_transform/launch_forms.h"

namespace tally::ptx::corpus {

using Bytes = std::vector<uint8_t>;

// Bytes of every device buffer a pointer argument points at: generous for small grids.
constexpr size_t kBufferBytes = 64 * 1024;
// Dynamic shared memory for kernels that use `.extern .shared`.
constexpr uint32_t kDynamicSharedBytes = 4096;

// How arguments are made; the harness tries these in order until the original kernel runs.
// 8-byte integer parameters are pointers to buffers of their own; other integers get
// `int_value`; f16/f32/f64 parameters 1.5; aggregates (`.b8 name[N]`) zeros, or with
// `struct_pointers` a buffer pointer in every aligned 8-byte word.
struct ArgStrategy {
  const char* name;
  uint64_t int_value;
  bool pattern_buffers;  // buffers hold small integers (index-safe); else zeros
  bool struct_pointers;
};
inline constexpr ArgStrategy kArgStrategies[] = {
    {"pattern buffers, integers 64", 64, true, false},
    {"pattern buffers, integers 16, pointers in structs", 16, true, true},
    {"zero buffers, integers 1, pointers in structs", 1, false, true},
};

// A kernel's arguments and the device buffers they point at, in the current context.
class Arguments {
 public:
  Arguments(const Function& kernel, const KernelSignature& signature, const ArgStrategy& strategy);
  ~Arguments();
  Arguments(const Arguments&) = delete;
  Arguments& operator=(const Arguments&) = delete;

  const ArgStrategy& strategy() const { return strategy_; }
  // One pointer per parameter (cuLaunchKernel's kernelParams).
  std::vector<const void*> pointers() const;
  void Reset() const;      // every buffer back to its initial contents
  Bytes Snapshot() const;  // every buffer's contents, concatenated
  // The lowest address and one past the highest of the buffers; {0, 0} without any.
  std::pair<CUdeviceptr, CUdeviceptr> Span() const;

 private:
  CUdeviceptr NewBuffer();

  const ArgStrategy& strategy_;
  std::vector<Bytes> values_;  // one per parameter
  std::vector<CUdeviceptr> buffers_;
  Bytes initial_;  // every buffer's initial contents
};

// The module's `.global` variables: their initial contents, restored before every run, and
// read back after it (kernels may write results there).
class ModuleGlobals {
 public:
  ModuleGlobals(const Module& module, CUmodule handle);
  void Reset() const;
  Bytes Snapshot() const;
  // The lowest address and one past the highest of the module's `.global` and `.const`
  // variables; {0, 0} without any.
  std::pair<CUdeviceptr, CUdeviceptr> Span() const { return span_; }

 private:
  struct Global {
    CUdeviceptr address = 0;
    Bytes initial;
  };
  std::vector<Global> globals_;
  std::pair<CUdeviceptr, CUdeviceptr> span_{0, 0};
};

// [begin, end) widened to 256-byte multiples, as FenceParams wants: {base, size}; {0, 0} for
// an empty span.
std::pair<uint64_t, uint64_t> FenceRange(std::pair<uint64_t, uint64_t> span);

// The block shape the harness launches `kernel` with: 64 threads, or what `.reqntid` demands
// or `.maxntid` allows.
Dim3 BlockShape(const Function& kernel);

// Redirects file descriptor `fd` (1 or 2) while alive.
class RedirectedFd {
 public:
  RedirectedFd(int fd, std::FILE* target);
  ~RedirectedFd();
  RedirectedFd(const RedirectedFd&) = delete;
  RedirectedFd& operator=(const RedirectedFd&) = delete;

 private:
  int fd_, saved_;
};

// Device printf output is dropped while alive.
class SilencedStdout {
 public:
  SilencedStdout();
  ~SilencedStdout();

 private:
  std::FILE* null_;
  RedirectedFd redirect_;
};

// The emulator's log lines (stderr) are captured while alive.
class CapturedStderr {
 public:
  CapturedStderr();
  ~CapturedStderr();
  std::string Text();  // what was written so far

 private:
  std::FILE* file_;
  RedirectedFd redirect_;
};

// Ends the process with a message naming the run when one run takes longer than a minute: a
// kernel that never finishes under made-up arguments must not hang the test silently.
class Watchdog {
 public:
  Watchdog();
  ~Watchdog();
  class Guard {
   public:
    explicit Guard(const std::string& what);
    ~Guard();
  };
};

}  // namespace tally::ptx::corpus
