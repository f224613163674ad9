// Copyright 2026 The memtrace Authors.

#include "cli/convert_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "analysis/capture_reader.h"
#include "analysis/capture_writer.h"

namespace memtrace {

const CommandSpec kConvertSpec = {
    "convert", "memtrace convert [flags] IN OUT",
    "Rewrites the capture IN as OUT, in the encoding OUT's name asks for: binary for\n"
    "'.mtb' or '.mtb.zst' (compact, cheap to write: what `memtrace run` writes by default),\n"
    "JSONL for any other name (one JSON object per line, docs/capture-format.md); '.zst'\n"
    "compresses. IN may be either encoding, plain or zstd-compressed. The records are the\n"
    "same either way: every command reads both.",
    {}};

namespace {

// True when both names lead to one file (converting a file onto itself would empty it).
bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace

int ConvertCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kConvertSpec, argc, argv, &args)) return *exit;
  if (args.positional.size() != 2) {
    return UsageError(kConvertSpec, absl::StrCat("give two files, IN and OUT (got ",
                                                 args.positional.size(), ")"));
  }
  const std::string& in = args.positional[0];
  const std::string& out = args.positional[1];
  if (SameFile(in, out)) {
    return UsageError(kConvertSpec,
                      absl::StrCat("'", in, "' and '", out, "' are the same file; give OUT a "
                                   "new name"));
  }
  // OUT is created when IN's first record was read: an unreadable IN leaves no OUT.
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
        return writer->Write(r);
      },
      &stats);
  if (writer != nullptr) {
    const absl::Status finished = writer->Finish();
    if (s.ok()) s = finished;
  }
  if (!s.ok()) {
    if (writer != nullptr) unlink(out.c_str());
    return InputError(kConvertSpec, std::string(s.message()));
  }
  fprintf(stderr, "memtrace convert: wrote %s (%s, %llu events%s)\n", out.c_str(),
          writer->binary() ? "binary" : "JSONL",
          static_cast<unsigned long long>(stats.events),
          stats.has_trailer ? "" : "; IN has no trailer: it is truncated, and so is OUT");
  return 0;
}

}  // namespace memtrace
