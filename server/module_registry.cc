// Loading a fatbin: the PTX the driver would pick for the device (ptx_transform), parsed for the
// kernels' parameter layouts and module state, and loaded with cuModuleLoadData. PTX rather than
// a cubin because the scheduler's kernel transformations (ARCHITECTURE.md) work on PTX; an image
// without PTX for the device is the driver's to load as machine code (module_registry.h).
#include "server/module_registry.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status.h"
#include "cuda_abi/device_output_ring.h"
#include "ipc/content_hash.h"
#include "ptx_transform/device_output.h"
#include "ptx_transform/fatbin.h"
#include "ptx_transform/managed.h"
#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"
#include "server/cuda_result.h"
#include "server/device_code.h"

namespace tally::server {
namespace {

// The background worker's queue (FormsWorker) holds as many jobs as a client's command queue
// holds commands by default (--max-queued-commands); a request it refuses is made again by the
// dispatcher while the kernel waits at its queue's head.
constexpr size_t kFormsQueue = 1024;

// Module-scope variables a program can write (PTX ISA, "State Spaces": .global is per-context
// device memory, .const is written by the host through cudaMemcpyToSymbol).
// The names of the module's own .global/.const variables (textures and surfaces are no memory).
std::vector<std::string> StateVariables(const ptx::Module& module) {
  std::vector<std::string> names;
  for (const ptx::TopLevel& item : module.items) {
    const auto* var = std::get_if<ptx::VarDecl>(&item.value);
    if (var != nullptr && var->linkage != "extern" &&
        (var->state_space == "global" || var->state_space == "const") &&
        var->type != "texref" && var->type != "surfref" && var->type != "samplerref") {
      names.push_back(var->name);
    }
  }
  return names;
}

// `__managed__` variables are reached through pointers the client sets (ptx_transform/managed.h);
// a module whose uses of them the rewrite cannot follow is refused, saying why: its kernels and
// the program would not see the same variable.
absl::Status RedirectManagedVariables(DeviceCode& code) {
  absl::StatusOr<std::vector<std::string>> redirected = ptx::RedirectManagedVariables(*code.module);
  if (!redirected.ok()) return ClientError(CUDA_ERROR_NOT_SUPPORTED, redirected.status().message());
  if (!redirected->empty()) code.ptx = ptx::PrintModule(*code.module);
  return absl::OkStatus();
}

// Device printf and assert into the client's ring (ptx_transform/device_output.h); where the
// rewrite is refused, they print where the driver prints them, which the log says.
bool RedirectOutput(ptx::Module& module) {
  absl::StatusOr<bool> redirected = ptx::RedirectDeviceOutput(module);
  if (!redirected.ok()) {
    TALLY_LOG_WARN("device printf of a module stays in the server's output: {}",
                   redirected.status().ToString());
    return false;
  }
  return *redirected;
}

// The sliced and PTB variants of every kernel of `module` the analysis allows, in one module with
// the originals (ptx_transform/transform.h), and with `options.fence` every kernel fenced in
// place; nullopt when the transformed module is unusable (the log says why). Why a kernel keeps
// its original form, or stays unfenced, is logged here, once per kernel transformed. With
// `redirect_output`, device output is redirected after the transformation, which knows vprintf
// and __assertfail as the runtime's functions (and has fenced code pass its fence to them).
std::optional<TransformedCode> TransformForms(ptx::Module& module, bool redirect_output,
                                              ptx::TransformOptions options) {
  options.fence_device_output = options.fence && redirect_output;
  ptx::TransformReport report = ptx::TransformModule(module, options);
  for (const ptx::KernelForms& forms : report.kernels) {
    if (options.fence && !forms.fenced) {
      TALLY_LOG_INFO("kernel {} cannot be fenced: {}", forms.analysis.kernel, forms.fence_refusal);
    }
    if (!options.slice || (!forms.sliced.empty() && !forms.preemptible.empty())) continue;
    auto why = [](const std::vector<std::string>& reasons) {
      return reasons.empty() ? std::string("-") : absl::StrJoin(reasons, "; ");
    };
    TALLY_LOG_INFO(
        "kernel {} keeps its original form where it cannot be transformed: sliced: {}; "
        "preemptible: {}",
        forms.analysis.kernel, forms.sliced.empty() ? why(forms.analysis.slice_blockers) : "made",
        forms.preemptible.empty() ? why(forms.analysis.ptb_blockers) : "made");
  }
  auto signatures = ptx::ComputeSignatures(module);
  if (!signatures.ok()) {
    TALLY_LOG_WARN(
        "the transformed module has no parameter layouts ({}): its kernels run in "
        "their original forms",
        signatures.status().ToString());
    return std::nullopt;
  }
  if (redirect_output && !RedirectOutput(module)) {
    TALLY_LOG_WARN("the transformed module is not used: its device printf could not be redirected");
    return std::nullopt;
  }
  return TransformedCode{.ptx = ptx::PrintModule(module),
                         .forms = std::move(report.kernels),
                         .variant_signatures = *std::move(signatures)};
}

// The kernel `name` of an image whose forms are made per kernel, with everything else it may use
// (the module's functions, variables and directives; the other kernels left out), parsed alone
// and transformed as TransformForms does.
std::optional<TransformedCode> TransformKernel(const ParsedImage& parsed, const std::string& name,
                                               const ptx::TransformOptions& options) {
  auto entry = std::ranges::find(parsed.index.entries, name, &ptx::EntryText::name);
  if (entry == parsed.index.entries.end()) return std::nullopt;  // declared, never defined
  const size_t position = entry - parsed.index.entries.begin();
  absl::StatusOr<ptx::Module> alone =
      ptx::ParseModuleOrError(ptx::KernelText(parsed.ptx, parsed.index, position));
  if (!alone.ok()) {
    TALLY_LOG_WARN("kernel {} runs in its original form: its text alone does not parse: {}", name,
                   std::string(alone.status().message()));
    return std::nullopt;
  }
  return TransformForms(*alone, false, options);
}

const ptx::KernelSignature* FindSignature(const std::vector<ptx::KernelSignature>& signatures,
                                          const std::string& name) {
  auto it = std::ranges::find(signatures, name, &ptx::KernelSignature::name);
  return it == signatures.end() ? nullptr : &*it;
}

// The variant `name` of a loaded transformed module, allowed the dynamic shared memory its
// original kernel is (48 KiB less the static size, the default without opt-in); nullopt when it
// was not made.
std::optional<KernelVariant> LoadVariant(const DriverApi& api, CUdevice device, CUmodule module,
                                         const TransformedCode& code, const std::string& name,
                                         CUfunction original) {
  if (name.empty()) return std::nullopt;
  const ptx::KernelSignature* signature = FindSignature(code.variant_signatures, name);
  KernelVariant variant;
  int static_shared = 0;
  int max_threads = 0;
  int original_dynamic = 0;
  if (signature == nullptr ||
      api.cuModuleGetFunction(&variant.function, module, name.c_str()) != CUDA_SUCCESS ||
      api.cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                             variant.function) != CUDA_SUCCESS ||
      api.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                             variant.function) != CUDA_SUCCESS ||
      api.cuFuncGetAttribute(&original_dynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             original) != CUDA_SUCCESS) {
    TALLY_LOG_WARN("the transformed module lacks {}: that form is not used", name);
    return std::nullopt;
  }
  variant.signature = *signature;
  variant.static_shared_bytes = static_cast<uint32_t>(std::max(static_shared, 0));
  variant.max_threads_per_block = static_cast<uint32_t>(std::max(max_threads, 0));
  AllowDynamicShared(api, device, variant, original_dynamic);
  return variant;
}

