#include "ptx_transform/device_output.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cuda_abi/device_output_ring.h"
#include "cuda_abi/device_printf.h"
#include "ptx_transform/parser.h"
#include "ptx_transform/passes/builder.h"
#include "ptx_transform/passes/fence_memory.h"
#include "ptx_transform/passes/function_clones.h"
#include "ptx_transform/passes/ir_walk.h"

namespace tally::ptx {
namespace {

constexpr std::string_view kVprintf = "vprintf";
constexpr std::string_view kAssertfail = "__assertfail";
constexpr std::string_view kOutputVprintf = "__tally_vprintf";
constexpr std::string_view kOutputAssertfail = "__tally_assertfail";

// The class numbers __tally_vprintf compares __tally_printf_class's entries with.
static_assert(
    static_cast<int>(PrintfClass::kFlag) == 1 && static_cast<int>(PrintfClass::kStar) == 2 &&
    static_cast<int>(PrintfClass::kShort) == 3 && static_cast<int>(PrintfClass::kLong) == 4 &&
    static_cast<int>(PrintfClass::kInteger) == 5 && static_cast<int>(PrintfClass::kFloat) == 6 &&
    static_cast<int>(PrintfClass::kString) == 7 && static_cast<int>(PrintfClass::kPointer) == 8 &&
    static_cast<int>(PrintfClass::kStore) == 9);

// __tally_vprintf(format, arguments), in vprintf's place: one record (cuda_abi/device_output_ring.h)
// in the client's ring, for stderr when the format is the assert message's
// (__tally_assert_format), else for stdout; returns the count of arguments taken, -1 when nothing
// was written. Two passes over the same code: the first (%writing false) measures the record,
// then space is reserved with atom.cas on the head, and the second writes it; the header goes
// last, after membar.sys, so that the server never reads a record half written. A store in the
// second pass lands only inside the reserved space, even if a string changed in between. The
// ring's bytes are zero until written (the server zeroes what it consumed), so padding is not
// written. The format is walked by the character classes of cuda_abi/device_printf.h
// (__tally_printf_class), as the server walks it again to format the text.
constexpr std::string_view kOutputFunction = R"(
.func (.param .b32 __tally_vprintf_taken) __tally_vprintf(.param .b64 __tally_vprintf_format,
    .param .b64 __tally_vprintf_arguments)
{
  .reg .pred %writing, %p, %store;
  .reg .b16 %char;
  .reg .b32 %stream, %class, %in_spec, %wide, %taken, %value32, %resume;
  .reg .b64 %format, %arguments, %binding, %control, %ring, %capacity, %mask, %data, %classes,
      %null_string, %pos, %end, %cursor, %offset, %size, %value, %at, %head, %tail, %used,
      %record_size, %string, %header;

  ld.param.u64 %format, [__tally_vprintf_format];
  ld.param.u64 %arguments, [__tally_vprintf_arguments];
  mov.u64 %at, __tally_assert_format;
  cvta.global.u64 %at, %at;
  setp.eq.u64 %p, %format, %at;
  selp.u32 %stream, 2, 1, %p;
  mov.u64 %binding, __tally_device_output;
  ld.global.u64 %control, [%binding];
  ld.global.u64 %ring, [%binding+8];
  ld.global.u64 %capacity, [%binding+16];
  setp.eq.u64 %p, %control, 0;
  @%p bra $not_written;
  add.u64 %mask, %capacity, -1;
  add.u64 %data, %ring, 64;
  mov.u64 %classes, __tally_printf_class;
  mov.u64 %null_string, __tally_null_string;
  cvta.global.u64 %null_string, %null_string;
  setp.ne.u32 %writing, %stream, %stream;
  mov.u64 %pos, 8;
  mov.u64 %end, -1;
$pass:
  mov.u64 %string, %format;
  mov.u32 %resume, 0;
  bra.uni $copy;
$format_copied:
  mov.u64 %cursor, %format;
  mov.u64 %offset, 0;
  mov.u32 %in_spec, 0;
  mov.u32 %wide, 0;
  mov.u32 %taken, 0;
$scan:
  ld.u8 %char, [%cursor];
  add.u64 %cursor, %cursor, 1;
  setp.eq.u16 %p, %char, 0;
  @%p bra $scanned;
  cvt.u32.u16 %class, %char;
  setp.ne.u32 %p, %in_spec, 0;
  @%p bra $in_spec;
  setp.ne.u32 %p, %class, 37;
  @%p bra $scan;
  mov.u32 %in_spec, 1;
  mov.u32 %wide, 0;
  bra.uni $scan;
$in_spec:
  setp.ge.u32 %p, %class, 128;
  @%p bra $end_spec;
  cvt.u64.u32 %at, %class;
  add.u64 %at, %classes, %at;
  ld.const.u8 %char, [%at];
  cvt.u32.u16 %class, %char;
  setp.eq.u32 %p, %class, 1;
  @%p bra $scan;
  setp.eq.u32 %p, %class, 3;
  @%p bra $scan;
  setp.eq.u32 %p, %class, 4;
  @%p mov.u32 %wide, 1;
  @%p bra $scan;
  mov.u64 %size, 4;
  setp.eq.u32 %p, %class, 2;
  @%p bra $scalar;
  mov.u32 %in_spec, 0;
  setp.eq.u32 %p, %class, 7;
  @%p bra $string;
  setp.eq.u32 %p, %class, 5;
  @%p bra $integer;
  setp.eq.u32 %p, %class, 6;
  @%p bra $wide_scalar;
  setp.eq.u32 %p, %class, 8;
  @%p bra $wide_scalar;
  setp.eq.u32 %p, %class, 9;
  @%p bra $wide_scalar;
  bra.uni $scan;
$end_spec:
  mov.u32 %in_spec, 0;
  bra.uni $scan;
$integer:
  setp.eq.u32 %p, %wide, 0;
  @%p bra $scalar;
$wide_scalar:
  mov.u64 %size, 8;
$scalar:
  add.u64 %offset, %offset, %size;
  add.u64 %offset, %offset, -1;
  neg.s64 %at, %size;
  and.b64 %offset, %offset, %at;
  add.u64 %at, %arguments, %offset;
  add.u64 %offset, %offset, %size;
  setp.eq.u64 %p, %size, 4;
  @%p ld.u32 %value32, [%at];
  @%p cvt.u64.u32 %value, %value32;
  @!%p ld.u64 %value, [%at];
  and.b64 %at, %pos, %mask;
  add.u64 %at, %data, %at;
  setp.lt.and.u64 %store, %pos, %end, %writing;
  @%store st.global.u64 [%at], %value;
  add.u64 %pos, %pos, 8;
  add.u32 %taken, %taken, 1;
  bra.uni $scan;
$string:
  add.u64 %offset, %offset, 7;
  and.b64 %offset, %offset, -8;
  add.u64 %at, %arguments, %offset;
  ld.u64 %string, [%at];
  add.u64 %offset, %offset, 8;
  setp.eq.u64 %p, %string, 0;
  selp.b64 %string, %null_string, %string, %p;
  add.u32 %taken, %taken, 1;
  mov.u32 %resume, 1;
// The string at %string with its NUL, then padding to 8 bytes; goes on at $format_copied
// (%resume 0) or $scan.
$copy:
  ld.u8 %char, [%string];
  and.b64 %at, %pos, %mask;
  add.u64 %at, %data, %at;
  setp.lt.and.u64 %store, %pos, %end, %writing;
  @%store st.global.u8 [%at], %char;
  add.u64 %pos, %pos, 1;
  add.u64 %string, %string, 1;
  setp.ne.u16 %p, %char, 0;
  @%p bra $copy;
  add.u64 %pos, %pos, 7;
  and.b64 %pos, %pos, -8;
  setp.eq.u32 %p, %resume, 0;
  @%p bra $format_copied;
  bra.uni $scan;
$scanned:
  @%writing bra $commit;
  mov.u64 %record_size, %pos;
  setp.gt.u64 %p, %record_size, %capacity;
  @%p bra $not_written;
$reserve:
  ld.volatile.global.u64 %head, [%control];
  ld.volatile.global.u64 %tail, [%ring];
  sub.u64 %used, %head, %tail;
  add.u64 %used, %used, %record_size;
  setp.gt.u64 %p, %used, %capacity;
  @%p bra $not_written;
  add.u64 %end, %head, %record_size;
  atom.global.cas.b64 %value, [%control], %head, %end;
  setp.ne.u64 %p, %value, %head;
  @%p bra $reserve;
  add.u64 %pos, %head, 8;
  setp.eq.u32 %writing, %stream, %stream;
  bra.uni $pass;
$commit:
  membar.sys;
  cvt.u64.u32 %header, %stream;
  shl.b64 %header, %header, 32;
  or.b64 %header, %header, %record_size;
  or.b64 %header, %header, MAGIC;
  and.b64 %at, %head, %mask;
  add.u64 %at, %data, %at;
  st.volatile.global.u64 [%at], %header;
  st.param.b32 [__tally_vprintf_taken], %taken;
  ret;
$not_written:
  st.param.b32 [__tally_vprintf_taken], -1;
  ret;
}

)";

// __tally_assertfail: NVIDIA's message for a failed assert (file, line, function, block, thread,
// expression) on the client's stderr, then the runtime's __assertfail, which stops the kernel.
constexpr std::string_view kAssertFunction = R"(
.func __tally_assertfail(.param .b64 __tally_assertfail_message,
    .param .b64 __tally_assertfail_file, .param .b32 __tally_assertfail_line,
    .param .b64 __tally_assertfail_function, .param .b64 __tally_assertfail_char_size)
{
  .local .align 8 .b8 __tally_assert_arguments[56];
  .reg .b32 %line, %taken, %block_x, %block_y, %block_z, %thread_x, %thread_y, %thread_z;
  .reg .b64 %message, %file, %function, %char_size, %arguments, %format;
  ld.param.u64 %message, [__tally_assertfail_message];
  ld.param.u64 %file, [__tally_assertfail_file];
  ld.param.u32 %line, [__tally_assertfail_line];
  ld.param.u64 %function, [__tally_assertfail_function];
  ld.param.u64 %char_size, [__tally_assertfail_char_size];
  mov.u64 %arguments, __tally_assert_arguments;
  st.local.u64 [%arguments], %file;
  st.local.u32 [%arguments+8], %line;
  st.local.u64 [%arguments+16], %function;
  mov.u32 %block_x, %ctaid.x;
  mov.u32 %block_y, %ctaid.y;
  mov.u32 %block_z, %ctaid.z;
  mov.u32 %thread_x, %tid.x;
  mov.u32 %thread_y, %tid.y;
  mov.u32 %thread_z, %tid.z;
  st.local.v2.u32 [%arguments+24], {%block_x, %block_y};
  st.local.v2.u32 [%arguments+32], {%block_z, %thread_x};
  st.local.v2.u32 [%arguments+40], {%thread_y, %thread_z};
  st.local.u64 [%arguments+48], %message;
  cvta.local.u64 %arguments, %arguments;
  mov.u64 %format, __tally_assert_format;
  cvta.global.u64 %format, %format;
  {
  .param .b64 format;
  st.param.b64 [format], %format;
  .param .b64 arguments;
  st.param.b64 [arguments], %arguments;
  .param .b32 taken;
  call.uni (taken), __tally_vprintf, (format, arguments);
  ld.param.b32 %taken, [taken];
  }
  {
  .param .b64 message;
  st.param.b64 [message], %message;
  .param .b64 file;
  st.param.b64 [file], %file;
  .param .b32 line;
  st.param.b32 [line], %line;
  .param .b64 function;
  st.param.b64 [function], %function;
  .param .b64 char_size;
  st.param.b64 [char_size], %char_size;
  call.uni __assertfail, (message, file, line, function, char_size);
  }
  ret;
}
)";

