// Running a kernel's transformed forms on the emulated GPU, shared by the semantics tests: a
// module with the sliced and PTB variants of its kernels, loaded into the current context; the
// sliced form launched slice by slice; the PTB form with its state in mapped host memory,
// optionally preempted at random moments and relaunched until every task ran.
#pragma once

#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "emulator/tests/emu_library.h"
#include "ptx_transform/ir.h"
#include "ptx_transform/kernel_signature.h"
#include "ptx_transform/launch_forms.h"
#include "ptx_transform/transform.h"

namespace tally::ptx::semantics {

struct LaunchShape {
  Dim3 grid, block;
  uint32_t dynamic_shared = 0;
};

// A PTX module with the sliced and PTB variants of every kernel the analysis allows.
class TransformedModule {
 public:
  // Parses (the test fails on error) and transforms with `options`.
  explicit TransformedModule(const std::string& ptx, const TransformOptions& options = {});
  TransformedModule(const TransformedModule&) = delete;
  TransformedModule& operator=(const TransformedModule&) = delete;

  // Loads the module into the current context (again after a context change); the emulator's
  // error when it cannot, e.g. for an instruction it does not support.
  CUresult Load();
  CUmodule handle() const { return handle_; }
  const Module& module() const { return module_; }
  const TransformReport& report() const { return report_; }
  // The forms of `kernel`; the test fails when it has none.
  const KernelForms& Forms(const std::string& kernel) const;
  CUfunction Function(const std::string& name) const;
  const KernelSignature& Signature(const std::string& name) const;

 private:
  Module module_;
  TransformReport report_;
  std::map<std::string, KernelSignature> signatures_;
  std::string text_;
  CUmodule handle_ = nullptr;
};

// PtbState in host memory mapped into the device, so the host can raise the flag while the
// kernel runs (as the server does on a GPU). Belongs to the current context.
class MappedPtbState {
 public:
  MappedPtbState();
  ~MappedPtbState();
  MappedPtbState(const MappedPtbState&) = delete;
  MappedPtbState& operator=(const MappedPtbState&) = delete;
  uint32_t next_task() const;
  void set_preempt(bool on);
  uint64_t device() const { return device_; }

 private:
  PtbState* state_ = nullptr;
  CUdeviceptr device_ = 0;
};

// Launches the sliced form of `kernel` slice by slice, in the order of `slices`, with parameter
// buffers packed from the original arguments `args`, and waits; the first error.
CUresult RunSliced(const TransformedModule& module, const std::string& kernel,
                   std::span<const void* const> args, const LaunchShape& shape,
                   std::span<const Slice> slices);

// Launches the PTB form of `kernel` with `workers` worker blocks until every task ran. With
// `preempt_rng` the flag is raised after a random delay of up to 200 us in every launch (no
// delay in one launch of four).
// `launches` (optional) receives the number of launches it took.
CUresult RunPreemptible(const TransformedModule& module, const std::string& kernel,
                        std::span<const void* const> args, const LaunchShape& shape,
                        uint32_t workers, std::mt19937* preempt_rng = nullptr,
                        int* launches = nullptr);

}  // namespace tally::ptx::semantics
