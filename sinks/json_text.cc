// Copyright 2026 The memtrace Authors.

#include "sinks/json_text.h"

#include <cstddef>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace memtrace {
namespace {

// The length of the valid UTF-8 sequence at s[i] (1-4), or 0 when the bytes there are not
// one: a stray continuation byte, a sequence cut short, an overlong form, a surrogate, or
// a code point above U+10FFFF.
size_t Utf8SequenceLength(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t code;
  uint32_t smallest;
  if ((c & 0xE0) == 0xC0) {
    n = 2, code = c & 0x1F, smallest = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, code = c & 0x0F, smallest = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, code = c & 0x07, smallest = 0x10000;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    code = (code << 6) | (b & 0x3F);
  }
  if (code < smallest || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD
      } else {
        out.append(s, i, n);
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          absl::StrAppend(&out, "\\u00", absl::Hex(c, absl::kZeroPad2));
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string JsonUsage(const UsageCounters& u, bool peak_known) {
  // A peak that has no bound has neither end: both are written as null (a reader of the
  // trailer then takes it as a capture from before peaks were bounded, which is the same).
  const bool bounded = peak_known && u.high_water_high_bytes != kNoHighWaterBound;
  const std::string low = bounded ? absl::StrCat(u.high_water_low_bytes) : std::string("null");
  const std::string high = bounded ? absl::StrCat(u.high_water_high_bytes) : std::string("null");
  const std::string peak = peak_known ? absl::StrCat(u.high_water_bytes) : std::string("null");
  return absl::StrCat("{\"live_bytes\":", u.live_bytes, ",\"live_count\":", u.live_count,
                      ",\"high_water_bytes\":", peak,
                      ",\"high_water_low_bytes\":", low,
                      ",\"high_water_high_bytes\":", high,
                      ",\"allocated_bytes\":", u.allocated_bytes,
                      ",\"allocated_count\":", u.allocated_count,
                      ",\"allocation_calls\":", u.allocation_calls,
                      ",\"freed_bytes\":", u.freed_bytes, ",\"freed_count\":", u.freed_count,
                      "}");
}

std::string JsonScopes(const std::vector<ScopeUsage>& scopes) {
  std::string out = "[";
  for (const ScopeUsage& s : scopes) {
    absl::StrAppend(&out, out.size() > 1 ? "," : "", "{\"id\":", s.scope,
                    ",\"path\":", JsonQuote(s.path), ",\"usage\":", JsonUsage(s.usage), "}");
  }
  return out + "]";
}

std::string JsonLayers(const std::vector<LayerUsage>& layers) {
  std::string out = "[";
  for (const LayerUsage& l : layers) {
    absl::StrAppend(&out, out.size() > 1 ? "," : "", "{\"id\":", l.layer,
                    ",\"name\":", JsonQuote(l.name), ",\"usage\":", JsonUsage(l.usage), "}");
  }
  return out + "]";
}

}  // namespace memtrace