constexpr std::string_view kAssertFormat =
    "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n";

bool IsDeclaration(const TopLevel& item, std::string_view name) {
  const auto* function = std::get_if<Function>(&item.value);
  return function != nullptr && !function->body && function->name == name;
}

// `{b0, b1, ...}` of `text` with its NUL.
std::string ByteList(std::string_view text) {
  std::string list = "{";
  for (const char c : text) absl::StrAppend(&list, static_cast<int>(static_cast<uint8_t>(c)), ", ");
  return list + "0}";
}

// The module-scope declarations the functions use: the binding the server sets, the character
// classes, the text printed for a null %s.
std::string Declarations() {
  std::string classes;
  for (int c = 0; c < 128; ++c) {
    absl::StrAppend(&classes, c == 0 ? "" : ", ",
                    static_cast<int>(PrintfClassOf(static_cast<unsigned char>(c))));
  }
  return absl::StrFormat(
      ".global .align 8 .u64 %s[3];\n"
      ".const .align 1 .b8 __tally_printf_class[128] = {%s};\n"
      ".global .align 1 .b8 __tally_null_string[] = %s;\n"
      ".global .align 1 .b8 __tally_assert_format[] = %s;\n",
      kDeviceOutputVariable, classes, ByteList("(null)"), ByteList(kAssertFormat));
}

