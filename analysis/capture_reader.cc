// Copyright 2026 The memtrace Authors.

#include "analysis/capture_reader.h"

#include <simdjson.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace memtrace {
namespace {

constexpr uint32_t kKnownSchema = 1;
// The most frames a site may carry (the interposer's depth is capped well below this).
constexpr size_t kMaxFrames = 256;

// Bits for the fields a line carries, to check each type's required fields.
enum Field : uint32_t {
  kT = 1 << 0, kThread = 1 << 1, kAddr = 1 << 2, kSize = 1 << 3, kTicket = 1 << 4,
  kOf = 1 << 5, kLayer = 1 << 6, kScope = 1 << 7, kOuter = 1 << 8, kSite = 1 << 9,
  kLabel = 1 << 10, kBytes = 1 << 11, kId = 1 << 12, kParent = 1 << 13, kName = 1 << 14,
  kPath = 1 << 15, kSchema = 1 << 16, kComplete = 1 << 17, kType = 1 << 18,
  kStart = 1 << 19, kEnd = 1 << 20,
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
    {"census", LineType::kCensus, kT | kThread | kLabel | kBytes},
    {"interval_begin", LineType::kIntervalBegin, kT | kThread},
    {"interval_end", LineType::kIntervalEnd, kT | kThread},
    {"trailer", LineType::kTrailer, kComplete},
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

class LineParser {
 public:
  explicit LineParser(std::string name) : name_(std::move(name)) {}

  absl::Status Error(uint64_t line, const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ":", line, ": ", what));
  }

  // Parses one line (without its newline) into `rec`.
  absl::Status Parse(std::string_view text, uint64_t line, CaptureRecord* rec) {
    buffer_.assign(text.data(), text.size());
    buffer_.reserve(text.size() + simdjson::SIMDJSON_PADDING);
    simdjson::padded_string_view view(buffer_.data(), buffer_.size(), buffer_.capacity());
    *rec = CaptureRecord{};
    rec->line = line;
    simdjson::ondemand::document doc;
    if (auto err = parser_.iterate(view).get(doc); err) {
      return Error(line, absl::StrCat("not JSON (", simdjson::error_message(err), ")"));
    }
    simdjson::ondemand::object obj;
    if (auto err = doc.get_object().get(obj); err) {
      if (err == simdjson::INCORRECT_TYPE) {
        return Error(line, "not a JSON object; every line of a capture is one object");
      }
      return Error(line, absl::StrCat("not JSON (", simdjson::error_message(err), ")"));
    }
    uint32_t seen = 0;
    std::string_view type;
    for (auto field : obj) {
      std::string_view key;
      if (auto err = field.unescaped_key().get(key); err) {
        return Error(line, absl::StrCat("not JSON (", simdjson::error_message(err), ")"));
      }
      simdjson::ondemand::value value;
      if (auto err = field.value().get(value); err) {
        return Error(line, absl::StrCat("not JSON (", simdjson::error_message(err), ")"));
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
                                      "' (this reader knows schema version ", kKnownSchema,
                                      ")"));
    }
    rec->type = info->type;
    const uint32_t missing = info->required & ~seen;
    if (missing != 0) {
      return Error(line, absl::StrCat("a '", info->name, "' line needs field '",
                                      FieldName(missing & (~missing + 1)), "'"));
    }
    if (rec->type == LineType::kTrailer || rec->type == LineType::kHeader) {
      rec->raw.assign(text.data(), text.size());
    }
    // Validate once the whole doc was consumed without a parse error at the end.
    return absl::OkStatus();
  }

 private:
  absl::Status Field(std::string_view key, simdjson::ondemand::value& value, uint64_t line,
                     CaptureRecord* rec, uint32_t* seen, std::string_view* type) {
    auto u64 = [&](uint64_t* out, uint32_t bit) -> absl::Status {
      if (value.get_uint64().get(*out)) {
        return Error(line, absl::StrCat("field '", std::string(key), "' must be a non-negative integer"));
      }
      *seen |= bit;
      return absl::OkStatus();
    };
    auto u32 = [&](uint32_t* out, uint32_t bit) -> absl::Status {
      uint64_t v;
      if (absl::Status s = u64(&v, bit); !s.ok()) return s;
      if (v > 0xffffffffull) return Error(line, absl::StrCat("field '", std::string(key), "' is out of range"));
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
    if (key == "id") return u32(&rec->id, kId);
    if (key == "parent") return u32(&rec->parent, kParent);
    if (key == "name") return str(&rec->name, kName);
    if (key == "path") return str(&rec->path, kPath);
    if (key == "schema_version") return u32(&rec->schema_version, kSchema);
    if (key == "pid") return u64(&rec->pid, 0);
    if (key == "started_unix_ns") return i64(&rec->t, 0);  // header: kept in `t`
    if (key == "mono_ns") return i64(&rec->mono_ns, 0);
    if (key == "complete") {
      if (value.get_bool().get(rec->complete)) {
        return Error(line, "field 'complete' must be true or false");
      }
      *seen |= kComplete;
      return absl::OkStatus();
    }
    return absl::OkStatus();  // unknown fields are ignored (docs/capture-format.md)
  }

  const std::string name_;
  simdjson::ondemand::parser parser_;
  std::string buffer_;
  std::string type_storage_;
};

// Shared by the file and text readers: feeds lines in order and checks the structure.
class StructureChecker {
 public:
  StructureChecker(std::string name,
                   const std::function<absl::Status(const CaptureRecord&)>& fn,
                   CaptureReadStats* stats)
      : parser_(std::move(name)), fn_(fn), stats_(stats) {}

