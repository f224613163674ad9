// Copyright 2026 The memtrace Authors.

#include "analysis/internal/capture_line_parser.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "sinks/binary_encoding.h"

namespace memtrace::analysis_internal {
namespace {

// The most frames a site may carry (the interposer's depth is capped well below this).
constexpr size_t kMaxFrames = 256;

// Bits for the fields a line carries, to check each type's required fields.
enum Field : uint32_t {
  kT = 1 << 0, kThread = 1 << 1, kAddr = 1 << 2, kSize = 1 << 3, kTicket = 1 << 4,
  kOf = 1 << 5, kLayer = 1 << 6, kScope = 1 << 7, kOuter = 1 << 8, kSite = 1 << 9,
  kLabel = 1 << 10, kBytes = 1 << 11, kId = 1 << 12, kParent = 1 << 13, kName = 1 << 14,
  kPath = 1 << 15, kSchema = 1 << 16, kComplete = 1 << 17, kType = 1 << 18,
  kStart = 1 << 19, kEnd = 1 << 20, kDelta = 1 << 21, kTid = 1 << 22,
};

struct TypeInfo {
  const char* name;
  LineType type;
  uint32_t required;
};

constexpr TypeInfo kTypes[] = {
    {"header", LineType::kHeader, kSchema},
    {"layer", LineType::kLayer, kId | kName},
    {"scope", LineType::kScope, kId | kParent | kName | kPath},
    {"site", LineType::kSite, kId | kAddr},
    {"module", LineType::kModule, kPath | kStart | kEnd},
    {"alloc", LineType::kAlloc, kT | kThread | kAddr | kSize | kLayer | kScope | kSite | kTicket},
    {"free", LineType::kFree, kT | kThread | kAddr | kLayer | kOf | kTicket},
    {"resize", LineType::kResize, kT | kThread | kAddr | kSize | kLayer | kOf | kTicket},
    {"remap", LineType::kRemap, kT | kThread | kAddr | kLayer | kOf | kTicket},
    {"remap_target", LineType::kRemapTarget,
     kT | kThread | kAddr | kSize | kLayer | kScope | kSite | kTicket},
    {"arena_reset", LineType::kArenaReset, kT | kThread | kLayer},
    {"scope_enter", LineType::kScopeEnter, kT | kThread | kScope | kOuter},
    {"scope_exit", LineType::kScopeExit, kT | kThread | kScope | kOuter},
    // And `delta` or, in captures from before census changes, `bytes` (Parse()).
    {"census", LineType::kCensus, kT | kThread | kLabel},
    {"interval_begin", LineType::kIntervalBegin, kT | kThread},
    {"interval_end", LineType::kIntervalEnd, kT | kThread},
    {"trailer", LineType::kTrailer, kComplete},
    {"thread", LineType::kThread, kThread | kTid},
};

const char* FieldName(uint32_t bit) {
  switch (bit) {
    case kT: return "t";
    case kThread: return "thread";
    case kAddr: return "addr";
    case kSize: return "size";
    case kTicket: return "ticket";
    case kOf: return "of";
    case kLayer: return "layer";
    case kScope: return "scope";
    case kOuter: return "outer";
    case kSite: return "site";
    case kLabel: return "label";
    case kBytes: return "bytes";
    case kId: return "id";
    case kParent: return "parent";
    case kName: return "name";
    case kPath: return "path";
    case kSchema: return "schema_version";
    case kComplete: return "complete";
    case kStart: return "start";
    case kEnd: return "end";
    case kDelta: return "delta";
    case kTid: return "tid";
    default: return "?";
  }
}

bool ParseHex(std::string_view s, uint64_t* out) {
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
    return false;
  }
  uint64_t v = 0;
  for (size_t i = 2; i < s.size(); ++i) {
    const char c = s[i];
    uint64_t d;
    if (c >= '0' && c <= '9') {
      d = static_cast<uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<uint64_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<uint64_t>(c - 'A' + 10);
    } else {
      return false;
    }
    v = (v << 4) | d;
  }
  *out = v;
  return true;
}

}  // namespace

absl::Status CaptureLineParser::Error(uint64_t line, const std::string& what) const {
  if (binary_offset_ >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": record ", line, " at byte ",
                                                   binary_offset_, ": ", what));
  }
  return absl::InvalidArgumentError(absl::StrCat(name_, ":", line, ": ", what));
}

