// Copyright 2026 The memtrace Authors.

#include "cli/convert_command.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "analysis/capture_conversion.h"
#include "analysis/capture_name.h"
#include "analysis/output_file.h"

namespace memtrace {

const CommandSpec kConvertSpec = {
    "convert", "memtrace convert [flags] IN OUT | memtrace convert IN -o OUT",
    "Rewrites the capture IN as OUT, in the encoding OUT's name asks for: binary for\n"
    "'.mtb' (compact, cheap to write: what `memtrace run` writes by default), JSONL for\n"
    "'.jsonl' or a name with no extension such as /dev/stdout (one JSON object per line,\n"
    "docs/capture-format.md); '.zst' after either compresses with zstd. Any other\n"
    "extension is refused ('.gz', '.xz', '.bz2' included: write OUT.jsonl and compress it\n"
    "yourself). IN may be either encoding, plain or zstd-compressed. The records are the\n"
    "same either way: every command reads both. OUT's trailer gets a checksum of OUT's\n"
    "bytes, except where IN's bytes no longer match its own (damaged): OUT then keeps\n"
    "IN's, and reads as damaged too.",
    {"output"}};

namespace {

// Why convert cannot write a capture named `out`, or "" when it can. The name's last
// extensions say what its bytes are, and the writer honours only these: ".mtb" or
// ".jsonl", or none (JSONL), then ".zst" or nothing. Anything else would put JSONL under a
// name that promises other bytes (".gz" holding plain text), so it is refused before IN
// is read.
std::string OutputNameProblem(const std::string& in, const std::string& out) {
  const CaptureName name = SplitCaptureName(out);
  const std::string& ext = name.extension;
  if (ext.empty() || ext == "mtb" || ext == "jsonl") return "";
  const std::string& stem = name.stem;
  const std::string stem_ext = CaptureNameExtension(stem);
  // The name to write instead.
  const std::string plain = stem_ext == "mtb" || stem_ext == "jsonl" ? stem : stem + ".jsonl";
  static constexpr struct {
    const char* ext;
    const char* tool;
  } kCompressors[] = {{"gz", "gzip"}, {"xz", "xz"}, {"bz2", "bzip2"}};
  for (const auto& c : kCompressors) {
    if (ext != c.ext || name.compressed) continue;
    return absl::StrCat("cannot write '", out, "': convert does not compress with ", c.tool,
                        " (it writes .mtb or .jsonl, plain or .zst); pipe the output through ",
                        c.tool, ": memtrace convert ", in, " ", plain, " && ", c.tool, " ",
                        plain);
  }
  return absl::StrCat("cannot write '", out, "': convert does not know the extension '.", ext,
                      "'; name OUT .mtb (binary) or .jsonl (JSONL), with .zst after either to "
                      "compress: memtrace convert ", in, " ", plain, name.compressed ? ".zst" : "");
}

}  // namespace

int ConvertCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kConvertSpec, argc, argv, &args)) return *exit;
  // OUT is the second file, or -o OUT.
  if (const std::string output = absl::GetFlag(FLAGS_output); !output.empty()) {
    args.positional.push_back(output);
  }
  if (args.positional.size() != 2) {
    return UsageError(kConvertSpec, absl::StrCat("give two files, IN and OUT (got ",
                                                 args.positional.size(), ")"));
  }
  const std::string& in = args.positional[0];
  const std::string& out = args.positional[1];
  if (in == "-" || out == "-") {
    return UsageError(kConvertSpec, "'-' is not standard input or output here: name the "
                                    "files, or /dev/stdin and /dev/stdout for pipes");
  }
  if (const std::string problem = OutputNameProblem(in, out); !problem.empty()) {
    return UsageError(kConvertSpec, problem);
  }
  if (SameFile(in, out)) {  // converting a file onto itself would empty it
    return UsageError(kConvertSpec,
                      absl::StrCat("'", in, "' and '", out, "' are the same file; give OUT a "
                                   "new name"));
  }
  // OUT is created when IN's first record was read: an unreadable IN leaves no OUT.
  const absl::StatusOr<ConversionResult> r = ConvertCapture(in, out);
  if (!r.ok()) return InputError(kConvertSpec, std::string(r.status().message()));
  fprintf(stderr, "memtrace convert: wrote %s (%s, %llu events%s)\n", out.c_str(),
          r->binary ? "binary" : "JSONL", static_cast<unsigned long long>(r->events),
          r->damaged ? "; IN is DAMAGED: its bytes differ from those its trailer's checksum was "
                       "computed over, so no number from it can be trusted. OUT keeps IN's "
                       "checksum and reads as damaged too; `memtrace verify IN` says more"
          : r->salvaged
              ? absl::StrCat("; IN has no trailer (", r->cut.empty() ? "it ended between records"
                                                                     : r->cut,
                             "): OUT holds its records and a trailer saying they were "
                             "salvaged, so it reads as partial")
                    .c_str()
              : "");
  return 0;
}

}  // namespace memtrace