// Gives `kernel` its variants from `module`, loaded from `code`; how many it got.
uint64_t AttachForms(const DriverApi& api, CUdevice device, CUmodule module,
                     const TransformedCode& code, Kernel& kernel) {
  const std::string& name = kernel.signature.name;
  auto forms = std::ranges::find(code.forms, name,
                                 [](const ptx::KernelForms& f) { return f.analysis.kernel; });
  if (forms == code.forms.end()) return 0;
  kernel.sliced = LoadVariant(api, device, module, code, forms->sliced, kernel.function);
  kernel.preemptible = LoadVariant(api, device, module, code, forms->preemptible, kernel.function);
  kernel.fenced = forms->fenced;
  kernel.fence_refusal = forms->fence_refusal;
  return uint64_t{kernel.sliced.has_value()} + uint64_t{kernel.preemptible.has_value()};
}

// The kernel across servers and runs (Kernel::identity): its module's content hash continued
// with its name.
KernelId KernelIdentity(const ParsedImage& parsed, const std::string& name) {
  return KernelId(ipc::ContentHash(std::as_bytes(std::span(name)), parsed.content_hash));
}

// A machine-code module's kernel `name`: its layout from the driver (cuFuncGetParamInfo, whose
// CUDA_ERROR_INVALID_VALUE past the last parameter is how the parameters are counted).
absl::StatusOr<Kernel> MachineCodeKernel(const DriverApi& api, CUmodule module,
                                         const ParsedImage& parsed, const std::string& name) {
  Kernel kernel;
  if (api.cuModuleGetFunction(&kernel.function, module, name.c_str()) != CUDA_SUCCESS) {
    return ClientError(CUDA_ERROR_NOT_FOUND,
                       absl::StrFormat("the module has no kernel named '%s'", name));
  }
  kernel.signature.name = name;
  kernel.signature.demangled = ptx::Demangle(name);
  for (size_t index = 0;; ++index) {
    size_t offset = 0;
    size_t size = 0;
    const CUresult result = api.cuFuncGetParamInfo(kernel.function, index, &offset, &size);
    if (result == CUDA_ERROR_INVALID_VALUE) break;
    TALLY_RETURN_IF_ERROR(CheckCu(result, "cuFuncGetParamInfo"));
    ptx::ParamLayout param;
    param.name = absl::StrFormat("param_%d", index);
    param.offset = static_cast<uint32_t>(offset);
    param.size = static_cast<uint32_t>(size);
    // The largest power of two (up to 16) the offset allows; PTX parameters are aligned so.
    param.alignment = 1;
    while (param.alignment < 16 && param.offset % (param.alignment * 2) == 0) param.alignment *= 2;
    kernel.signature.param_buffer_size = param.offset + param.size;
    kernel.signature.params.push_back(std::move(param));
  }
  kernel.identity = KernelIdentity(parsed, name);
  kernel.fence_refusal = "it is machine code only: there is no PTX to fence";
  return kernel;
}

