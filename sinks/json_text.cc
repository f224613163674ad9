// Copyright 2026 The memtrace Authors.

#include "sinks/json_text.h"

#include "absl/strings/str_cat.h"

namespace memtrace {

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
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

std::string JsonUsage(const UsageCounters& u) {
  return absl::StrCat("{\"live_bytes\":", u.live_bytes, ",\"live_count\":", u.live_count,
                      ",\"high_water_bytes\":", u.high_water_bytes,
                      ",\"allocated_bytes\":", u.allocated_bytes,
                      ",\"allocated_count\":", u.allocated_count,
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