absl::Status CaptureLineParser::NotJson(uint64_t line, std::string_view text,
                                        const std::string& what) const {
  // A first line that does not even begin as a JSON object: most likely another kind of
  // file (one that does is a capture's header, broken).
  const size_t first = text.find_first_not_of(" \t\r");
  if (line == 1 && binary_offset_ < 0 && (first == text.npos || text[first] != '{')) {
    return Error(line, absl::StrCat("this is not a memtrace capture (one begins with a "
                                    "header line, {\"type\":\"header\",...}, or with the "
                                    "bytes ", kBinaryMagic, "): ", what));
  }
  return Error(line, what);
}

absl::Status CaptureLineParser::Parse(std::string_view text, uint64_t line, CaptureRecord* rec) {
  buffer_.assign(text.data(), text.size());
  buffer_.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  simdjson::padded_string_view view(buffer_.data(), buffer_.size(), buffer_.capacity());
  *rec = CaptureRecord{};
  rec->line = line;
  simdjson::ondemand::document doc;
  if (auto err = parser_.iterate(view).get(doc); err) {
    return NotJson(line, text, absl::StrCat("not JSON (", simdjson::error_message(err), ")"));
  }
  simdjson::ondemand::object obj;
  if (auto err = doc.get_object().get(obj); err) {
    if (err == simdjson::INCORRECT_TYPE) {
      return NotJson(line, text, "not a JSON object; every line of a capture is one object");
    }
    return NotJson(line, text, absl::StrCat("not JSON (", simdjson::error_message(err), ")"));
  }
  uint32_t seen = 0;
  std::string_view type;
  for (auto field : obj) {
    std::string_view key;
    if (auto err = field.unescaped_key().get(key); err) {
      return NotJson(line, text, absl::StrCat("not JSON (", simdjson::error_message(err), ")"));
    }
    simdjson::ondemand::value value;
    if (auto err = field.value().get(value); err) {
      return NotJson(line, text, absl::StrCat("not JSON (", simdjson::error_message(err), ")"));
    }
    absl::Status s = Field(key, value, line, rec, &seen, &type);
    if (!s.ok()) return s;
  }
  if (!(seen & kType)) return Error(line, "missing field 'type'");
  const TypeInfo* info = nullptr;
  for (const TypeInfo& t : kTypes) {
    if (type == t.name) info = &t;
  }
  if (info == nullptr) {
    return Error(line, absl::StrCat("unknown line type '", std::string(type),
                                    "' (this reader knows schema version ", kKnownCaptureSchema,
                                    ")"));
  }
  rec->type = info->type;
  const uint32_t missing = info->required & ~seen;
  if (missing != 0) {
    return Error(line, absl::StrCat("a '", info->name, "' line needs field '",
                                    FieldName(missing & (~missing + 1)), "'"));
  }
  if (rec->type == LineType::kThread && rec->tid <= 0) {
    return Error(line, "field 'tid' must be a kernel thread id (a positive integer)");
  }
  if (rec->type == LineType::kCensus) {
    // A change (`delta`), or in older captures the new value (`bytes`): one of the two.
    const uint32_t amount = seen & (kDelta | kBytes);
    if (amount == 0) return Error(line, "a 'census' line needs field 'delta'");
    if (amount == (kDelta | kBytes)) {
      return Error(line, "a 'census' line has both 'delta' (a change) and 'bytes' (a "
                         "value); it must have one");
    }
    rec->has_delta = amount == kDelta;
  }
  if (rec->type == LineType::kTrailer || rec->type == LineType::kHeader) {
    rec->raw.assign(text.data(), text.size());
  }
  // Validate once the whole doc was consumed without a parse error at the end.
  return absl::OkStatus();
}