// The smallest range, in multiples of 256 bytes (as the fence's ranges are), that holds every
// one of the module's `variables`. A loaded module's variables are one allocation of the driver
// (cuModuleLoadData allocates a module's data segment at once), aligned as every device
// allocation, so the rounding reaches no other memory.
absl::StatusOr<ModuleVariableRange> VariableRangeOf(const DriverApi& api, CUmodule module,
                                                    const std::vector<std::string>& variables) {
  constexpr uint64_t kUnit = 256;
  uint64_t low = UINT64_MAX;
  uint64_t high = 0;
  for (const std::string& name : variables) {
    CUdeviceptr address = 0;
    size_t bytes = 0;
    TALLY_RETURN_IF_ERROR(CheckCu(api.cuModuleGetGlobal(&address, &bytes, module, name.c_str()),
                                  "cuModuleGetGlobal"));
    low = std::min<uint64_t>(low, address);
    high = std::max<uint64_t>(high, address + bytes);
  }
  if (high == 0) return ModuleVariableRange{};
  low = low / kUnit * kUnit;
  high = (high + kUnit - 1) / kUnit * kUnit;
  return ModuleVariableRange{low, high - low};
}

// The device as the code cache's keys name it: its name and compute capability.
std::string DeviceName(const Backend& backend, uint32_t arch) {
  char name[256] = {};
  backend.api().cuDeviceGetName(name, sizeof(name), backend.device());
  return absl::StrFormat("%s sm_%u", name, arch);
}

int DriverVersion(const DriverApi& api) {
  int version = 0;
  api.cuDriverGetVersion(&version);
  return version;
}

// A worker of the registry (FormsWorker) whose threads have the backend's context current.
std::shared_ptr<FormsWorker> BackgroundWorker(const Backend& backend, size_t threads) {
  return std::make_shared<FormsWorker>(threads, kFormsQueue, [&backend] {
    if (const absl::Status current = backend.MakeCurrent(); !current.ok()) {
      TALLY_LOG_ERROR("background worker: {}", current.ToString());
    }
  });
}

}  // namespace

void AllowDynamicShared(const DriverApi& api, CUdevice device, const KernelVariant& variant,
                        int bytes) {
  int optin = 0;
  if (api.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                               device) != CUDA_SUCCESS) {
    return;  // the variant keeps the default, and launches needing more their original form
  }
  const int room = std::max(optin - static_cast<int>(variant.static_shared_bytes), 0);
  api.cuFuncSetAttribute(variant.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                         std::clamp(bytes, 0, room));
}

SharedModule::~SharedModule() {
  for (CUmodule forms : form_modules_) api_.cuModuleUnload(forms);
  const CUresult result = api_.cuModuleUnload(module_);
  if (result != CUDA_SUCCESS) TALLY_LOG_WARN("cuModuleUnload failed with CUresult {}", +result);
}

