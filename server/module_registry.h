// Device code shared by all clients: each distinct fatbin is parsed once (keyed by its content
// hash, confirmed byte for byte). Its loaded module is shared too unless the PTX has module-scope
// .global or .const variables: those are per-process state in CUDA, so each client then gets a
// module of its own, loaded from the cached PTX.
//
// An image without PTX the device can compile (a cubin, or a fatbin of machine code only, as
// PyTorch's and NVIDIA's libraries ship) is handed to the driver as it is: NVIDIA's driver loads
// the machine code for its device, the emulated GPU refuses it. Its kernels are found by name
// when first asked for, their parameter layouts read with cuFuncGetParamInfo, and they run in
// their original form only (nothing to transform). Such a module is never shared: its variables
// cannot be listed, so they are assumed to exist.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "common/strong_id.h"
#include "ptx_transform/kernel_signature.h"
#include "ptx_transform/module_index.h"
#include "ptx_transform/transform.h"
#include "server/backend/backend.h"
#include "server/device_code.h"
#include "server/forms_cache.h"
#include "server/forms_worker.h"
#include "server/machine_code.h"

namespace tally::server {

// A transformed form of a kernel (ptx_transform/transform.h), launched with the parameter
// buffers of ptx_transform/launch_forms.h.
struct KernelVariant {
  CUfunction function = nullptr;
  ptx::KernelSignature signature;
  // What the transformation may have changed in the kernel's resources: its own static shared
  // memory (the PTB form's task slot comes on top of the kernel's) and the most threads a block
  // may have (its registers may be more than the original's).
  uint32_t static_shared_bytes = 0;
  uint32_t max_threads_per_block = 0;
};

// Lets `variant` take `bytes` of dynamic shared memory, as far as the device allows beside its own
// static shared memory (CUDA Driver API, cuFuncSetAttribute: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_
// SIZE_BYTES plus CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES may not pass the device's
// CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN). Launches that need more than it got
// keep their original form (KernelRuns::Describe).
void AllowDynamicShared(const DriverApi& api, CUdevice device, const KernelVariant& variant,
                        int bytes);

// Whether a kernel's variants are still to be made: read without a lock at every launch of it,
// cleared under its module's forms mutex once they are made (or cannot be), after which the
// variants are what a reader sees. Copies take the value (while a module's kernels are built).
class FormsPending {
 public:
  explicit FormsPending(bool pending = false) : pending_(pending) {}
  FormsPending(const FormsPending& other) : pending_(other.get()) {}
  FormsPending& operator=(const FormsPending& other) {
    pending_.store(other.get(), std::memory_order_relaxed);
    return *this;
  }
  bool get() const { return pending_.load(std::memory_order_acquire); }
  void Clear() { pending_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> pending_;
};

struct Kernel {
  // The kernel across servers and runs (the profiler's key): its module's content hash
  // continued with its name.
  KernelId identity;
  CUfunction function = nullptr;
  ptx::KernelSignature signature;
  // Built only when the scheduling policy uses transformed forms, and only for the kernels the
  // analysis found safe to transform (the others always run in their original form).
  std::optional<KernelVariant> sliced;
  std::optional<KernelVariant> preemptible;
  // Built only under --isolation fenced|strict: `function` and the variants are fenced in place
  // (they take ptx::FenceParams after the original parameters), or else why not.
  bool fenced = false;
  std::string fence_refusal;
  // The variants are still to be made (SharedModule::RequestForms, once a client the policy
  // shapes launches it):
  // until this is cleared, only the original form may be read or run.
  FormsPending forms_pending;
};

// What the registry did since the server started (tally-ctl status, "modules").
struct ModuleCounters {
  std::atomic<uint64_t> modules_registered{0};   // Register calls answered with a module
  std::atomic<uint64_t> kernels_indexed{0};      // kernels of the images parsed
  std::atomic<uint64_t> kernels_transformed{0};  // kernels whose variants were made (or found
                                                 // in the code cache)
  std::atomic<uint64_t> forms_loaded{0};         // variants loaded on the device
  std::atomic<uint64_t> forms_queued{0};  // kernels whose variants were queued for the worker
  std::atomic<uint64_t> forms_made{0};    // ... and the worker made (or found it could not)
  std::atomic<uint64_t> forms_waited{0};  // launches the dispatcher held for their variants
};

// A fatbin as parsed: what every module loaded from it shares.
struct ParsedImage {
  std::vector<std::byte> image;
  uint64_t content_hash = 0;  // of `image` (ipc/content_hash.h)
  std::string ptx;        // the entry selected for the device, a linked program's units linked, or
                          // the image itself (PTX text)
  uint64_t ptx_hash = 0;  // of that PTX as read, before any rewrite: the code cache's key
  uint32_t ptx_arch = 0;  // 0 for a PTX image
  // No PTX for the device: the image is loaded as the driver's own machine code, and `refusal`
  // is why Tally could not read it, the error when the driver cannot load it either.
  bool machine_code = false;
  absl::Status refusal;
  std::vector<ptx::KernelSignature> signatures;
  // Module-scope .global/.const variables: per-process state in CUDA.
  std::vector<std::string> state_variables;
  // Its printf and assert write into the client's ring (ptx_transform/device_output.h), which
  // the client's session points the module at.
  bool redirects_device_output = false;
  std::vector<std::string> unresolved_functions;  // linked programs: left to the driver
  // Made at the parse (with the fence, or when the variants share module state with the
  // originals): the module with every kernel's variants added.
  std::optional<TransformedCode> transformed;
  // Otherwise, where the policy uses transformed forms, each kernel's variants are made once the
  // policy would run a launch of it shaped, in a module of their own, from that kernel's text alone
  // (`index`: where each kernel is in `ptx`).
  bool lazy_forms = false;
  ptx::ModuleIndex index;
};

// A loaded CUmodule with its kernels; unloaded when the last holder lets go.
// Where a module's variables are (rounded out to 256 bytes), for fenced launches; empty for a
// module without variables, or when the registry does not fence.
struct ModuleVariableRange {
  CUdeviceptr base = 0;
  uint64_t size = 0;
};

class SharedModule : public std::enable_shared_from_this<SharedModule> {
 public:
  // `worker` makes the variants of a module that makes them per kernel (RequestForms); null:
  // they are made on the thread that requests them.
  SharedModule(const Backend& backend, std::shared_ptr<ModuleCounters> counters,
               std::shared_ptr<const FormsCache> forms_cache,
               std::shared_ptr<const MachineCode> machine_code, CUmodule module,
               std::shared_ptr<const ParsedImage> parsed,
               absl::flat_hash_map<std::string, Kernel> kernels, ModuleVariableRange variables = {},
               std::shared_ptr<FormsWorker> worker = nullptr)
      : api_(backend.api()),
        device_(backend.device()),
        worker_(std::move(worker)),
        counters_(std::move(counters)),
        forms_cache_(std::move(forms_cache)),
        machine_code_(std::move(machine_code)),
        module_(module),
        parsed_(std::move(parsed)),
        kernels_(std::move(kernels)),
        variables_(variables) {}
  SharedModule(const SharedModule&) = delete;
  SharedModule& operator=(const SharedModule&) = delete;
  ~SharedModule();