absl::Status CaptureLineParser::Field(std::string_view key, simdjson::ondemand::value& value,
                                      uint64_t line, CaptureRecord* rec, uint32_t* seen,
                                      std::string_view* type) {
  auto u64 = [&](uint64_t* out, uint32_t bit) -> absl::Status {
    if (value.get_uint64().get(*out)) {
      return Error(line, absl::StrCat("field '", std::string(key),
                                      "' must be a non-negative integer"));
    }
    *seen |= bit;
    return absl::OkStatus();
  };
  auto u32 = [&](uint32_t* out, uint32_t bit) -> absl::Status {
    uint64_t v;
    if (absl::Status s = u64(&v, bit); !s.ok()) return s;
    if (v > 0xffffffffull) {
      return Error(line, absl::StrCat("field '", std::string(key), "' is out of range"));
    }
    *out = static_cast<uint32_t>(v);
    return absl::OkStatus();
  };
  auto i64 = [&](int64_t* out, uint32_t bit) -> absl::Status {
    if (value.get_int64().get(*out)) {
      return Error(line, absl::StrCat("field '", std::string(key), "' must be an integer"));
    }
    *seen |= bit;
    return absl::OkStatus();
  };
  auto str = [&](std::string* out, uint32_t bit) -> absl::Status {
    std::string_view v;
    if (value.get_string().get(v)) {
      return Error(line, absl::StrCat("field '", std::string(key), "' must be a string"));
    }
    out->assign(v.data(), v.size());
    *seen |= bit;
    return absl::OkStatus();
  };
  if (key == "type") {
    if (value.get_string().get(*type)) return Error(line, "field 'type' must be a string");
    type_storage_.assign(type->data(), type->size());
    *type = type_storage_;
    *seen |= kType;
    return absl::OkStatus();
  }
  auto hex = [&](uint64_t* out, uint32_t bit) -> absl::Status {
    std::string_view v;
    if (value.get_string().get(v) || !ParseHex(v, out)) {
      return Error(line, absl::StrCat("field '", std::string(key),
                                      "' must be a hex string like \"0x7f00\""));
    }
    *seen |= bit;
    return absl::OkStatus();
  };
  if (key == "addr") return hex(&rec->addr, kAddr);
  if (key == "start") return hex(&rec->start, kStart);
  if (key == "end") return hex(&rec->end, kEnd);
  if (key == "offset") return hex(&rec->offset, 0);
  if (key == "build_id") return str(&rec->build_id, 0);
  if (key == "source") return str(&rec->source, 0);
  if (key == "malloc_from") return str(&rec->malloc_from, 0);
  if (key == "frames") {
    simdjson::ondemand::array frames;
    if (value.get_array().get(frames)) {
      return Error(line, "field 'frames' must be an array of hex strings");
    }
    for (auto element : frames) {
      std::string_view v;
      uint64_t pc = 0;
      if (element.get_string().get(v) || !ParseHex(v, &pc)) {
        return Error(line, "field 'frames' must be an array of hex strings like \"0x7f00\"");
      }
      if (rec->frames.size() >= kMaxFrames) {
        return Error(line, absl::StrCat("field 'frames' has more than ", kMaxFrames,
                                        " entries"));
      }
      rec->frames.push_back(pc);
    }
    return absl::OkStatus();
  }
  if (key == "other") {
    if (value.get_bool().get(rec->other)) return Error(line, "field 'other' must be true or false");
    return absl::OkStatus();
  }
  if (key == "weight") {
    if (value.get_double().get(rec->weight) || !(rec->weight >= 1.0) ||
        !(rec->weight <= 1e15)) {
      return Error(line, "field 'weight' must be a number from 1 to 1e15");
    }
    rec->has_weight = true;
    return absl::OkStatus();
  }
  if (key == "t") return i64(&rec->t, kT);
  if (key == "epoch") return u32(&rec->epoch, 0);
  if (key == "thread") return u32(&rec->thread, kThread);
  if (key == "size") return u64(&rec->size, kSize);
  if (key == "ticket") return u64(&rec->ticket, kTicket);
  if (key == "of") return u64(&rec->of, kOf);
  if (key == "layer") return u32(&rec->layer, kLayer);
  if (key == "scope") return u32(&rec->scope, kScope);
  if (key == "outer") return u32(&rec->outer, kOuter);
  if (key == "site") return u32(&rec->site, kSite);
  if (key == "label") return u32(&rec->label, kLabel);
  if (key == "bytes") return i64(&rec->bytes, kBytes);
  if (key == "delta") return i64(&rec->delta, kDelta);
  if (key == "id") return u32(&rec->id, kId);
  if (key == "parent") return u32(&rec->parent, kParent);
  if (key == "name") return str(&rec->name, kName);
  if (key == "path") return str(&rec->path, kPath);
  if (key == "schema_version") return u32(&rec->schema_version, kSchema);
  if (key == "pid") return u64(&rec->pid, 0);
  if (key == "tid") return i64(&rec->tid, kTid);
  if (key == "started_unix_ns") return i64(&rec->t, 0);  // header: kept in `t`
  if (key == "mono_ns") return i64(&rec->mono_ns, 0);
  if (key == "category") return u32(&rec->category, 0);
  if (key == "complete") {
    if (value.get_bool().get(rec->complete)) {
      return Error(line, "field 'complete' must be true or false");
    }
    *seen |= kComplete;
    return absl::OkStatus();
  }
  return absl::OkStatus();  // unknown fields are ignored (docs/capture-format.md)
}

}  // namespace memtrace::analysis_internal
