// Launching the transformed forms on the emulated GPU (see forms_runner.h).
#include "tests/semantics/forms_runner.h"

#include <atomic>
#include <chrono>

#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"

namespace tally::ptx::semantics {

using emu::testing::Emu;

TransformedModule::TransformedModule(const std::string& ptx, const TransformOptions& options) {
  auto parsed = ParseModuleOrError(ptx);
  INFO(parsed.status().message());
  REQUIRE(parsed.ok());
  module_ = *std::move(parsed);
  report_ = TransformModule(module_, options);
  text_ = PrintModule(module_);
  auto signatures = ComputeSignatures(module_);
  INFO(signatures.status().message());
  REQUIRE(signatures.ok());
  for (KernelSignature& sig : *signatures) signatures_.emplace(sig.name, std::move(sig));
}

CUresult TransformedModule::Load() {
  handle_ = nullptr;
  return Emu().cuModuleLoadData(&handle_, text_.c_str());
}

const KernelForms& TransformedModule::Forms(const std::string& kernel) const {
  for (const auto& forms : report_.kernels) {
    if (forms.analysis.kernel == kernel) return forms;
  }
  FAIL("no kernel " << kernel);
  throw;
}

CUfunction TransformedModule::Function(const std::string& name) const {
  CUfunction f = nullptr;
  INFO(name);
  EMU_OK(Emu().cuModuleGetFunction(&f, handle_, name.c_str()));
  return f;
}

const KernelSignature& TransformedModule::Signature(const std::string& name) const {
  auto it = signatures_.find(name);
  INFO(name);
  REQUIRE(it != signatures_.end());
  return it->second;
}

MappedPtbState::MappedPtbState() {
  EMU_OK(Emu().cuMemHostAlloc(reinterpret_cast<void**>(&state_), sizeof(PtbState),
                              CU_MEMHOSTALLOC_DEVICEMAP));
  std::atomic_ref<uint32_t>(state_->next_task).store(0);
  set_preempt(false);
  EMU_OK(Emu().cuMemHostGetDevicePointer_v2(&device_, state_, 0));
}

MappedPtbState::~MappedPtbState() { Emu().cuMemFreeHost(state_); }

uint32_t MappedPtbState::next_task() const {
  return std::atomic_ref<uint32_t>(state_->next_task).load();
}

void MappedPtbState::set_preempt(bool on) {
  std::atomic_ref<uint32_t>(state_->preempt).store(on ? 1 : 0);
}

namespace {

// cuLaunchKernel with a packed parameter buffer (`extra`).
CUresult LaunchPacked(CUfunction f, Dim3 grid, const LaunchShape& shape,
                      std::vector<uint8_t>& params) {
  size_t size = params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  return Emu().cuLaunchKernel(f, grid.x, grid.y, grid.z, shape.block.x, shape.block.y,
                              shape.block.z, shape.dynamic_shared, nullptr, nullptr, extra);
}

}  // namespace

CUresult RunSliced(const TransformedModule& module, const std::string& kernel,
                   std::span<const void* const> args, const LaunchShape& shape,
                   std::span<const Slice> slices) {
  const KernelForms& forms = module.Forms(kernel);
  REQUIRE_FALSE(forms.sliced.empty());
  const KernelSignature& sig = module.Signature(forms.sliced);
  CUfunction f = module.Function(forms.sliced);
  for (const Slice& slice : slices) {
    auto packed = SlicedParams(sig, args, slice, shape.grid);
    REQUIRE(packed.ok());
    CUresult result = LaunchPacked(f, Dim3{slice.blocks, 1, 1}, shape, *packed);
    if (result != CUDA_SUCCESS) return result;
  }
  return Emu().cuCtxSynchronize();
}

CUresult RunPreemptible(const TransformedModule& module, const std::string& kernel,
                        std::span<const void* const> args, const LaunchShape& shape,
                        uint32_t workers, std::mt19937* preempt_rng, int* launches) {
  const KernelForms& forms = module.Forms(kernel);
  REQUIRE_FALSE(forms.preemptible.empty());
  const KernelSignature& sig = module.Signature(forms.preemptible);
  CUfunction f = module.Function(forms.preemptible);
  MappedPtbState state;
  auto packed = PreemptibleParams(sig, args, state.device(), shape.grid);
  REQUIRE(packed.ok());
  const uint32_t total = *LinearBlockCount(shape.grid);
  int count = 0;
  do {
    REQUIRE(count < 10000);
    // One launch in four finds the flag already raised: its workers stop before taking a task,
    // so runs are interrupted however fast the machine is. The others get the flag after a
    // random busy wait (sleeping has a timer slack of tens of microseconds, longer than small
    // kernels run), at whatever point the workers then are.
    const bool raised_before = preempt_rng != nullptr && (*preempt_rng)() % 4 == 0;
    state.set_preempt(raised_before);
    CUresult result = LaunchPacked(f, Dim3{workers, 1, 1}, shape, *packed);
    if (result != CUDA_SUCCESS) return result;
    ++count;
    if (preempt_rng != nullptr && !raised_before) {
      auto deadline = std::chrono::steady_clock::now() +
                      std::chrono::microseconds((*preempt_rng)() % 200);
      while (std::chrono::steady_clock::now() < deadline) {
      }
      state.set_preempt(true);
    }
    result = Emu().cuCtxSynchronize();
    if (result != CUDA_SUCCESS) return result;
  } while (state.next_task() < total);
  if (launches != nullptr) *launches = count;
  return CUDA_SUCCESS;
}

}  // namespace tally::ptx::semantics
