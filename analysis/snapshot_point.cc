// Copyright 2026 The memtrace Authors.

#include "analysis/snapshot_point.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace memtrace {
namespace {

constexpr const char* kPointForms =
    "use end, event=N (or N), time=T (since the capture started, or unix ns; T is a "
    "duration such as 1.5s, 250ms, 40us, 100ns, or a bare number of ns), "
    "scope-exit=PATH or scope-exit=PATH#N";

}  // namespace

absl::StatusOr<SnapshotPoint> ParseSnapshotPoint(std::string_view text) {
  SnapshotPoint p;
  p.text = std::string(text);
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad snapshot point '", p.text, "': ", why, " (", kPointForms, ")"));
  };
  const std::string_view kEvent = "event=", kTime = "time=", kScope = "scope-exit=";
  if (text == "end") return p;
  if (text.substr(0, kScope.size()) == kScope) {
    std::string_view rest = text.substr(kScope.size());
    p.kind = SnapshotPoint::Kind::kScopeExit;
    // "#N" at the end numbers the exit; a '#' followed by anything else is part of the path.
    const size_t hash = rest.rfind('#');
    if (hash != std::string_view::npos && hash + 1 < rest.size() &&
        rest.find_first_not_of("0123456789", hash + 1) == std::string_view::npos) {
      if (!absl::SimpleAtoi(absl::string_view(rest.data() + hash + 1, rest.size() - hash - 1),
                            &p.nth) ||
          p.nth == 0) {
        return bad("the exit number after '#' must be a positive integer");
      }
      rest = rest.substr(0, hash);
    }
    if (rest.empty()) return bad("the scope path is empty");
    p.scope = std::string(rest);
    return p;
  }
  std::string_view number = text;
  p.kind = SnapshotPoint::Kind::kEvent;
  if (text.substr(0, kTime.size()) == kTime) {
    p.kind = SnapshotPoint::Kind::kTime;
    number = text.substr(kTime.size());
  } else if (text.substr(0, kEvent.size()) == kEvent) {
    number = text.substr(kEvent.size());
  }
  uint64_t value = 0;
  const absl::string_view digits(number.data(), number.size());
  if (p.kind == SnapshotPoint::Kind::kTime) {
    // A bare number is nanoseconds, as time=NS always was; with a unit it is a duration.
    absl::Duration d;
    if (absl::SimpleAtoi(digits, &value)) {
      if (value > static_cast<uint64_t>(INT64_MAX)) return bad("the time is out of range");
      p.time_ns = static_cast<int64_t>(value);
    } else if (!absl::ParseDuration(digits, &d) || d < absl::ZeroDuration()) {
      return bad("expected a duration with a unit (ns, us, ms, s, m, h: 1.5s, 250ms) or a "
                 "non-negative integer of ns");
    } else if (d > absl::Nanoseconds(INT64_MAX)) {
      return bad("the time is out of range");
    } else {
      p.time_ns = absl::ToInt64Nanoseconds(d);
    }
    return p;
  }
  if (!absl::SimpleAtoi(digits, &value)) return bad("expected a non-negative integer");
  p.event = value;
  return p;
}

}  // namespace memtrace
