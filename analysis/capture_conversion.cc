// Copyright 2026 The memtrace Authors.

#include "analysis/capture_conversion.h"

#include <unistd.h>

#include <future>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analysis/capture_file_ends.h"
#include "analysis/capture_reader.h"
#include "analysis/capture_writer.h"
#include "sinks/capture_lock.h"
#include "sinks/json_text.h"

namespace memtrace {

std::string SalvageTrailerJson(const std::string& from, const std::string& cut) {
  return absl::StrCat("{\"type\":\"trailer\",\"complete\":false,\"salvaged\":{\"from\":",
                      JsonQuote(from), ",\"cut\":", JsonQuote(cut), "}}");
}

absl::StatusOr<ConversionResult> ConvertCapture(const std::string& in, const std::string& out) {
  // A compressed capture's own checksum is not checked (its zstd frame has one): a
  // damaged IN's copy there would read as sound. Known before anything is written.
  const bool compressed = out.size() >= 4 && out.compare(out.size() - 4, 4, ".zst") == 0;
  if (compressed && MatchesTrailerChecksum(in) == false) {
    return absl::FailedPreconditionError(absl::StrCat(
        in, " is damaged: its bytes differ from those its trailer's checksum was computed "
        "over, and a compressed copy (", out, ") would not show it, since readers do not "
        "check a compressed capture's checksum; convert it to an uncompressed name, which "
        "keeps the damage visible, or record it again"));
  }
  // IN's bytes are checked against its trailer's checksum while it is read.
  std::future<std::optional<bool>> checksum = MatchTrailerChecksumAside(in);
  ConversionResult result;
  std::unique_ptr<CaptureWriter> writer;
  CaptureReadStats stats;
  absl::Status s = ReadCapture(
      in,
      [&](const CaptureRecord& r) -> absl::Status {
        if (writer == nullptr) {
          auto opened = CaptureWriter::Open(out);
          if (!opened.ok()) return opened.status();
          writer = std::move(*opened);
        }
        if (r.type == LineType::kTrailer && checksum.valid()) {
          result.damaged = checksum.get() == false;
          if (result.damaged) writer->KeepSourceChecksum();
        }
        return writer->Write(r);
      },
      &stats);
  s = ExplainReadError(in, std::move(s));  // a read stopped by damage says so
  // A flipped byte may also make IN read as cut off before the trailer it has: then no
  // copy, salvaged or not, could carry the damage.
  if (checksum.valid()) result.damaged = checksum.get() == false;
  if (s.ok() && result.damaged && !stats.has_trailer) {
    s = absl::DataLossError(absl::StrCat(
        in, " is damaged: its bytes differ from those its trailer's checksum was computed "
        "over, and the damage makes it read as cut off before its trailer, so a copy would "
        "hide it; `memtrace verify ", in, "` says more. Record it again"));
  }
  if (s.ok() && !stats.has_trailer && CaptureBeingWritten(in)) {
    // No trailer yet, and its process still runs: nothing was cut.
    s = absl::FailedPreconditionError(absl::StrCat(
        in, " is still being written (the process writing it runs, and holds its capture "
        "lock): its trailer comes when that process exits; convert or salvage it then"));
  }
  if (s.ok() && writer != nullptr && !stats.has_trailer) {
    CaptureRecord trailer;
    trailer.type = LineType::kTrailer;
    trailer.raw = SalvageTrailerJson(in, stats.cut);
    s = writer->Write(trailer);
    result.salvaged = s.ok();
  }
  if (writer != nullptr) {
    const absl::Status finished = writer->Finish();
    if (s.ok()) s = finished;
  }
  if (!s.ok()) {
    if (writer != nullptr) unlink(out.c_str());
    return s;
  }
  result.events = stats.events;
  result.binary = writer != nullptr && writer->binary();
  result.cut = stats.cut;
  return result;
}

}  // namespace memtrace
