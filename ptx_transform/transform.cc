// Transformation driver: fencing in place, then analysis and the passes for each kernel, then
// the module layout (function clones before the kernel variants that call them).
#include "ptx_transform/transform.h"

#include <fmt/format.h>

#include <map>

#include "ptx_transform/passes/fence_memory.h"
#include "ptx_transform/passes/passes.h"

namespace tally::ptx {

TransformReport TransformModule(Module& module, const TransformOptions& options) {
  TransformReport report;
  passes::NameAllocator names(module);
  // Fencing first, in place: the variants below are made from the fenced kernels, so their own
  // parameters follow the fence parameter. kernel -> why not fenced ("" when fenced).
  std::map<std::string, std::string> fence_refusals;
  if (options.fence) {
    passes::MemoryFencer fencer(module, names,
                                options.fence_device_output
                                    ? passes::FenceTarget::kKernelsBeforeDeviceOutput
                                    : passes::FenceTarget::kKernels);
    for (auto& item : module.items) {
      auto* kernel = std::get_if<Function>(&item.value);
      if (kernel == nullptr || !kernel->is_entry || !kernel->body) continue;
      std::string refusal = fencer.Refusal(*kernel);
      if (refusal.empty()) fencer.Fence(*kernel);
      fence_refusals[kernel->name] = std::move(refusal);
    }
    fencer.Finish();
  }
  passes::GridFunctionCloner cloner(module, names);
  KernelAnalyzer analyzer(module);
  std::vector<Function> variants;
  for (const auto& item : module.items) {
    const auto* kernel = std::get_if<Function>(&item.value);
    if (kernel == nullptr || !kernel->is_entry || !kernel->body) continue;
    KernelForms forms;
    forms.analysis = analyzer.Analyze(*kernel);
    if (auto it = fence_refusals.find(kernel->name); it != fence_refusals.end()) {
      forms.fenced = it->second.empty();
      forms.fence_refusal = it->second;
    }
    if (options.slice && forms.analysis.sliceable()) {
      forms.sliced = names.Fresh(kernel->name + "__tally_slice");
      variants.push_back(passes::MakeSlicedKernel(*kernel, forms.sliced, names, cloner));
    }
    if (options.preemptible && forms.analysis.preemptible()) {
      forms.preemptible = names.Fresh(kernel->name + "__tally_ptb");
      variants.push_back(
          passes::MakePreemptibleKernel(*kernel, forms.preemptible, forms.analysis, names, cloner));
    }
    report.kernels.push_back(std::move(forms));
  }
  cloner.Finish();
  for (auto& variant : variants) module.items.push_back({std::move(variant)});
  return report;
}

std::string TransformReport::Format(const TransformOptions& options) const {
  std::string out;
  auto line = [&](const KernelForms& k, const char* form, const std::string& made,
                  const std::vector<std::string>& reasons) {
    if (!made.empty()) {
      out += fmt::format("{}: {} as {}\n", k.analysis.kernel, form, made);
    } else {
      out += fmt::format("{}: not {}: {}\n", k.analysis.kernel, form, fmt::join(reasons, "; "));
    }
  };
  for (const auto& k : kernels) {
    if (options.fence) line(k, "fenced", k.fenced ? k.analysis.kernel : "", {k.fence_refusal});
    if (options.slice) line(k, "sliced", k.sliced, k.analysis.slice_blockers);
    if (options.preemptible) line(k, "preemptible", k.preemptible, k.analysis.ptb_blockers);
  }
  return out;
}

}  // namespace tally::ptx
