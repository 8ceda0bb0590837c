// dlopen and dlsym as the application sees them: a program that dlopens the CUDA driver
// (libcuda.so.1: NVRTC users, most frameworks) gets the shim instead, also on a machine whose
// NVIDIA driver would otherwise be found, and dlsym on a handle of a real libcuda loaded anyway
// (a program linked with -lcuda) answers the shim's entry points. Everything else goes to the C
// library's functions unchanged.
//
// The application's imports are versioned (dlopen@GLIBC_2.34, older binaries @GLIBC_2.2.5), so
// the shim defines both versions (exports.map). Forwarding must be a tail jump: glibc's dlopen
// and dlsym look at their return address to find the caller (its RUNPATH for dlopen, the
// objects after it for dlsym(RTLD_NEXT)), which must stay the application's, not the shim's.
// Hence the small x86-64 trampolines below; elsewhere nothing is interposed and a driver-less
// machine relies on tally-run's libcuda.so.1 directory alone (tools/README.md).
#if defined(__x86_64__)

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string_view>

namespace {

using DlopenFn = void* (*)(const char*, int);
using DlsymFn = void* (*)(void*, const char*);

// The C library's functions (dlvsym is not interposed, and RTLD_NEXT from the shim skips the
// shim). Safe to look up at any moment, also while the process's libraries are still being
// initialised: a library preloaded beside the shim (a sanitizer's runtime, an allocator) may
// call dlsym from its constructor.
struct Real {
  DlopenFn dlopen = nullptr;
  DlsymFn dlsym = nullptr;
};

template <typename Fn>
Fn Find(const char* name) {
  void* found = dlvsym(RTLD_NEXT, name, "GLIBC_2.34");
  if (found == nullptr) found = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
  return reinterpret_cast<Fn>(found);
}

const Real& GetReal() {
  static const Real real{Find<DlopenFn>("dlopen"), Find<DlsymFn>("dlsym")};
  return real;
}

// The shim's own file and handle, looked up only for a call that may concern the driver: the
// dlopen(RTLD_NOLOAD) of it runs the initialisers of libraries not yet initialised, which during
// start-up would run them out of order (libstdc++'s users before libstdc++: a crash).
struct Self {
  const char* path = nullptr;
  void* handle = nullptr;
};

const Self& GetSelf() {
  static const Self self = [] {
    Self s;
    Dl_info info{};
    const DlopenFn real_dlopen = GetReal().dlopen;
    if (real_dlopen != nullptr && dladdr(reinterpret_cast<void*>(&GetSelf), &info) != 0) {
      s.path = info.dli_fname;
      s.handle = real_dlopen(s.path, RTLD_LAZY | RTLD_NOLOAD);
    }
    return s;
  }();
  return self;
}

// libcuda.so, libcuda.so.1, ... by any path.
bool IsDriverLibrary(const char* path) {
  if (path == nullptr) return false;
  const char* slash = std::strrchr(path, '/');
  const std::string_view base = slash != nullptr ? slash + 1 : path;
  return base == "libcuda.so" || base.starts_with("libcuda.so.");
}

// Whether `handle` is a real driver library's (not the shim's).
bool IsDriverHandle(const Self& self, void* handle) {
  if (handle == self.handle) return false;
  link_map* map = nullptr;
  return dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr &&
         IsDriverLibrary(map->l_name);
}

}  // namespace

// Called by the trampolines: true when the shim answers (in *result), false to forward the call
// to tally_real_dlopen / tally_real_dlsym, which are set by then.
extern "C" {

__attribute__((visibility("hidden"))) DlopenFn tally_real_dlopen = nullptr;
__attribute__((visibility("hidden"))) DlsymFn tally_real_dlsym = nullptr;

__attribute__((visibility("hidden"))) bool tally_redirect_dlopen(const char* file, int flags,
                                                                 void** result) noexcept {
  const Real& real = GetReal();
  tally_real_dlopen = real.dlopen;
  if (!IsDriverLibrary(file)) return false;
  const Self& self = GetSelf();
  if (self.handle == nullptr) return false;
  // Another reference to the loaded shim, with the caller's binding flags.
  *result = real.dlopen(self.path, flags | RTLD_NOLOAD);
  return true;
}

__attribute__((visibility("hidden"))) bool tally_redirect_dlsym(void* handle, const char* name,
                                                                void** result) noexcept {
  const Real& real = GetReal();
  tally_real_dlsym = real.dlsym;
  if (handle == RTLD_DEFAULT || handle == RTLD_NEXT) return false;
  const Self& self = GetSelf();
  if (self.handle == nullptr || !IsDriverHandle(self, handle)) return false;
  *result = real.dlsym(self.handle, name);
  return true;
}

}  // extern "C"

// dlopen(file, flags) and dlsym(handle, name): both take two pointer-or-int arguments in rdi and
// rsi. Each asks its redirect function (arguments saved, the out-parameter on the stack, the
// stack 16-byte aligned for the call) and either returns its answer or restores the arguments
// and jumps to the C library's function, so that the caller's return address stays in place.
// clang-format off
#define TALLY_INTERPOSE(name)                                \
  asm(".text\n"                                              \
      ".p2align 4\n"                                         \
      ".globl tally_" #name "\n"                             \
      ".globl tally_" #name "_old\n"                         \
      ".type tally_" #name ", @function\n"                   \
      ".type tally_" #name "_old, @function\n"               \
      "tally_" #name ":\n"                                   \
      "tally_" #name "_old:\n"                               \
      ".cfi_startproc\n"                                     \
      "subq $24, %rsp\n"                                     \
      ".cfi_def_cfa_offset 32\n"                             \
      "movq %rdi, (%rsp)\n"                                  \
      "movq %rsi, 8(%rsp)\n"                                 \
      "leaq 16(%rsp), %rdx\n"                                \
      "call tally_redirect_" #name "\n"                      \
      "testb %al, %al\n"                                     \
      "jz 1f\n"                                              \
      "movq 16(%rsp), %rax\n"                                \
      "addq $24, %rsp\n"                                     \
      ".cfi_remember_state\n"                                \
      ".cfi_def_cfa_offset 8\n"                              \
      "ret\n"                                                \
      ".cfi_restore_state\n"                                 \
      "1:\n"                                                 \
      "movq (%rsp), %rdi\n"                                  \
      "movq 8(%rsp), %rsi\n"                                 \
      "addq $24, %rsp\n"                                     \
      ".cfi_def_cfa_offset 8\n"                              \
      "jmp *tally_real_" #name "(%rip)\n"                    \
      ".cfi_endproc\n"                                       \
      ".size tally_" #name ", . - tally_" #name "\n"         \
      ".size tally_" #name "_old, . - tally_" #name "_old\n" \
      ".symver tally_" #name ", " #name "@@GLIBC_2.34\n"     \
      ".symver tally_" #name "_old, " #name "@GLIBC_2.2.5\n")
// clang-format on

TALLY_INTERPOSE(dlopen);
TALLY_INTERPOSE(dlsym);

#endif  // defined(__x86_64__)
