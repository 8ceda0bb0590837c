// Module loading: image kind detection (PTX, fatbin, fatbin wrapper), parsing, placement and
// initialisation of module variables in device memory, and lowering to executable form.
#include "emulator/internal/module.h"

#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>
#include <span>

#include "common/log.h"
#include "common/status.h"
#include "emulator/internal/cuda_status.h"
#include "emulator/internal/machine_code.h"
#include "ptx_transform/fatbin.h"
#include "ptx_transform/kernel_signature.h"
#include "ptx_transform/parser.h"

namespace tally::emu {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;         // fatbin header
constexpr uint32_t kFatbinWrapperMagic = 0x466243B1;  // __fatBinC_Wrapper_t
constexpr uint32_t kElfMagic = 0x464C457F;            // "\x7fELF"

// Whether `c` may begin PTX text: printable, white space, or UTF-8 (a comment's).
bool BeginsText(unsigned char c) {
  return c >= 0x20 ? c != 0x7f : c == '\t' || c == '\n' || c == '\r';
}

// The PTX text inside `image`: PTX text itself, a fatbin's PTX for `arch`, or the PTX of the
// emulator's own machine code (machine_code.h).
absl::StatusOr<std::string> PtxOf(const void* image, uint32_t arch) {
  if (image == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null image");
  uint32_t magic = 0;
  std::memcpy(&magic, image, sizeof(magic));
  if (magic == kElfMagic) {
    return CudaError(CUDA_ERROR_NOT_SUPPORTED,
                     "cubin (SASS) images cannot be executed by the emulator; load PTX");
  }
  if (IsMachineCode(image)) {
    TALLY_ASSIGN_OR_RETURN(std::string_view ptx, MachineCodePtx(image, arch));
    return std::string(ptx);
  }
  if (magic != kFatbinMagic && magic != kFatbinWrapperMagic) {
    if (!BeginsText(*static_cast<const unsigned char*>(image))) {
      return CudaError(CUDA_ERROR_INVALID_IMAGE,
                       "the image is no PTX text, fatbin or machine code of the emulated GPU");
    }
    return std::string(static_cast<const char*>(image));
  }
  absl::StatusOr<std::vector<ptx::FatbinEntry>> entries;
  if (magic == kFatbinWrapperMagic) {
    entries = ptx::ReadFatbinWrapper(image);
  } else {
    // Fatbin header: magic, version (u16), header size (u16), size of the entries (u64).
    uint16_t header_size = 0;
    uint64_t body_size = 0;
    std::memcpy(&header_size, static_cast<const uint8_t*>(image) + 6, sizeof(header_size));
    std::memcpy(&body_size, static_cast<const uint8_t*>(image) + 8, sizeof(body_size));
    entries =
        ptx::ReadFatbin(std::span(static_cast<const uint8_t*>(image), header_size + body_size));
  }
  if (!entries.ok()) {
    return CudaError(CUDA_ERROR_INVALID_IMAGE, std::string(entries.status().message()));
  }
  const ptx::FatbinEntry* entry = ptx::SelectPtxForArch(*entries, arch);
  if (entry == nullptr) {
    return CudaError(CUDA_ERROR_NO_BINARY_FOR_GPU,
                     "the fatbin has no PTX for sm_" + std::to_string(arch));
  }
  return entry->payload;
}

// What names in initializers resolve to: module variables and out-of-line functions.
struct InitializerNames {
  const exec::ModuleSymbols& variables;
  const exec::CallGraph& functions;
};

// The value of an integer or address constant expression in an initializer: literals, the
// addresses of module variables (`sym`, `generic(sym)`) and functions (device function-pointer
// tables, vtables) and arithmetic on them.
absl::StatusOr<uint64_t> EvaluateInitializer(const ptx::Expr& expr,
                                             const InitializerNames& symbols) {
  using Kind = ptx::Expr::Kind;
  switch (expr.kind) {
    case Kind::kInt:
      return static_cast<uint64_t>(expr.int_value);
    case Kind::kSymbol:
    case Kind::kCall: {
      const ptx::Expr* symbol = &expr;
      if (expr.kind == Kind::kCall) {
        if (expr.text != "generic" || expr.children.size() != 1) break;
        symbol = &expr.children[0];
      }
      if (symbol->kind != Kind::kSymbol) break;
      if (auto it = symbols.variables.find(symbol->text); it != symbols.variables.end()) {
        return it->second.address;
      }
      auto function = symbols.functions.index.find(symbol->text);
      if (function == symbols.functions.index.end() || expr.kind == Kind::kCall) break;
      return exec::FunctionAddress(function->second);
    }
    case Kind::kUnary: {
      TALLY_ASSIGN_OR_RETURN(uint64_t value, EvaluateInitializer(expr.children.at(0), symbols));
      if (expr.text == "-") return 0 - value;
      if (expr.text == "~") return ~value;
      if (expr.text == "!") return static_cast<uint64_t>(value == 0);
      break;
    }
    case Kind::kBinary: {
      TALLY_ASSIGN_OR_RETURN(uint64_t a, EvaluateInitializer(expr.children.at(0), symbols));
      TALLY_ASSIGN_OR_RETURN(uint64_t b, EvaluateInitializer(expr.children.at(1), symbols));
      if (expr.text == "+") return a + b;
      if (expr.text == "-") return a - b;
      if (expr.text == "*") return a * b;
      if (expr.text == "&") return a & b;
      if (expr.text == "|") return a | b;
      if (expr.text == "^") return a ^ b;
      if (expr.text == "<<" && b < 64) return a << b;
      if (expr.text == ">>" && b < 64) return a >> b;
      break;
    }
    default:
      break;
  }
  return CudaError(CUDA_ERROR_NOT_SUPPORTED, "unsupported variable initializer");
}

// Writes a variable initializer's scalars (PTX ISA, "Variable Initializers") into `out`.
absl::Status WriteInitializer(const ptx::Expr& expr, const std::string& type,
                              const InitializerNames& symbols, std::vector<uint8_t>& out) {
  using Kind = ptx::Expr::Kind;
  if (expr.kind == Kind::kList) {
    for (const ptx::Expr& element : expr.children) {
      TALLY_RETURN_IF_ERROR(WriteInitializer(element, type, symbols, out));
    }
    return absl::OkStatus();
  }
  uint32_t size = ptx::ScalarTypeSize(type);
  uint64_t bits = 0;
  if (expr.kind == Kind::kFloat) {
    bool f32_literal = expr.float_form == ptx::Expr::FloatForm::kHexF32;
    double value = f32_literal ? std::bit_cast<float>(static_cast<uint32_t>(expr.float_bits))
                               : std::bit_cast<double>(expr.float_bits);
    bits = size == 4 ? std::bit_cast<uint32_t>(static_cast<float>(value))
                     : std::bit_cast<uint64_t>(value);
  } else {
    TALLY_ASSIGN_OR_RETURN(bits, EvaluateInitializer(expr, symbols));
    // An integer initialising a float variable means that value.
    auto value = static_cast<int64_t>(bits);
    if (type == "f32") bits = std::bit_cast<uint32_t>(static_cast<float>(value));
    if (type == "f64") bits = std::bit_cast<uint64_t>(static_cast<double>(value));
  }
  for (uint32_t i = 0; i < size; ++i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
  return absl::OkStatus();
}

// cuModuleLoadData can only return a code: every reason to refuse a module is also logged.
absl::Status RefuseModule(absl::Status status) {
  TALLY_LOG_ERROR("emu: cannot load module: {}", std::string(status.message()));
  return status;
}

// Module variables get their own allocation owner, distinct from every context id, so that they
// are freed exactly once: by the module.
std::atomic<uint64_t> g_next_module_owner{1ull << 63};

}  // namespace

Module::Module(DeviceMemory& memory, uint64_t context_id)
    : memory_(memory), context_id_(context_id), owner_(g_next_module_owner++) {}

absl::Status Module::SetTenant(uint64_t tenant) const {
  if (variables_ == 0) return absl::OkStatus();
  return memory_.SetTenant(variables_, tenant);
}

absl::Status Module::PlaceGlobals(const ptx::Module& module, const exec::CallGraph& calls) {
  // One allocation for all of them, as NVIDIA's driver loads a module's data segment: each
  // variable at an offset aligned as it asks (at least 16 bytes, the widest vector access).
  std::vector<const ptx::VarDecl*> placed;
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> sizes;
  uint64_t total = 0;
  for (const ptx::TopLevel& item : module.items) {
    const auto* var = std::get_if<ptx::VarDecl>(&item.value);
    if (var == nullptr || (var->state_space != "global" && var->state_space != "const")) continue;
    uint64_t bytes = exec::VariableBytes(*var);
    if (bytes == 0 && var->initializer && var->initializer->kind == ptx::Expr::Kind::kList) {
      bytes = var->initializer->children.size() * ptx::ScalarTypeSize(var->type);
    }
    if (bytes == 0) {
      return CudaError(CUDA_ERROR_NOT_SUPPORTED, "variable of unknown size: " + var->name);
    }
    const uint64_t alignment = std::max<uint64_t>(16, var->align.value_or(1));
    total = (total + alignment - 1) / alignment * alignment;
    offsets.push_back(total);
    sizes.push_back(bytes);
    total += bytes;
    placed.push_back(var);
  }
  if (placed.empty()) return absl::OkStatus();
  TALLY_ASSIGN_OR_RETURN(variables_, memory_.Allocate(total, AllocationKind::kDevice, owner_));
  std::memset(reinterpret_cast<void*>(variables_), 0, total);
  for (size_t i = 0; i < placed.size(); ++i) {
    const ptx::VarDecl& var = *placed[i];
    const exec::Space space =
        var.state_space == "global" ? exec::Space::kGlobal : exec::Space::kConst;
    globals_[var.name] = exec::ModuleSymbol{space, variables_ + offsets[i], sizes[i]};
  }
  // Initializers may take the address of any module variable, so they are written last.
  for (const ptx::VarDecl* var : placed) {
    if (!var->initializer) continue;
    std::vector<uint8_t> bytes;
    if (absl::Status written =
            WriteInitializer(*var->initializer, var->type, {globals_, calls}, bytes);
        !written.ok()) {
      return CudaError(CUDA_ERROR_NOT_SUPPORTED,
                       "variable " + var->name + ": " + std::string(written.message()));
    }
    const exec::ModuleSymbol& symbol = globals_[var->name];
    std::memcpy(reinterpret_cast<void*>(symbol.address), bytes.data(),
                std::min<uint64_t>(bytes.size(), symbol.size));
  }
  return absl::OkStatus();
}

absl::StatusOr<ptx::Module> ParseForDevice(std::string_view ptx_text, uint32_t arch) {
  ptx::DiagnosticSink sink;
  ptx::Module parsed = ptx::ParseModule(ptx_text, sink);
  if (sink.HasErrors()) {
    std::string diagnostics = sink.Format("<module>");
    TALLY_LOG_ERROR("emu: PTX does not parse:\n{}", diagnostics);
    return CudaError(CUDA_ERROR_INVALID_PTX, diagnostics);
  }
  // PTX for a newer GPU than the configured one is refused, as ptxas refuses it on a real
  // device ("SM version specified by .target is higher than default").
  for (const std::string& target : parsed.targets) {
    uint32_t sm = 0;
    if (target.starts_with("sm_") && std::sscanf(target.c_str() + 3, "%u", &sm) == 1 && sm > arch) {
      return RefuseModule(
          CudaError(CUDA_ERROR_INVALID_PTX,
                    "PTX targets " + target + " but the device is sm_" + std::to_string(arch)));
    }
  }
  return parsed;
}

absl::StatusOr<std::shared_ptr<Module>> Module::Load(const void* image, DeviceMemory& memory,
                                                     uint64_t context_id, uint32_t arch) {
  TALLY_ASSIGN_OR_RETURN(std::string ptx_text, PtxOf(image, arch));
  TALLY_ASSIGN_OR_RETURN(ptx::Module parsed, ParseForDevice(ptx_text, arch));
  return FromParsed(parsed, memory, context_id);
}

absl::StatusOr<std::shared_ptr<Module>> Module::FromParsed(const ptx::Module& parsed,
                                                           DeviceMemory& memory,
                                                           uint64_t context_id) {
  std::shared_ptr<Module> module(new Module(memory, context_id));
  module->ptx_version_ = parsed.version_major * 10 + parsed.version_minor;
  const exec::CallGraph calls = exec::AnalyzeCalls(parsed);
  if (absl::Status placed = module->PlaceGlobals(parsed, calls); !placed.ok()) {
    return RefuseModule(placed);
  }
  auto functions = exec::LowerModule(parsed, module->globals_, calls);
  if (!functions.ok()) return RefuseModule(functions.status());
  module->functions_ = std::move(*functions);
  return module;
}

Module::~Module() { memory_.ReleaseAllOwnedBy(owner_); }

}  // namespace tally::emu
