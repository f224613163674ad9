// Copyright 2026 The memtrace Authors.

#include "analysis/trailer_summary.h"

#include <optional>
#include <string>
#include <utility>

#include "analysis/analyzer.h"
#include "analysis/capture_file_ends.h"
#include "analysis/trailer.h"

namespace memtrace {

std::optional<CaptureSummary> SummaryFromTrailer(const std::string& path) {
  const CaptureFileEnds ends = ReadCaptureFileEnds(path);
  const std::optional<std::string>& header = ends.header;
  if (!header) return std::nullopt;
  const std::optional<std::string>& trailer = ends.trailer;
  if (!trailer) return std::nullopt;

  // The header and the trailer as a capture of no events: the header's fields, and the
  // trailer as the replay keeps it.
  auto s = Analyzer::SummarizeText(*header + "\n" + *trailer + "\n", path);
  if (!s.ok() || !s->has_trailer) return std::nullopt;
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(*trailer);
  if (!t.ok()) return std::nullopt;
  // The ledger's account is the replay's only for a clean capture of every record.
  const bool whole = s->trailer_complete && t->has_integrity && t->integrity.clean() &&
                     t->integrity.Findings().empty() && t->has_sink && t->has_event_lines &&
                     t->Losses().empty() && t->has_totals && !s->sampled &&
                     s->min_size == 0 && t->min_size_allocations == 0 &&
                     t->unsampled_allocations == 0 && t->prestart_untracked == 0;
  if (!whole) return std::nullopt;
  TakeTrailerCounters(*t, &*s);
  s->events = t->event_lines;
  s->events_applied = t->event_lines;
  s->live_blocks = t->totals.live_count;
  s->missed_frees = t->integrity.missed_frees;
  // The ends are read and the trailer parsed already: only the bytes between are left.
  if (t->crc32) {
    const std::optional<uint32_t> crc = Crc32BeforeTrailer(path, ends);
    s->checksum_differs = crc && *crc != *t->crc32;
  }
  return *std::move(s);
}

}  // namespace memtrace