void SharedModule::PrepareForms(const Kernel& kernel) {
  if (!kernel.forms_pending.get()) return;  // every launch but the first: no lock, no lookup
  std::lock_guard lock(forms_mutex_);
  Kernel& mine = kernels_.at(kernel.signature.name);
  if (!mine.forms_pending.get()) return;  // made by another thread meanwhile
  // Cleared once the variants are in place (or will not be), so that a launch that sees it
  // cleared finds them.
  absl::Cleanup made = [&mine] { mine.forms_pending.Clear(); };
  const ptx::TransformOptions options{.slice = true, .preemptible = true};
  const std::optional<TransformedCode> code = forms_cache_->FindOrMake(
      parsed_->ptx_hash, mine.signature.name, options, /*redirect_output=*/false,
      [&] { return TransformKernel(*parsed_, mine.signature.name, options); });
  if (!code) return;
  ++counters_->kernels_transformed;
  CUmodule forms = nullptr;
  const LoadOutcome loaded = machine_code_->Load(&forms, code->ptx);
  if (loaded.result != CUDA_SUCCESS) {
    TALLY_LOG_WARN(
        "the transformed forms of kernel {} did not load ({}: {}): it runs in its "
        "original form",
        mine.signature.name, CuResultText(loaded.result), loaded.log);
    return;
  }
  form_modules_.push_back(forms);
  counters_->forms_loaded += AttachForms(api_, device_, forms, *code, mine);
  auto set = attributes_.find(mine.signature.name);
  if (set == attributes_.end()) return;
  for (const auto& [attribute, value] : set->second) SetFormsAttribute(mine, attribute, value);
  attributes_.erase(set);
}

void SharedModule::SetAttribute(const Kernel& kernel, CUfunction_attribute attribute, int value) {
  if (kernel.forms_pending.get()) {
    std::lock_guard lock(forms_mutex_);
    if (kernel.forms_pending.get()) {  // else made meanwhile
      attributes_[kernel.signature.name].emplace_back(attribute, value);
      return;
    }
  }
  SetFormsAttribute(kernel, attribute, value);
}

void SharedModule::SetFormsAttribute(const Kernel& kernel, CUfunction_attribute attribute,
                                     int value) const {
  for (const std::optional<KernelVariant>* variant : {&kernel.sliced, &kernel.preemptible}) {
    if (!variant->has_value()) continue;
    if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
      AllowDynamicShared(api_, device_, **variant, value);
    } else {
      api_.cuFuncSetAttribute((*variant)->function, attribute, value);
    }
  }
}

void SharedModule::RequestForms(const Kernel& kernel) {
  if (!kernel.forms_pending.get()) return;
  if (worker_ == nullptr) {
    PrepareForms(kernel);
    return;
  }
  std::lock_guard lock(requested_mutex_);
  if (requested_.contains(&kernel)) return;
  // `kernel` is one of kernels_, which never moves: the job reaches it only while it holds the
  // module.
  const bool queued = worker_->Submit([module = weak_from_this(), kernel = &kernel] {
    const std::shared_ptr<SharedModule> held = module.lock();
    if (held == nullptr) return;  // unloaded while the job waited
    held->PrepareForms(*kernel);
    ++held->counters_->forms_made;
  });
  if (!queued) return;
  requested_.insert(&kernel);
  ++counters_->forms_queued;
}

absl::StatusOr<const Kernel*> SharedModule::FindKernel(const std::string& mangled_name) const {
  auto it = kernels_.find(mangled_name);
  if (it != kernels_.end()) return &it->second;
  if (!parsed_->machine_code) {
    return ClientError(CUDA_ERROR_NOT_FOUND,
                       absl::StrFormat("the module has no kernel named '%s'", mangled_name));
  }
  std::lock_guard lock(found_mutex_);
  auto found = found_kernels_.find(mangled_name);
  if (found != found_kernels_.end()) return &found->second;
  TALLY_ASSIGN_OR_RETURN(Kernel kernel, MachineCodeKernel(api_, module_, *parsed_, mangled_name));
  return &found_kernels_.emplace(mangled_name, std::move(kernel)).first->second;
}

absl::StatusOr<std::pair<CUdeviceptr, size_t>> SharedModule::FindGlobal(
    const std::string& mangled_name) const {
  CUdeviceptr address = 0;
  size_t size = 0;
  if (api_.cuModuleGetGlobal(&address, &size, module_, mangled_name.c_str()) != CUDA_SUCCESS) {
    return ClientError(CUDA_ERROR_NOT_FOUND,
                       absl::StrFormat("the module has no variable named '%s'", mangled_name));
  }
  if (parsed_->machine_code) {
    std::lock_guard lock(found_mutex_);
    found_globals_.insert(mangled_name);
  }
  return std::make_pair(address, size);
}

