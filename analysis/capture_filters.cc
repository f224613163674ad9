// Copyright 2026 The memtrace Authors.

#include "analysis/capture_filters.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

namespace memtrace {
namespace {

// Said where the trailer has no counts.
constexpr char kNotCounted[] =
    "filtered: how many, the capture does not say (it has no trailer, or was written "
    "before memtrace counted what its filters left out)";

std::string Allocations(uint64_t n) {
  return absl::StrCat(n, n == 1 ? " allocation" : " allocations");
}

}  // namespace

std::string CaptureFilter::Flag() const {
  return absl::StrCat(kind == Kind::kMinSize ? "--min-size=" : "--sample=", value);
}

const char* CaptureFilter::Setting() const {
  return kind == Kind::kMinSize ? "MEMTRACE_MIN_SIZE" : "MEMTRACE_SAMPLE_BYTES";
}

std::string CaptureFilter::Statement() const {
  const std::string what = kind == Kind::kMinSize
                               ? absl::StrCat("of blocks smaller than ", value, " bytes")
                               : std::string("that sampling did not draw");
  std::string out =
      counted ? absl::StrCat(Flag(), " left out ", Allocations(allocations), " (",
                             FormatBytes(bytes), ") ", what)
              : absl::StrCat(Flag(), " left out the allocations ", what, " (", kNotCounted,
                             ")");
  if (kind == Kind::kSample) {
    absl::StrAppend(&out, "; the capture's counts and bytes are estimates, scaled from the "
                          "sample");
  }
  return out;
}

std::string CaptureFilter::Json() const {
  return absl::StrCat(
      "{\"filter\":\"", kind == Kind::kMinSize ? "min_size" : "sample",
      "\",\"flag\":", JsonQuote(Flag()), ",\"setting\":\"", Setting(), "\",\"value\":", value,
      ",\"left_out\":",
      counted ? absl::StrCat("{\"allocations\":", allocations, ",\"bytes\":", bytes, "}")
              : std::string("\"filtered\""),
      ",\"estimates\":", kind == Kind::kSample ? "true" : "false", "}");
}

CaptureFilters CaptureFilters::Of(const CaptureSummary& s, const TrailerBlocks* trailer) {
  CaptureFilters out;
  const bool counted = trailer != nullptr && trailer->has_filtered;
  if (s.min_size != 0) {
    out.in_force_.push_back(CaptureFilter{
        CaptureFilter::Kind::kMinSize, s.min_size, counted,
        counted ? trailer->min_size_allocations : 0, counted ? trailer->min_size_bytes : 0});
  }
  if (s.sample_interval_bytes != 0) {
    out.in_force_.push_back(CaptureFilter{CaptureFilter::Kind::kSample,
                                          s.sample_interval_bytes, counted,
                                          counted ? trailer->unsampled_allocations : 0,
                                          counted ? trailer->unsampled_bytes : 0});
  }
  return out;
}

std::string CaptureFilters::ExactFor() const {
  bool sampled = false;
  uint64_t min_size = 0;
  for (const CaptureFilter& f : in_force_) {
    if (f.kind == CaptureFilter::Kind::kSample) sampled = true;
    if (f.kind == CaptureFilter::Kind::kMinSize) min_size = f.value;
  }
  if (!sampled && min_size == 0) return "";
  const std::string sized =
      min_size != 0 ? absl::StrCat("blocks of at least ", min_size, " bytes") : "";
  if (!sampled) return absl::StrCat("for ", sized);
  return min_size != 0 ? absl::StrCat("for the sampled ", sized) : "for the sampled blocks";
}

std::vector<std::string> CaptureFilters::Statements() const {
  std::vector<std::string> out;
  for (const CaptureFilter& f : in_force_) out.push_back(f.Statement());
  return out;
}

std::string CaptureFilters::VerdictSuffix() const {
  if (in_force_.empty()) return "";
  const bool only_sampling =
      in_force_.size() == 1 && in_force_[0].kind == CaptureFilter::Kind::kSample;
  return absl::StrCat(only_sampling ? "; sampled: " : "; filtered: ",
                      absl::StrJoin(Statements(), "; "));
}

std::string CaptureFilters::Json() const {
  std::string out = "[";
  for (const CaptureFilter& f : in_force_) {
    absl::StrAppend(&out, out.size() > 1 ? "," : "", f.Json());
  }
  return out + "]";
}

}  // namespace memtrace
