#include "cuda_abi/device_printf.h"

#include <algorithm>
#include <bit>
#include <cstdio>

namespace tally {
namespace {

// One conversion's text through the host's snprintf, at most this long (a width beyond it is
// cut, not allocated).
constexpr size_t kMaxConversion = 4096;

template <typename T>
void AppendConverted(std::string& out, const std::string& spec, T value) {
  char text[kMaxConversion];
  const int written = std::snprintf(text, sizeof(text), spec.c_str(), value);
  if (written > 0) out.append(text, std::min(static_cast<size_t>(written), sizeof(text) - 1));
}

// An integer conversion, re-expressed for 64-bit host arguments: `spec` without its length
// modifiers, `value` as read (4 bytes unless `wide`).
void AppendInteger(std::string& out, const std::string& spec, char conversion, uint64_t value,
                   bool wide) {
  if (conversion == 'c') {
    AppendConverted(out, spec + 'c', static_cast<int>(value));
  } else if (conversion == 'd' || conversion == 'i') {
    const int64_t number = wide ? static_cast<int64_t>(value)
                                : static_cast<int64_t>(static_cast<int32_t>(value));
    AppendConverted(out, spec + "lld", static_cast<long long>(number));
  } else {
    AppendConverted(out, spec + "ll" + conversion, static_cast<unsigned long long>(value));
  }
}

// The specification starting at format[i] (just after `%`) printed to `out`; format[*i] is its
// last character after. False when an argument could not be read.
bool AppendSpecification(std::string_view format, size_t* i, PrintfArguments& arguments,
                         std::string& out) {
  std::string spec = "%";
  bool wide = false;
  for (; *i < format.size(); ++*i) {
    const char c = format[*i];
    switch (PrintfClassOf(static_cast<unsigned char>(c))) {
      case PrintfClass::kFlag:
        spec += c;
        continue;
      case PrintfClass::kStar: {
        const std::optional<uint64_t> value = arguments.Scalar(4);
        if (!value) return false;
        const int32_t number = static_cast<int32_t>(*value);
        // A negative precision counts as none (C11 7.21.6.1); a negative width is `-` and a width.
        if (spec.back() == '.' && number < 0) {
          spec.pop_back();
        } else {
          spec += std::to_string(number);
        }
        continue;
      }
      case PrintfClass::kShort:
        continue;
      case PrintfClass::kLong:
        wide = true;
        continue;
      case PrintfClass::kInteger: {
        const std::optional<uint64_t> value = arguments.Scalar(wide ? 8 : 4);
        if (!value) return false;
        AppendInteger(out, spec, c, *value, wide);
        return true;
      }
      case PrintfClass::kFloat: {
        const std::optional<uint64_t> value = arguments.Scalar(8);
        if (!value) return false;
        AppendConverted(out, spec + c, std::bit_cast<double>(*value));
        return true;
      }
      case PrintfClass::kString: {
        const std::optional<std::string> text = arguments.String();
        if (!text) return false;
        AppendConverted(out, spec + 's', text->c_str());
        return true;
      }
      case PrintfClass::kPointer: {
        const std::optional<uint64_t> value = arguments.Scalar(8);
        if (!value) return false;
        AppendConverted(out, std::string("0x%llx"), static_cast<unsigned long long>(*value));
        return true;
      }
      case PrintfClass::kStore:
        return arguments.Scalar(8).has_value();
      case PrintfClass::kPercent:
        out += '%';
        return true;
      case PrintfClass::kUnknown:
        out += spec;
        out += c;
        return true;
    }
  }
  return true;  // the format ended inside the specification: nothing of it is printed
}

}  // namespace

std::optional<std::string> FormatDevicePrintf(std::string_view format,
                                              PrintfArguments& arguments) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    ++i;
    if (!AppendSpecification(format, &i, arguments, out)) return std::nullopt;
  }
  return out;
}

}  // namespace tally