absl::Status SharedModule::ResetVariables(CUstream stream) const {
  std::vector<std::string> names = parsed_->state_variables;
  // The binding to the client's device output ring is the server's, not the program's.
  std::erase(names, std::string(kDeviceOutputVariable));
  if (parsed_->machine_code) {
    std::lock_guard lock(found_mutex_);
    names.assign(found_globals_.begin(), found_globals_.end());
  }
  if (names.empty()) return absl::OkStatus();
  CUmodule fresh = nullptr;
  const CUresult loaded = parsed_->machine_code
                              ? api_.cuModuleLoadData(&fresh, parsed_->image.data())
                              : machine_code_->Load(&fresh, parsed_->ptx).result;
  TALLY_RETURN_IF_ERROR(CheckCu(loaded, "cuModuleLoadData (initial values of module variables)"));
  CUresult result = CUDA_SUCCESS;
  for (const std::string& name : names) {
    CUdeviceptr initial = 0;
    CUdeviceptr current = 0;
    size_t initial_size = 0;
    size_t current_size = 0;
    // A variable the compiler dropped is in neither module.
    if (api_.cuModuleGetGlobal(&initial, &initial_size, fresh, name.c_str()) != CUDA_SUCCESS ||
        api_.cuModuleGetGlobal(&current, &current_size, module_, name.c_str()) != CUDA_SUCCESS ||
        initial_size != current_size) {
      continue;
    }
    result = api_.cuMemcpyDtoDAsync(current, initial, current_size, stream);
    if (result != CUDA_SUCCESS) break;
  }
  if (result == CUDA_SUCCESS) result = api_.cuStreamSynchronize(stream);
  api_.cuModuleUnload(fresh);
  return CheckCu(result, "resetting module variables");
}

ModuleRegistry::ModuleRegistry(const Backend& backend, bool build_forms, bool fence,
                               std::shared_ptr<CodeCache> code_cache,
                               std::shared_ptr<FormsWorker> forms_worker, size_t forms_threads)
    : backend_(backend),
      build_forms_(build_forms),
      fence_(fence),
      redirect_device_output_(backend.extensions().tenant_take_output == nullptr),
      forms_worker_(std::move(forms_worker)) {
  int major = 0;
  int minor = 0;
  backend.api().cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                     backend.device());
  backend.api().cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                     backend.device());
  device_arch_ = static_cast<uint32_t>(major * 10 + minor);
  const std::string device = DeviceName(backend, device_arch_);
  const int driver_version = DriverVersion(backend.api());
  // One thread fills the cache with machine code: links run one at a time, beside the forms.
  if (code_cache != nullptr) fill_worker_ = BackgroundWorker(backend, 1);
  machine_code_ = std::make_shared<const MachineCode>(backend.api(), code_cache, device,
                                                      driver_version, fill_worker_);
  forms_cache_ = std::make_shared<const FormsCache>(std::move(code_cache), device, driver_version);
  if (build_forms_ && forms_worker_ == nullptr) {
    forms_worker_ = BackgroundWorker(backend, forms_threads);
  }
}

ModuleRegistry::~ModuleRegistry() { StopForms(); }

void ModuleRegistry::SetFormsDone(std::function<void()> on_done) {
  if (forms_worker_ != nullptr) forms_worker_->SetOnDone(std::move(on_done));
}

std::vector<FormsWorker*> ModuleRegistry::Workers() const {
  std::vector<FormsWorker*> workers;
  for (FormsWorker* worker : {forms_worker_.get(), fill_worker_.get()}) {
    if (worker != nullptr) workers.push_back(worker);
  }
  return workers;
}

absl::Status ModuleRegistry::ResetContext(const std::function<absl::Status()>& reset) {
  for (FormsWorker* worker : Workers()) worker->Pause();
  DropKeptModules();
  const absl::Status status = reset();
  for (FormsWorker* worker : Workers()) worker->Resume();
  return status;
}

void ModuleRegistry::StopForms() {
  for (FormsWorker* worker : Workers()) worker->Stop();
}