  // CUDA_ERROR_NOT_FOUND for a name the module has no kernel of. A machine-code module's
  // kernels are looked up in the driver on first use (the pointer stays valid with the module).
  absl::StatusOr<const Kernel*> FindKernel(const std::string& mangled_name) const;
  // Makes `kernel`'s variants if its module makes them per kernel and they are not made yet:
  // called before a launch of it is queued (and before its variants are set attributes), so
  // that whoever reads them later finds them made. One kernel at a time per module; a kernel
  // whose variants cannot be made or loaded runs in its original form (the log says why).
  void PrepareForms(const Kernel& kernel);
  // Queues PrepareForms(kernel) for the background worker, once, if its variants are still to be
  // made: the original form is ready meanwhile. Cheap and non-blocking: called by the dispatcher
  // for each launch of the kernel queued by a client the policy shapes, and while it holds a
  // launch for them (a request the full queue refused is made again). A module unloaded before
  // its job runs is not touched by it.
  void RequestForms(const Kernel& kernel);
  // Gives `kernel`'s variants a setting of cuFuncSetAttribute that its original got, the dynamic
  // shared memory as far as each variant's own static shared memory leaves room for it (so that
  // a transformed launch may ask for what the original may); variants still to be made get it
  // when they are (it does not make them).
  void SetAttribute(const Kernel& kernel, CUfunction_attribute attribute, int value);
  // A launch of one of the module's kernels waited for its variants (tally-ctl status).
  void NoteFormsWaited() { ++counters_->forms_waited; }
  // Address and size of a module-scope variable; CUDA_ERROR_NOT_FOUND when there is none.
  absl::StatusOr<std::pair<CUdeviceptr, size_t>> FindGlobal(const std::string& mangled_name) const;
  const ParsedImage& parsed() const { return *parsed_; }
  CUmodule module() const { return module_; }
  ModuleVariableRange variable_range() const { return variables_; }
  // The kernels of a module with PTX (a machine-code module finds its own as asked for).
  const absl::flat_hash_map<std::string, Kernel>& kernels() const { return kernels_; }
  // Gives the module's variables their initial values again (cudaDeviceReset): copies them on
  // `stream` from a fresh load of the same code, and waits for the copies. A machine-code
  // module's variables are those FindGlobal was asked for (the host's registered variables).
  absl::Status ResetVariables(CUstream stream) const;

