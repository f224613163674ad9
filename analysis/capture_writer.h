// Copyright 2026 The memtrace Authors.
//
// capture_writer.h: writes records read from a capture (analysis/capture_reader.h) back out
// as a capture, in the encoding its path names: binary for ".mtb" and ".mtb.zst", JSONL
// otherwise; ".zst" compresses. It is `memtrace convert`.
//
// Every line is spelled by the sink's own encoders (sinks/jsonl_encoding.h,
// sinks/binary_encoding.h), so a capture converted to JSONL has exactly the lines the sink
// would have written, and JSONL -> binary -> JSONL gives back the same bytes. The header
// and trailer are copied as they were (CaptureRecord::raw), the trailer with the CRC-32
// of this file's bytes before it in place of its source's (TrailerWithCrc32()); table and event lines are
// written from their decoded fields, so fields the reader does not know are dropped and
// optional fields a hand-written line left out (`epoch`, `mono_ns`) are written as 0.
//
// Thread safety: one writer per thread.
//
// Example:
//   auto writer = CaptureWriter::Open("out.mtb");
//   if (!writer.ok()) return writer.status();
//   absl::Status s = ReadCapture("in.jsonl", [&](const CaptureRecord& r) {
//     return (*writer)->Write(r);
//   });
//   if (s.ok()) s = (*writer)->Finish();

#ifndef MEMTRACE_ANALYSIS_CAPTURE_WRITER_H_
#define MEMTRACE_ANALYSIS_CAPTURE_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analysis/capture_reader.h"
#include "sinks/binary_encoding.h"
#include "sinks/zstd_file_stream.h"

namespace memtrace {

class CaptureWriter {
 public:
  // Creates (truncates) `path`. Errors say what and where.
  static absl::StatusOr<std::unique_ptr<CaptureWriter>> Open(const std::string& path);
  ~CaptureWriter();

  // Appends one record. Errors name the output file.
  absl::Status Write(const CaptureRecord& record);
  // Writes what is buffered, ends the zstd frame, closes the file.
  absl::Status Finish();

  // The trailer, when it comes, keeps its source's "crc32" instead of this file's: for a
  // source whose bytes no longer match it (damaged), so the copy is damaged too rather
  // than given a checksum that hides the damage.
  void KeepSourceChecksum() { keep_source_checksum_ = true; }

  bool binary() const { return binary_; }

 private:
  CaptureWriter(FILE* file, std::string path, bool binary, bool zstd);
  absl::Status Flush(bool end);
  void Line(const std::string& json);

  FILE* file_;
  const std::string path_;
  const bool binary_;
  std::unique_ptr<ZstdFileStream> zstd_;  // when the path ends in ".zst"
  bool keep_source_checksum_ = false;
  std::string buffer_;
  BinaryEncoder encoder_{&buffer_};
  // JSONL: the `t`/`epoch` fields of the current epoch, formatted once per change.
  int64_t t_ = 0;
  uint32_t epoch_ = 0;
  std::string time_fields_;
  bool have_time_ = false;
  // zlib's CRC-32 of the bytes written so far, before compression: the trailer's "crc32".
  uint32_t crc32_ = 0;
};

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_CAPTURE_WRITER_H_