absl::StatusOr<std::shared_ptr<SharedModule>> ModuleRegistry::Register(
    std::span<const std::byte> image) {
  const uint64_t hash = ipc::ContentHash(image);
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lock(mutex_);
    ForgetExpired();
    std::shared_ptr<Entry>& slot = entries_[hash];
    if (slot == nullptr) slot = std::make_shared<Entry>();
    entry = slot;
  }
  std::lock_guard lock(entry->mutex);
  std::shared_ptr<const ParsedImage> parsed = entry->parsed.lock();
  if (parsed == nullptr || !std::ranges::equal(parsed->image, image)) {
    // New content (or a different fatbin with an equal hash, which replaces the entry; modules
    // of the old one stay valid).
    TALLY_ASSIGN_OR_RETURN(parsed, Parse(image, hash));
    entry->parsed = parsed;
    entry->shared.reset();
  }
  if (std::shared_ptr<SharedModule> shared = entry->shared.lock()) {
    ++counters_->modules_registered;
    Keep(shared);
    return shared;
  }
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<SharedModule> module, Load(parsed));
  const bool shared = parsed->state_variables.empty() && !parsed->machine_code;
  if (shared) entry->shared = module;
  ++counters_->modules_registered;
  {
    std::lock_guard registry(mutex_);
    loaded_.push_back(module);
  }
  if (shared) Keep(module);
  return module;
}

void ModuleRegistry::Keep(const std::shared_ptr<SharedModule>& module) {
  if (kept_limit_ == 0) return;
  std::shared_ptr<SharedModule> dropped;  // unloaded outside the lock
  std::lock_guard lock(mutex_);
  std::erase(kept_, module);
  kept_.push_front(module);
  if (kept_.size() > kept_limit_) {
    dropped = std::move(kept_.back());
    kept_.pop_back();
  }
}

void ModuleRegistry::DropKeptModules() {
  std::deque<std::shared_ptr<SharedModule>> dropped;
  std::lock_guard lock(mutex_);
  dropped.swap(kept_);
}

size_t ModuleRegistry::loaded_count() {
  std::lock_guard lock(mutex_);
  ForgetExpired();
  return loaded_.size();
}

void ModuleRegistry::ForgetExpired() {
  std::erase_if(loaded_, [](const auto& module) { return module.expired(); });
  for (auto it = entries_.begin(); it != entries_.end();) {
    // An entry someone else holds may be being parsed right now (its image not yet set). Entries
    // are handed out under mutex_, so a count of 1 stays 1 while we hold it.
    // flat_hash_map::erase(it++) is the documented way to erase while iterating.
    if (it->second.use_count() == 1 && it->second->parsed.expired()) {
      entries_.erase(it++);
    } else {
      ++it;
    }
  }
}

absl::StatusOr<std::shared_ptr<const ParsedImage>> ModuleRegistry::Parse(
    std::span<const std::byte> image, uint64_t content_hash) {
  absl::StatusOr<DeviceCode> read = ImageCode(image);
  auto parsed = std::make_shared<ParsedImage>();
  parsed->image.assign(image.begin(), image.end());
  parsed->content_hash = content_hash;
  if (!read.ok()) {
    // No PTX for this device: the driver may still have machine code for it (Load).
    if (ResultOf(read.status()) != CUDA_ERROR_NO_BINARY_FOR_GPU) return read.status();
    parsed->machine_code = true;
    parsed->refusal = read.status();
    return parsed;
  }
  DeviceCode& code = *read;
  if (forms_cache_->cache() != nullptr) {
    parsed->ptx_hash = ipc::ContentHash(std::as_bytes(std::span(code.ptx)));
  }
  parsed->ptx_arch = code.arch;
  if (!code.module) {
    if (ReadDeclarationsOnly(code.ptx, *parsed)) return parsed;
    auto module = ptx::ParseModuleOrError(code.ptx, "<module ptx>");
    if (!module.ok()) return ClientError(CUDA_ERROR_INVALID_PTX, module.status().message());
    code.module = *std::move(module);
  }
  ptx::Module& module = *code.module;
  TALLY_RETURN_IF_ERROR(RedirectManagedVariables(code));
  auto signatures = ptx::ComputeSignatures(module);
  if (!signatures.ok()) return ClientError(CUDA_ERROR_INVALID_PTX, signatures.status().message());
  parsed->unresolved_functions = std::move(code.unresolved_functions);
  parsed->signatures = *std::move(signatures);
  counters_->kernels_indexed += parsed->signatures.size();
  const bool redirect_output = redirect_device_output_ && ptx::UsesDeviceOutput(module);
  // A kernel's variants can be made alone, in a module of their own, unless they must share
  // module state with the originals (variables, the device output binding) or are fenced (the
  // fenced kernels are the originals; strict refuses a module with an unfenceable one at load).
  parsed->lazy_forms =
      build_forms_ && !fence_ && !redirect_output && StateVariables(module).empty();
  const bool transform_now = (build_forms_ || fence_) && !parsed->lazy_forms;
  if (redirect_output) {
    // The transformation takes the module before the rewrite; the module loaded for the original
    // forms gets it too.
    if (transform_now) {
      parsed->transformed = TransformModuleForms(*parsed, module, /*redirect_output=*/true);
    }
    parsed->redirects_device_output = RedirectOutput(module);
    if (parsed->redirects_device_output) code.ptx = ptx::PrintModule(module);
  }
  parsed->ptx = std::move(code.ptx);
  parsed->state_variables = StateVariables(module);
  if (transform_now && !redirect_output) {
    parsed->transformed =
        TransformModuleForms(*parsed, std::move(module), /*redirect_output=*/false);
  }
  if (parsed->transformed) counters_->kernels_transformed += parsed->transformed->forms.size();
  if (parsed->lazy_forms) {
    // The text parsed whole, so the scan follows it (a linked program's is printed by Tally).
    absl::StatusOr<ptx::ModuleIndex> index = ptx::IndexModule(parsed->ptx);
    if (index.ok()) {
      parsed->index = *std::move(index);
    } else {
      TALLY_LOG_WARN("a module's kernels run in their original form only: {}",
                     std::string(index.status().message()));
      parsed->lazy_forms = false;
    }
  }
  return parsed;
}