 private:
  const DriverApi& api_;
  CUdevice device_;
  std::shared_ptr<FormsWorker> worker_;
  std::shared_ptr<ModuleCounters> counters_;
  std::shared_ptr<const FormsCache> forms_cache_;
  std::shared_ptr<const MachineCode> machine_code_;
  CUmodule module_;
  std::shared_ptr<const ParsedImage> parsed_;
  absl::flat_hash_map<std::string, Kernel> kernels_;
  ModuleVariableRange variables_;
  void SetFormsAttribute(const Kernel& kernel, CUfunction_attribute attribute, int value) const;
  // The modules of the variants made per kernel, unloaded with this one.
  std::mutex forms_mutex_;
  std::vector<CUmodule> form_modules_;
  // Settings for variants still to be made, by kernel name, in the order given (forms_mutex_).
  absl::flat_hash_map<std::string, std::vector<std::pair<CUfunction_attribute, int>>> attributes_;
  // The kernels whose variants the worker has been asked for.
  std::mutex requested_mutex_;
  absl::flat_hash_set<const Kernel*> requested_;
  // A machine-code module's kernels and variables as they are asked for.
  mutable std::mutex found_mutex_;
  mutable absl::node_hash_map<std::string, Kernel> found_kernels_;
  mutable absl::flat_hash_set<std::string> found_globals_;
};

class ModuleRegistry {
 public:
  // With `build_forms`, kernels also get sliced and preemptible forms (for a scheduling policy
  // that uses them): each kernel's once the policy would run a launch of it shaped, on a
  // background worker (SharedModule::RequestForms; FormsWorker, at a lower OS priority), or every
  // kernel's at the parse for a module with state its variants must share (module variables,
  // the device output binding); with `fence`, every kernel that can be is fenced
  // (--isolation fenced|strict), its variants too, all at the parse (strict refuses a module
  // with an unfenceable kernel at its load). Transformed forms are looked for in `code_cache`
  // first, and stored there when made (null: none). The background worker is `forms_worker` (a
  // test's), else, with `build_forms`, one of the registry's own with `forms_threads` threads.
  // Every module with PTX, originals and forms, loads through MachineCode: with `code_cache` its
  // machine code is looked for there, and a miss is loaded as PTX and linked and stored
  // afterwards on a worker of one thread (at the forms worker's lower OS priority).
  ModuleRegistry(const Backend& backend, bool build_forms, bool fence = false,
                 std::shared_ptr<CodeCache> code_cache = nullptr,
                 std::shared_ptr<FormsWorker> forms_worker = nullptr, size_t forms_threads = 1);
  ~ModuleRegistry();  // StopForms

  // A module of this fatbin, cubin or NUL-terminated PTX text (cuModuleLoadData's images) for
  // one client. CUDA_ERROR_INVALID_IMAGE for bytes that are none of these,
  // CUDA_ERROR_NO_BINARY_FOR_GPU for machine code the device cannot load. The caller's thread
  // must have the backend's context current. Parsing, transforming and loading hold only the
  // image's own entry: clients registering other images are not held up, and those registering
  // the same image wait for the one that parses it.
  absl::StatusOr<std::shared_ptr<SharedModule>> Register(std::span<const std::byte> image);

