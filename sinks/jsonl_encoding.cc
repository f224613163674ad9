// Copyright 2026 The memtrace Authors.

#include "sinks/jsonl_encoding.h"

#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "sinks/json_text.h"

namespace memtrace {
namespace {

// Appends JSON fragments to a string without temporaries: the event lines' formatter.
class LineAppender {
 public:
  explicit LineAppender(std::string* out) : out_(out) {}

  LineAppender& Raw(std::string_view text) {
    out_->append(text.data(), text.size());
    return *this;
  }
  LineAppender& U64(uint64_t v) {
    // Two digits per step from a table of "00".."99".
    static constexpr char kPairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char digits[20];
    char* const end = digits + sizeof(digits);
    char* p = end;
    while (v >= 100) {
      const uint64_t pair = (v % 100) * 2;
      v /= 100;
      *--p = kPairs[pair + 1];
      *--p = kPairs[pair];
    }
    if (v >= 10) {
      *--p = kPairs[v * 2 + 1];
      *--p = kPairs[v * 2];
    } else {
      *--p = static_cast<char>('0' + v);
    }
    out_->append(p, static_cast<size_t>(end - p));
    return *this;
  }
  LineAppender& I64(int64_t v) {
    if (v >= 0) return U64(static_cast<uint64_t>(v));
    out_->push_back('-');
    return U64(0 - static_cast<uint64_t>(v));
  }
  // "0x..." in lower-case hex, quoted (docs/capture-format.md, Conventions).
  LineAppender& Hex(uint64_t v) {
    static constexpr char kDigits[] = "0123456789abcdef";
    char digits[19];
    char* const end = digits + sizeof(digits);
    char* p = end;
    do {
      *--p = kDigits[v & 15];
      v >>= 4;
    } while (v != 0);
    out_->append("\"0x", 3);
    out_->append(p, static_cast<size_t>(end - p));
    out_->push_back('"');
    return *this;
  }
  // Six significant digits, as absl::StrCat writes a double.
  LineAppender& Double(double v) {
    const absl::AlphaNum text(v);
    out_->append(text.data(), text.size());
    return *this;
  }

 private:
  std::string* out_;
};

}  // namespace

std::string JsonTimeFields(int64_t t, uint32_t epoch) {
  return absl::StrCat(",\"t\":", t, ",\"epoch\":", epoch);
}

void AppendJsonEvent(const CaptureEvent& e, std::string_view time_fields, std::string* out) {
  LineAppender line(out);
  line.Raw("{\"type\":\"").Raw(CaptureEventTypeName(e.type)).Raw("\"").Raw(time_fields);
  line.Raw(",\"thread\":").U64(e.thread);
  switch (e.type) {
    case CaptureEventType::kAlloc:
    case CaptureEventType::kRemapTarget:
      line.Raw(",\"addr\":").Hex(e.addr).Raw(",\"size\":").U64(e.size);
      line.Raw(",\"layer\":").U64(e.layer).Raw(",\"scope\":").U64(e.scope);
      line.Raw(",\"site\":").U64(e.site).Raw(",\"ticket\":").U64(e.ticket);
      if (e.has_weight) line.Raw(",\"weight\":").Double(e.weight);
      break;
    case CaptureEventType::kFree:
    case CaptureEventType::kRemap:
      line.Raw(",\"addr\":").Hex(e.addr).Raw(",\"layer\":").U64(e.layer);
      line.Raw(",\"of\":").U64(e.of).Raw(",\"ticket\":").U64(e.ticket);
      break;
    case CaptureEventType::kResize:
      line.Raw(",\"addr\":").Hex(e.addr).Raw(",\"size\":").U64(e.size);
      line.Raw(",\"layer\":").U64(e.layer).Raw(",\"of\":").U64(e.of);
      line.Raw(",\"ticket\":").U64(e.ticket);
      break;
    case CaptureEventType::kScopeEnter:
    case CaptureEventType::kScopeExit:
      line.Raw(",\"scope\":").U64(e.scope).Raw(",\"outer\":").U64(e.outer);
      line.Raw(",\"mono_ns\":").I64(e.mono_ns);
      break;
    case CaptureEventType::kCensus:
      line.Raw(",\"label\":").U64(e.label);
      if (e.has_delta) {
        line.Raw(",\"delta\":").I64(e.delta);
      } else {
        line.Raw(",\"bytes\":").I64(e.bytes);
      }
      break;
    case CaptureEventType::kIntervalBegin:
    case CaptureEventType::kIntervalEnd:
      line.Raw(",\"category\":").U64(e.category).Raw(",\"mono_ns\":").I64(e.mono_ns);
      break;
    case CaptureEventType::kArenaReset:
      line.Raw(",\"layer\":").U64(e.layer);
      break;
  }
  line.Raw("}");
}

std::string JsonLayerLine(uint32_t id, const std::string& name) {
  return absl::StrCat("{\"type\":\"layer\",\"id\":", id, ",\"name\":", JsonQuote(name), "}");
}

std::string JsonThreadLine(uint32_t thread, int64_t tid, const std::string& name) {
  return absl::StrCat("{\"type\":\"thread\",\"thread\":", thread, ",\"tid\":", tid,
                      ",\"name\":", JsonQuote(name), "}");
}

std::string JsonScopeLine(uint32_t id, uint32_t parent, const std::string& name,
                          const std::string& path) {
  return absl::StrCat("{\"type\":\"scope\",\"id\":", id, ",\"parent\":", parent,
                      ",\"name\":", JsonQuote(name), ",\"path\":", JsonQuote(path), "}");
}

std::string JsonSiteLine(uint32_t id, uint64_t addr, std::span<const uint64_t> frames,
                         bool other) {
  std::string line = absl::StrCat("{\"type\":\"site\",\"id\":", id, ",\"addr\":");
  LineAppender out(&line);
  if (other) {
    out.Hex(addr).Raw(",\"other\":true}");
    return line;
  }
  if (frames.empty()) {
    out.Hex(addr).Raw("}");
    return line;
  }
  out.Hex(frames[0]).Raw(",\"frames\":[");
  for (size_t i = 0; i < frames.size(); ++i) {
    if (i != 0) out.Raw(",");
    out.Hex(frames[i]);
  }
  out.Raw("]}");
  return line;
}

std::string JsonModuleLine(const std::string& path, uint64_t start, uint64_t end,
                           uint64_t offset, const std::string& build_id) {
  return absl::StrCat("{\"type\":\"module\",\"path\":", JsonQuote(path),
                      ",\"start\":", JsonHex(start), ",\"end\":", JsonHex(end),
                      ",\"offset\":", JsonHex(offset), ",\"build_id\":", JsonQuote(build_id),
                      "}");
}

std::string JsonHex(uint64_t v) {
  std::string out;
  LineAppender(&out).Hex(v);
  return out;
}

double SampleWeight(uint64_t size, uint64_t interval_bytes) {
  const double p = -std::expm1(-static_cast<double>(SampledBytes(size)) /
                               static_cast<double>(interval_bytes));
  const double w = p > 0 ? 1.0 / p : 1e15;
  return w < 1.0 ? 1.0 : w > 1e15 ? 1e15 : w;
}

double RoundedWeight(double weight) {
  const absl::AlphaNum text(weight);
  double rounded = weight;
  std::from_chars(text.data(), text.data() + text.size(), rounded);
  return rounded;
}

}  // namespace memtrace