  absl::Status Line(std::string_view text) {
    ++line_;
    stats_->lines = line_;
    stats_->bytes += text.size() + 1;
    if (text.empty()) return parser_.Error(line_, "empty line");
    if (stats_->has_trailer) {
      return parser_.Error(line_, "content after the trailer (two captures concatenated?)");
    }
    CaptureRecord rec;
    if (absl::Status s = parser_.Parse(text, line_, &rec); !s.ok()) return s;
    if (line_ == 1) {
      if (rec.type != LineType::kHeader) {
        return parser_.Error(1, "the first line is not a header (type \"header\"); is this a "
                                "memtrace capture?");
      }
      if (rec.schema_version != kKnownSchema) {
        return parser_.Error(1, absl::StrCat("unknown schema version ", rec.schema_version,
                                             "; this reader knows version ", kKnownSchema,
                                             ". Use a memtrace built for that version"));
      }
      stats_->has_header = true;
    } else if (rec.type == LineType::kHeader) {
      return parser_.Error(line_, "a second header (two captures concatenated?)");
    }
    if (rec.type == LineType::kTrailer) stats_->has_trailer = true;
    if (rec.type >= LineType::kAlloc && rec.type <= LineType::kIntervalEnd) ++stats_->events;
    return fn_(rec);
  }

  absl::Status End(const std::string& name) const {
    if (line_ == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": empty file: a capture starts with a header line"));
    }
    return absl::OkStatus();
  }

  LineParser& parser() { return parser_; }

 private:
  LineParser parser_;
  const std::function<absl::Status(const CaptureRecord&)>& fn_;
  CaptureReadStats* stats_;
  uint64_t line_ = 0;
};

}  // namespace

namespace {

// Feeds the lines of a zstd-compressed capture (one or more frames) to `checker`.
absl::Status ReadZstd(FILE* f, const std::string& path, StructureChecker& checker) {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  if (dctx == nullptr) return absl::ResourceExhaustedError("cannot create a zstd context");
  std::string in(ZSTD_DStreamInSize(), '\0');
  std::string out(ZSTD_DStreamOutSize(), '\0');
  std::string pending;
  size_t last = 0;  // ZSTD_decompressStream's last hint: 0 when a frame is complete
  uint64_t offset = 0;
  absl::Status status;
  for (;;) {
    const size_t n = fread(in.data(), 1, in.size(), f);
    if (n == 0) break;
    ZSTD_inBuffer input{in.data(), n, 0};
    while (input.pos < input.size) {
      ZSTD_outBuffer output{out.data(), out.size(), 0};
      last = ZSTD_decompressStream(dctx, &output, &input);
      if (ZSTD_isError(last)) {
        ZSTD_freeDCtx(dctx);
        return absl::DataLossError(absl::StrCat(
            "capture '", path, "' is not valid zstd data near compressed byte ",
            offset + input.pos, ": ", ZSTD_getErrorName(last)));
      }
      pending.append(out.data(), output.pos);
      size_t start = 0;
      for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
        status = checker.Line(std::string_view(pending).substr(start, nl - start));
        if (!status.ok()) {
          ZSTD_freeDCtx(dctx);
          return status;
        }
      }
      pending.erase(0, start);
    }
    offset += n;
  }
  ZSTD_freeDCtx(dctx);
  if (ferror(f) != 0) return absl::DataLossError(absl::StrCat("error reading capture '", path, "'"));
  if (last != 0) {
    return absl::DataLossError(absl::StrCat(
        "capture '", path, "': the zstd stream is cut off (the capture was truncated)"));
  }
  if (!pending.empty()) return checker.Line(pending);
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadCapture(const std::string& path,
                         const std::function<absl::Status(const CaptureRecord&)>& fn,
                         CaptureReadStats* stats) {
  CaptureReadStats local;
  if (stats == nullptr) stats = &local;
  *stats = CaptureReadStats{};
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) {
    const int err = errno;
    return absl::NotFoundError(absl::StrCat("cannot open capture '", path, "': ",
                                            strerror(err), " (errno ", err, ")"));
  }
  StructureChecker checker(path, fn, stats);
  // zstd frames start with the magic number 0xFD2FB528 (little-endian).
  unsigned char magic[4] = {};
  const size_t got = fread(magic, 1, 4, f);
  rewind(f);
  if (got == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f &&
      magic[3] == 0xfd) {
    absl::Status s = ReadZstd(f, path, checker);
    fclose(f);
    if (!s.ok()) return s;
    return checker.End(path);
  }
  char* line = nullptr;
  size_t capacity = 0;
  absl::Status status;
  for (;;) {
    const ssize_t n = getline(&line, &capacity, f);
    if (n < 0) break;
    size_t len = static_cast<size_t>(n);
    if (len > 0 && line[len - 1] == '\n') --len;
    status = checker.Line(std::string_view(line, len));
    if (!status.ok()) break;
  }
  const bool read_error = ferror(f) != 0;
  free(line);
  fclose(f);
  if (!status.ok()) return status;
  if (read_error) return absl::DataLossError(absl::StrCat("error reading capture '", path, "'"));
  return checker.End(path);
}

absl::Status ReadCaptureText(std::string_view text, const std::string& name,
                             const std::function<absl::Status(const CaptureRecord&)>& fn,
                             CaptureReadStats* stats) {
  CaptureReadStats local;
  if (stats == nullptr) stats = &local;
  *stats = CaptureReadStats{};
  StructureChecker checker(name, fn, stats);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (absl::Status s = checker.Line(text.substr(start, end - start)); !s.ok()) return s;
    start = end + 1;
  }
  return checker.End(name);
}

}  // namespace memtrace
