// Copyright 2026 The memtrace Authors.
//
// capture_file_ends.h: a capture's header and trailer, read from the two ends of its file
// without reading what lies between.
//
// The header is the file's first record (a JSONL capture's first line, a binary one's
// first record after the magic); the trailer its last (the last line; in a binary
// capture, a JSON record whose length prefix ends right before its text and whose text
// ends the file). Only an uncompressed capture can be read from its end: a zstd stream
// must be read through. Users: the summary from the trailer (trailer_summary.h), and a
// replay that sizes its tables from the trailer's peak (Analyzer::ApplyFile()), and the
// check of the bytes between against the trailer's checksum.

#ifndef MEMTRACE_ANALYSIS_CAPTURE_FILE_ENDS_H_
#define MEMTRACE_ANALYSIS_CAPTURE_FILE_ENDS_H_

#include <cstdint>
#include <future>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace memtrace {

struct CaptureFileEnds {
  uint64_t file_bytes = 0;
  bool binary = false;                 // the file starts with the binary magic
  std::optional<std::string> header;   // the header's JSON text, if the file starts with one
  std::optional<std::string> trailer;  // the trailer's JSON text, if the file ends with one
  uint64_t trailer_offset = 0;         // where the trailer's record starts, if there is one
};

// The ends of the capture at `path`: up to 4 MiB of each end are read, so a header or a
// trailer longer than that (a program with very many scopes) is not found; without
// `with_header`, only the first bytes (the binary magic) and the trailer. Nothing is
// found in a file that cannot be read, is not a regular file (a pipe is not even opened),
// or is compressed.
CaptureFileEnds ReadCaptureFileEnds(const std::string& path, bool with_header = true);

// zlib's CRC-32 of the bytes of the capture at `path` before its trailer's record, which
// `ends` (ReadCaptureFileEnds() of the same file) found: what the writer put in the
// trailer as "crc32" (docs/capture-format.md). Nullopt when there is no trailer, or the
// file cannot be read or has changed size since.
std::optional<uint32_t> Crc32BeforeTrailer(const std::string& path, const CaptureFileEnds& ends);

// Whether the bytes of the capture at `path` before its trailer are those its trailer's
// "crc32" was computed over: false when they differ (the file was changed after it was
// written: a byte flipped, a record edited), true when they match; nullopt when it cannot
// be told (a compressed capture, whose zstd frame has a checksum of its own; no trailer at
// the end, or one without "crc32", as captures written before it had; an unreadable file).
std::optional<bool> MatchesTrailerChecksum(const std::string& path);

// MatchesTrailerChecksum(path) on a thread of its own, started now: a replay reads the
// file on one thread and applies it on another, at the pace of the slower, and the
// checksum's own pass over the file runs beside them instead of after. Computed here,
// the future ready at once, when no thread can be started.
std::future<std::optional<bool>> MatchTrailerChecksumAside(const std::string& path);

// `error`, from reading the capture at `path`, said as damage where the file's bytes differ
// from its trailer's checksum (a flipped byte that no longer parses, or that made a record
// run past the end and the file read as cut off); `error` itself otherwise.
absl::Status ExplainReadError(const std::string& path, absl::Status error);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_CAPTURE_FILE_ENDS_H_
