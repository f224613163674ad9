// Copyright 2026 The memtrace Authors.
//
// One JSON line of a capture, a JSONL line or a binary capture's JSON record, parsed into
// a CaptureRecord: its type's required fields there, each field of its JSON type and
// range, and errors that name the line (or the binary record and its byte offset) and
// what is wrong. The reader (capture_reader.cc) checks what lies between lines: the
// header first, the trailer last, ids in range.

#ifndef MEMTRACE_ANALYSIS_INTERNAL_CAPTURE_LINE_PARSER_H_
#define MEMTRACE_ANALYSIS_INTERNAL_CAPTURE_LINE_PARSER_H_

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "analysis/capture_reader.h"

namespace memtrace::analysis_internal {

// The header's schema_version this reader knows.
inline constexpr uint32_t kKnownCaptureSchema = 1;

class CaptureLineParser {
 public:
  // `name`: the capture's, which every error starts with.
  explicit CaptureLineParser(std::string name) : name_(std::move(name)) {}

  // An error about line (or binary record) `line`.
  absl::Status Error(uint64_t line, const std::string& what) const;
  // Error() for `text`, line `line`, that is no JSON object: on a JSONL file's first line
  // that does not begin with '{', it says the file is not a capture at all.
  absl::Status NotJson(uint64_t line, std::string_view text, const std::string& what) const;

  // Binary captures: errors name the record's byte offset as well as its number.
  void set_binary_offset(int64_t offset) { binary_offset_ = offset; }

  // Parses one line (without its newline) into `rec`.
  absl::Status Parse(std::string_view text, uint64_t line, CaptureRecord* rec);

 private:
  // One field of the line: into `rec`, its bit into `seen`; the type's name into `type`.
  absl::Status Field(std::string_view key, simdjson::ondemand::value& value, uint64_t line,
                     CaptureRecord* rec, uint32_t* seen, std::string_view* type);

  const std::string name_;
  int64_t binary_offset_ = -1;
  simdjson::ondemand::parser parser_;
  std::string buffer_;
  std::string type_storage_;
};

}  // namespace memtrace::analysis_internal

#endif  // MEMTRACE_ANALYSIS_INTERNAL_CAPTURE_LINE_PARSER_H_