  // Keeps the `count` most recently registered modules of images without module state loaded
  // after their last client lets go (0, the default: none), so that the next registration of
  // the same image finds them, forms and all. Call before serving.
  void KeepModules(size_t count) { kept_limit_ = count; }
  // Runs `reset` (the context's, after a fault, when no client is left) with the forms worker
  // held (its running job ended first) and the kept modules unloaded: nothing of the registry
  // uses the old context while it goes.
  absl::Status ResetContext(const std::function<absl::Status()>& reset);

  // Modules currently loaded on the device.
  size_t loaded_count();
  // Called whenever the worker finished a kernel's variants (the dispatcher's wake-up).
  void SetFormsDone(std::function<void()> on_done);
  // Stops the workers before what their jobs reach goes: variants not yet made stay pending,
  // machine code not yet linked is not stored.
  void StopForms();
  const ModuleCounters& counters() const { return *counters_; }
  // Null without a code cache.
  CodeCache* code_cache() const { return forms_cache_->cache(); }
  // How modules with PTX were loaded: their machine code from the code cache, or linked.
  const MachineCode& machine_code() const { return *machine_code_; }

 private:
  // The background workers the registry has (the forms worker, the machine code's filler).
  std::vector<FormsWorker*> Workers() const;
  // One content hash. Its mutex is held while its image is parsed and its module loaded.
  struct Entry {
    std::mutex mutex;
    std::weak_ptr<const ParsedImage> parsed;
    std::weak_ptr<SharedModule> shared;  // the module of a fatbin without module state
  };

  absl::StatusOr<std::shared_ptr<const ParsedImage>> Parse(std::span<const std::byte> image,
                                                            uint64_t content_hash);
  // Reads a single unit's kernels from its declarations alone (ptx_transform/module_index.h),
  // when nothing else of the module must be parsed now: no variables, no fence, no device
  // output to redirect. False when the module needs a whole parse.
  bool ReadDeclarationsOnly(std::string& ptx, ParsedImage& parsed);
  // The PTX of a fatbin image (device_code.h) or of PTX text.
  absl::StatusOr<DeviceCode> ImageCode(std::span<const std::byte> image);
  absl::StatusOr<std::shared_ptr<SharedModule>> Load(std::shared_ptr<const ParsedImage> parsed);
  // Every kernel's forms of `module` (parsed from `parsed`'s PTX) in one module, with the fence
  // where the registry fences: from the code cache, else made from `module`.
  std::optional<TransformedCode> TransformModuleForms(const ParsedImage& parsed, ptx::Module module,
                                                      bool redirect_output) const;
  // An image without PTX for the device, as the driver loads it.
  absl::StatusOr<std::shared_ptr<SharedModule>> LoadMachineCode(
      std::shared_ptr<const ParsedImage> parsed);
  void ForgetExpired();
  // What the transformation makes of each module.
  ptx::TransformOptions FormOptions() const {
    return {.slice = build_forms_, .preemptible = build_forms_, .fence = fence_};
  }

  const Backend& backend_;
  bool build_forms_ = false;
  bool fence_ = false;
  // The device has one printf buffer for every client (no tenant output): printf and assert
  // are redirected to each client's ring.
  bool redirect_device_output_ = false;
  uint32_t device_arch_ = 0;  // 80 for sm_80
  std::mutex mutex_;  // entries_ and loaded_, never held while parsing or loading
  absl::flat_hash_map<uint64_t, std::shared_ptr<Entry>> entries_;  // by content hash
  std::vector<std::weak_ptr<SharedModule>> loaded_;
  size_t kept_limit_ = 0;
  std::deque<std::shared_ptr<SharedModule>> kept_;  // the most recently registered first
  // Puts `module` first among the kept ones, and lets the least recent beyond the limit go.
  void Keep(const std::shared_ptr<SharedModule>& module);
  // Unloads the kept modules that no client holds.
  void DropKeptModules();
  // Shared with the modules, which may outlive the registry (abandoned clients').
  std::shared_ptr<ModuleCounters> counters_ = std::make_shared<ModuleCounters>();
  std::shared_ptr<const FormsCache> forms_cache_;
  // Modules with PTX are loaded through it (shared with the modules, as the forms cache is).
  std::shared_ptr<const MachineCode> machine_code_;
  std::shared_ptr<FormsWorker> forms_worker_;  // with build_forms
  std::shared_ptr<FormsWorker> fill_worker_;   // with a code cache: MachineCode's filler
};

}  // namespace tally::server