// The library as module items; `with_assert` adds __tally_assertfail (which calls the module's
// __assertfail).
absl::StatusOr<std::vector<TopLevel>> LibraryItems(bool with_assert) {
  std::string functions(kOutputFunction);
  const std::string magic = absl::StrFormat("%d", kRecordMagic);
  functions.replace(functions.find("MAGIC"), 5, magic);
  std::string text = ".version 7.0\n.target sm_70\n.address_size 64\n" + Declarations();
  if (with_assert) {
    text +=
        ".extern .func __assertfail(.param .b64 a, .param .b64 b, .param .b32 c, "
        ".param .b64 d, .param .b64 e);\n";
  }
  text += functions;
  if (with_assert) {
    text += kAssertFunction;
  }
  absl::StatusOr<Module> library = ParseModuleOrError(text, "<tally device output>");
  if (!library.ok()) return library.status();
  // The module declares __assertfail itself.
  std::erase_if(library->items,
                [](const TopLevel& item) { return IsDeclaration(item, kAssertfail); });
  return std::move(library->items);
}

// The top-level names the library adds.
std::vector<std::string> NamesOf(const std::vector<TopLevel>& items) {
  std::vector<std::string> names;
  for (const TopLevel& item : items) {
    if (const auto* function = std::get_if<Function>(&item.value)) names.push_back(function->name);
    if (const auto* var = std::get_if<VarDecl>(&item.value)) names.push_back(var->name);
  }
  return names;
}

