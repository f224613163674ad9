// Copyright 2026 The memtrace Authors.
//
// capture_name.h: what a capture's file name says of its bytes. The writers pick the
// encoding by the name's last extensions (JsonlSink::ApplyPathExtension(),
// CaptureWriter::Open()): ".mtb" binary, ".jsonl" or none JSONL, then ".zst" compressed.
// `memtrace run` and `memtrace convert` refuse names that promise other bytes.
//
// Thread safety: pure functions.

#ifndef MEMTRACE_ANALYSIS_CAPTURE_NAME_H_
#define MEMTRACE_ANALYSIS_CAPTURE_NAME_H_

#include <cstddef>
#include <string>

namespace memtrace {

// Where the last extension of `path`'s file name begins: the index of its '.', or npos
// when the file name has none. A file name's leading dot is part of its name (".hidden"
// has no extension), and a directory's dots are not the file's.
size_t ExtensionDot(const std::string& path);

// The extension of `path`'s file name that says what a capture's bytes are, a ".zst"
// after it (compression) set aside: "mtb" (binary), "jsonl" or "" (none: JSONL), or
// another, which no capture writer honours (it would write JSONL under a name that
// promises other bytes). A file name's leading dot is part of its name.
std::string CaptureNameExtension(const std::string& path);

// `path` in those parts: what comes before the extension (`stem`), the extension
// (CaptureNameExtension()), and whether ".zst" follows it: `path` is stem, then "." and
// the extension where there is one, then ".zst" where compressed.
struct CaptureName {
  std::string stem;
  std::string extension;
  bool compressed = false;
};
CaptureName SplitCaptureName(const std::string& path);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_CAPTURE_NAME_H_
