// Copyright 2026 The memtrace Authors.

#include "analysis/capture_summary.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "simdjson.h"

namespace memtrace {
namespace {

// The number after `key` ("\"name\":") in a header line (or an object of one), 0 when
// absent.
uint64_t HeaderNumber(const std::string& header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string::npos) return 0;
  return strtoull(header.c_str() + at + key.size(), nullptr, 10);
}

// The text of the header's flat object `key` ("\"fork\":{"), from the key to the first
// closing brace; nullopt when the header has none.
std::optional<std::string> HeaderObject(const std::string& header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string::npos) return std::nullopt;
  const size_t end = header.find('}', at);
  return header.substr(at, end == std::string::npos ? end : end - at);
}

// A forked child's capture (the interposer's MEMTRACE_TRACE_FORKS): the header's "fork"
// object; forked stays false when the header has none.
ForkOrigin ForkOf(const std::string& header) {
  ForkOrigin f;
  const std::optional<std::string> found = HeaderObject(header, "\"fork\":{");
  if (!found) return f;
  const std::string& object = *found;
  auto number = [&](std::string_view key) {
    return HeaderNumber(object,
                        absl::StrCat("\"", absl::string_view(key.data(), key.size()), "\":"));
  };
  f.forked = true;
  f.parent_pid = number("parent_pid");
  f.inherited_blocks = number("inherited_blocks");
  f.inherited_bytes = number("inherited_bytes");
  f.unpublished_records = number("unpublished_records");
  f.stacks_known = object.find("\"inherited_without_stack\":") != std::string::npos;
  f.inherited_without_stack = number("inherited_without_stack");
  return f;
}

// A snapshot capture's header "snapshot" object; taken stays false when there is none.
SnapshotOrigin SnapshotOf(const std::string& header) {
  SnapshotOrigin o;
  const std::optional<std::string> object = HeaderObject(header, ",\"snapshot\":{");
  if (!object) return o;
  o.taken = true;
  o.taken_unix_ns = static_cast<int64_t>(HeaderNumber(*object, "\"taken_unix_ns\":"));
  o.blocks = HeaderNumber(*object, "\"blocks\":");
  o.bytes = HeaderNumber(*object, "\"bytes\":");
  return o;
}

// The header's "process" object (the interposer's); known stays false
// when there is none, or it is not what the interposer writes.
ProcessOrigin ProcessOf(const std::string& header) {
  ProcessOrigin p;
  simdjson::dom::parser parser;
  simdjson::dom::object process;
  if (parser.parse(simdjson::padded_string(header))["process"].get_object().get(process) !=
      simdjson::SUCCESS) {
    return p;
  }
  if (process["ppid"].get_uint64().get(p.ppid) != simdjson::SUCCESS) return p;
  simdjson::dom::array argv;
  if (process["argv"].get_array().get(argv) == simdjson::SUCCESS) {
    for (simdjson::dom::element arg : argv) {
      std::string_view text;
      if (arg.get_string().get(text) == simdjson::SUCCESS) p.argv.emplace_back(text);
    }
  }
  bool truncated = false;
  if (process["argv_truncated"].get_bool().get(truncated) == simdjson::SUCCESS) {
    p.argv_truncated = truncated;
  }
  p.known = true;
  return p;
}

}  // namespace

bool CaptureSummary::IsStackStart(std::string_view frame) {
  const std::string_view function = frame.substr(0, frame.find(' '));
  for (std::string_view start : {"_start", "clone", "__clone", "clone3", "__clone3"}) {
    if (function == start) return true;
  }
  return false;
}

std::string CaptureSummary::CutStackFrame() const {
  return absl::StrCat("[stack cut at ", stack_depth, " frames: outer callers not recorded]");
}

void ReadCaptureHeader(const CaptureRecord& header, CaptureSummary* summary) {
  CaptureSummary& s = *summary;
  s.pid = header.pid;
  s.source = header.source;
  s.malloc_from = header.malloc_from;
  s.started_unix_ns = header.t;
  s.sample_interval_bytes = HeaderNumber(header.raw, "\"sample_interval_bytes\":");
  s.site_capacity = HeaderNumber(header.raw, "\"site_capacity\":");
  s.stack_depth = HeaderNumber(header.raw, "\"stack_depth\":");
  s.min_size = HeaderNumber(header.raw, "\"min_size\":");
  s.fork = ForkOf(header.raw);
  s.snapshot_of = SnapshotOf(header.raw);
  s.process = ProcessOf(header.raw);
  s.trace_children = header.raw.find("\"trace_children\":true") != std::string::npos;
  s.trace_forks = header.raw.find("\"trace_forks\":true") != std::string::npos;
  s.sampled = s.sample_interval_bytes > 0;
}

std::string VerdictWord(const CaptureSummary& s) {
  if (s.checksum_differs) return "damaged";
  if (!s.has_trailer) return s.being_written ? "running" : "truncated";
  return s.trailer_complete ? "complete" : "partial";
}

}  // namespace memtrace
