// Device printf's formatting (CUDA C++ Programming Guide, "Formatted Output"): the format string
// and the arguments as vprintf gets them, packed in a buffer each aligned to its size; integers
// are 4 bytes unless a length modifier makes them `long`, floating-point values are doubles,
// `%s`, `%p` and `%n` take 8-byte pointers, and a `*` width or precision takes a 4-byte int.
//
// One scanner for every reader of such a buffer: the emulated GPU's vprintf, and the server
// reading what kernels wrote on NVIDIA's driver (ptx_transform/device_output.h), whose device
// code walks a format by the same character classes (PrintfClassOf), so that both agree on which
// argument each conversion takes, even for a malformed format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tally {

// What a character means inside a conversion specification (after `%`).
enum class PrintfClass : uint8_t {
  kUnknown = 0,  // ends the specification, takes no argument, printed as it stands
  kFlag,         // a flag, a digit or `.`: the specification goes on
  kStar,         // `*`: a 4-byte int argument is the width or precision
  kShort,        // `h`: no effect on the argument (promoted to int)
  kLong,         // `l`, `L`, `q`, `j`, `z`, `t`: an integer argument is 8 bytes
  kInteger,      // `d i o u x X c`: a 4-byte argument, 8 with kLong
  kFloat,        // `f F e E g G a A`: an 8-byte double
  kString,       // `s`: an 8-byte pointer to a NUL-terminated string
  kPointer,      // `p`: an 8-byte pointer, printed in hex
  kStore,        // `n`: an 8-byte pointer, nothing printed (nothing is stored either)
  kPercent,      // `%`: a literal percent sign
};

constexpr PrintfClass PrintfClassOf(unsigned char c) {
  switch (c) {
    case '-': case '+': case ' ': case '#': case '.':
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
      return PrintfClass::kFlag;
    case '*': return PrintfClass::kStar;
    case 'h': return PrintfClass::kShort;
    case 'l': case 'L': case 'q': case 'j': case 'z': case 't': return PrintfClass::kLong;
    case 'd': case 'i': case 'o': case 'u': case 'x': case 'X': case 'c':
      return PrintfClass::kInteger;
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
      return PrintfClass::kFloat;
    case 's': return PrintfClass::kString;
    case 'p': return PrintfClass::kPointer;
    case 'n': return PrintfClass::kStore;
    case '%': return PrintfClass::kPercent;
    default: return PrintfClass::kUnknown;
  }
}

// Where the arguments come from. nullopt: the argument cannot be read (the text is abandoned).
class PrintfArguments {
 public:
  virtual ~PrintfArguments() = default;
  // The next scalar argument of `size` bytes (4 or 8), zero-extended.
  virtual std::optional<uint64_t> Scalar(uint32_t size) = 0;
  // The string the next argument (a pointer) points at.
  virtual std::optional<std::string> String() = 0;
};

// The text printf prints for `format`; nullopt when an argument could not be read.
std::optional<std::string> FormatDevicePrintf(std::string_view format, PrintfArguments& arguments);

}  // namespace tally