bool ModuleRegistry::ReadDeclarationsOnly(std::string& ptx, ParsedImage& parsed) {
  if (fence_) return false;
  absl::StatusOr<ptx::ModuleIndex> index = ptx::IndexModule(ptx);
  if (!index.ok()) return false;
  absl::StatusOr<ptx::Module> declarations =
      ptx::ParseModuleOrError(ptx::DeclarationsText(ptx, *index));
  if (!declarations.ok() || !StateVariables(*declarations).empty() ||
      (redirect_device_output_ && ptx::UsesDeviceOutput(*declarations))) {
    return false;
  }
  absl::StatusOr<std::vector<ptx::KernelSignature>> signatures =
      ptx::ComputeSignatures(*declarations);
  if (!signatures.ok() || signatures->size() != index->entries.size()) return false;
  parsed.signatures = *std::move(signatures);
  counters_->kernels_indexed += parsed.signatures.size();
  parsed.ptx = std::move(ptx);
  parsed.lazy_forms = build_forms_;
  parsed.index = *std::move(index);
  return true;
}

std::optional<TransformedCode> ModuleRegistry::TransformModuleForms(const ParsedImage& parsed,
                                                                    ptx::Module module,
                                                                    bool redirect_output) const {
  return forms_cache_->FindOrMake(
      parsed.ptx_hash, /*kernel=*/"", FormOptions(), redirect_output,
      [&] { return TransformForms(module, redirect_output, FormOptions()); });
}

absl::StatusOr<DeviceCode> ModuleRegistry::ImageCode(std::span<const std::byte> image) {
  constexpr std::byte kElfMagic[] = {std::byte{0x7f}, std::byte{'E'}, std::byte{'L'},
                                     std::byte{'F'}};
  if (image.size() >= sizeof(kElfMagic) && std::ranges::equal(image.first(4), kElfMagic)) {
    return ClientError(CUDA_ERROR_NO_BINARY_FOR_GPU,
                       "the image is a cubin (machine code only): Tally transforms device code "
                       "as PTX, so load PTX text or a fatbin that contains PTX");
  }
  auto entries = ptx::ReadFatbin({reinterpret_cast<const uint8_t*>(image.data()), image.size()});
  if (entries.ok()) return SelectDeviceCode(*entries, device_arch_);
  // cuModuleLoadData's other form: PTX text, NUL-terminated (CUDA Driver API, cuModuleLoadData).
  const auto nul = std::ranges::find(image, std::byte{0});
  if (image.empty() || nul != image.end() - 1) {
    return ClientError(CUDA_ERROR_INVALID_IMAGE,
                       absl::StrFormat("not a fatbin (%s), and not NUL-terminated PTX text",
                                       entries.status().message()));
  }
  DeviceCode code;
  code.ptx.assign(reinterpret_cast<const char*>(image.data()), image.size() - 1);
  return code;
}

absl::StatusOr<std::shared_ptr<SharedModule>> ModuleRegistry::LoadMachineCode(
    std::shared_ptr<const ParsedImage> parsed) {
  CUmodule module = nullptr;
  const LoadOutcome loaded = LoadImage(backend_.api(), &module, parsed->image.data());
  if (loaded.result != CUDA_SUCCESS) {
    TALLY_LOG_ERROR("cannot load a module ({}-byte image without PTX for the device): {}: {}",
                    parsed->image.size(), CuResultText(loaded.result), loaded.log);
    return ClientError(CUDA_ERROR_NO_BINARY_FOR_GPU,
                       absl::StrFormat("%s; the device has no machine code in it either (%s)",
                                       parsed->refusal.message(), loaded.log));
  }
  TALLY_LOG_INFO(
      "loaded a module ({}-byte image of machine code: its kernels run in their original form "
      "only)",
      parsed->image.size());
  return std::make_shared<SharedModule>(backend_, counters_, forms_cache_, machine_code_, module,
                                        std::move(parsed),
                                        absl::flat_hash_map<std::string, Kernel>{});
}