// Calls of the library's functions that pass the fence (one argument more than the function
// takes: fenced code, TransformOptions::fence_device_output) go to fenced clones, whose reads
// of the client's memory are checked (passes/fence_memory.h, FenceTarget::kDeviceOutput).
void FenceOutputCalls(Module& module, passes::NameAllocator& names) {
  std::optional<passes::MemoryFencer> fencer;
  const passes::FunctionIndex functions(module);
  for (TopLevel& item : module.items) {
    auto* caller = std::get_if<Function>(&item.value);
    if (caller == nullptr || !caller->body) continue;
    passes::ForEachInstruction(caller->body->statements, [&](Instruction& inst) {
      const size_t target = passes::CallTargetIndex(inst);
      if (inst.opcode != "call" || target == inst.operands.size()) return;
      const std::string callee = inst.operands[target].name;
      if (callee != kOutputVprintf && callee != kOutputAssertfail) return;
      const Function* function = functions.Find(callee);  // absent: the runtime's undeclared
      const Operand& args = passes::CallArgumentList(inst, target);
      if (function == nullptr || args.elements.size() != function->params.size() + 1) return;
      if (!fencer) fencer.emplace(module, names, passes::FenceTarget::kDeviceOutput);
      inst.operands[target].name = fencer->CloneOf(callee);
    });
  }
  if (fencer) fencer->Finish();
}

}  // namespace

bool UsesDeviceOutput(const Module& module) {
  for (const TopLevel& item : module.items) {
    if (IsDeclaration(item, kVprintf) || IsDeclaration(item, kAssertfail)) return true;
  }
  return false;
}

absl::StatusOr<bool> RedirectDeviceOutput(Module& module) {
  if (!UsesDeviceOutput(module)) return false;
  if (module.address_size != 64) {
    return absl::InvalidArgumentError(
        "device printf in a module with 32-bit addresses: Tally cannot redirect it");
  }
  const bool with_assert = std::ranges::any_of(
      module.items, [](const TopLevel& i) { return IsDeclaration(i, kAssertfail); });
  absl::StatusOr<std::vector<TopLevel>> library = LibraryItems(with_assert);
  if (!library.ok()) return library.status();
  passes::NameAllocator names(module);
  for (const std::string& name : NamesOf(*library)) {
    if (names.Fresh(name) != name) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the module already names %s, which Tally needs to redirect device printf", name));
    }
  }
  // The library goes where the first of the runtime's declarations stood (before every use),
  // after __assertfail's declaration, which it calls; vprintf's declaration goes.
  std::vector<TopLevel> items;
  std::optional<size_t> position;
  std::optional<TopLevel> assert_declaration;
  for (TopLevel& item : module.items) {
    const bool declares_assert = IsDeclaration(item, kAssertfail);
    if (declares_assert || IsDeclaration(item, kVprintf)) {
      if (!position) position = items.size();
      if (declares_assert) assert_declaration = std::move(item);
      continue;
    }
    if (auto* function = std::get_if<Function>(&item.value); function && function->body) {
      passes::ForEachInstruction(function->body->statements, [](Instruction& inst) {
        passes::ForEachOperand(inst, [](Operand& op) {
          if (op.kind != Operand::Kind::kName) return;
          if (op.name == kVprintf) op.name = kOutputVprintf;
          if (op.name == kAssertfail) op.name = kOutputAssertfail;
        });
      });
    }
    items.push_back(std::move(item));
  }
  if (assert_declaration) library->insert(library->begin(), *std::move(assert_declaration));
  items.insert(items.begin() + static_cast<std::ptrdiff_t>(*position),
               std::make_move_iterator(library->begin()), std::make_move_iterator(library->end()));
  module.items = std::move(items);
  FenceOutputCalls(module, names);
  return true;
}

}  // namespace tally::ptx