absl::StatusOr<std::shared_ptr<SharedModule>> ModuleRegistry::Load(
    std::shared_ptr<const ParsedImage> parsed) {
  if (parsed->machine_code) return LoadMachineCode(std::move(parsed));
  const DriverApi& api = backend_.api();
  const CUdevice device = backend_.device();
  CUmodule module = nullptr;
  bool transformed = false;
  if (parsed->transformed) {
    const LoadOutcome loaded = machine_code_->Load(&module, parsed->transformed->ptx);
    transformed = loaded.result == CUDA_SUCCESS;
    if (!transformed) {
      TALLY_LOG_WARN(
          "the transformed module did not load ({}: {}): its kernels run in their original "
          "forms",
          CuResultText(loaded.result), loaded.log);
    }
  }
  if (!transformed) {
    const LoadOutcome loaded = machine_code_->Load(&module, parsed->ptx);
    if (loaded.result != CUDA_SUCCESS) {
      std::string why = loaded.log;
      if (!parsed->unresolved_functions.empty()) {
        why += absl::StrFormat(" (the linked device code calls %s without defining it)",
                               absl::StrJoin(parsed->unresolved_functions, ", "));
      }
      // Every launch of the module's kernels fails because of this: the operator reads why here,
      // the client gets it with the error.
      TALLY_LOG_ERROR("cannot load a module ({}-byte {}, sm_{} PTX): {}: {}", parsed->image.size(),
                      parsed->ptx_arch != 0 ? "fatbin" : "PTX image", parsed->ptx_arch,
                      CuResultText(loaded.result), why);
      // A construct the device cannot compile (the emulator answers CUDA_ERROR_NOT_SUPPORTED) is
      // a failed PTX compilation to the application: CUDA_ERROR_INVALID_PTX, "a PTX JIT
      // compilation failed" (CUDA Driver API, CUresult), which the runtime's launches report as
      // cudaErrorInvalidPtx.
      const CUresult result =
          loaded.result == CUDA_ERROR_NOT_SUPPORTED ? CUDA_ERROR_INVALID_PTX : loaded.result;
      return ClientError(result, "the device cannot load the module: " + why);
    }
  }
  absl::flat_hash_map<std::string, Kernel> kernels;
  for (const ptx::KernelSignature& signature : parsed->signatures) {
    Kernel kernel;
    const CUresult found =
        api.cuModuleGetFunction(&kernel.function, module, signature.name.c_str());
    if (found != CUDA_SUCCESS) {
      api.cuModuleUnload(module);
      return CheckCu(found, "cuModuleGetFunction");
    }
    kernel.signature = signature;
    kernel.identity = KernelIdentity(*parsed, signature.name);
    kernel.forms_pending = FormsPending(parsed->lazy_forms);
    if (transformed) {
      counters_->forms_loaded += AttachForms(api, device, module, *parsed->transformed, kernel);
    }
    if (fence_ && !kernel.fenced && kernel.fence_refusal.empty()) {
      kernel.fence_refusal = "its module's fenced forms were not made or did not load";
    }
    kernels.emplace(signature.name, std::move(kernel));
  }
  // Only fenced launches pass the range: without the fence, loading asks nothing more.
  absl::StatusOr<ModuleVariableRange> variables =
      fence_ ? VariableRangeOf(api, module, parsed->state_variables) : ModuleVariableRange{};
  if (!variables.ok()) {
    api.cuModuleUnload(module);
    return variables.status();
  }
  TALLY_LOG_INFO("loaded a module ({}-byte {}, sm_{} PTX, {} kernel(s){}{})", parsed->image.size(),
                 parsed->ptx_arch != 0 ? "fatbin" : "PTX image", parsed->ptx_arch, kernels.size(),
                 !parsed->state_variables.empty() ? ", per-client module state" : "",
                 transformed          ? ", with transformed forms"
                 : parsed->lazy_forms ? ", transformed forms made per kernel when first wanted"
                                      : "");
  return std::make_shared<SharedModule>(backend_, counters_, forms_cache_, machine_code_, module,
                                        std::move(parsed), std::move(kernels), *variables,
                                        forms_worker_);
}

}  // namespace tally::server
