// Copyright 2026 The memtrace Authors.
//
// output_file.h: a file the analysis commands write (a report, an export), whole or not
// at all.
//
// OutputFile::Create() opens a scratch file beside the destination before the work that
// fills it, so that a path nobody can write ("no such directory") is reported at once,
// not after minutes of reading a large capture. Commit() renames the scratch file over
// the destination once every byte is written: a reader never sees half a report, and a
// failed run leaves an earlier file at that path as it was. An OutputFile destroyed
// without a successful Commit() removes its scratch file.
//
// A destination that exists and is not a plain file (/dev/stdout, a pipe, a symbolic
// link) is written in place instead: a rename would replace the link or the device node
// itself.
//
// Thread safety: one thread uses an OutputFile.
//
// Example:
//   absl::StatusOr<OutputFile> out = OutputFile::Create("report.html");
//   if (!out.ok()) return out.status();           // before any work
//   std::string page = Render(...);
//   if (absl::Status s = out->Write(page); !s.ok()) return s;
//   return out->Commit();

#ifndef MEMTRACE_ANALYSIS_OUTPUT_FILE_H_
#define MEMTRACE_ANALYSIS_OUTPUT_FILE_H_

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace memtrace {

// True when both names lead to one existing file (a link, `./`, or the same path).
bool SameFile(const std::string& a, const std::string& b);

class OutputFile {
 public:
  // Opens the file that will become `path`. The error names `path`, the reason and what
  // to check. `path` may not be one of `inputs` (the files the work reads), under any
  // name: Commit() would put the output in place of what it was made from.
  static absl::StatusOr<OutputFile> Create(const std::string& path,
                                           const std::vector<std::string>& inputs = {});

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  // Appends `bytes`. An error (a full disk) names the path and the reason.
  absl::Status Write(std::string_view bytes);

  // Closes the file and puts it at the path given to Create(). Call once; afterwards
  // nothing more may be written.
  absl::Status Commit();

 private:
  OutputFile(std::string path, std::string scratch, FILE* file)
      : path_(std::move(path)), scratch_(std::move(scratch)), file_(file) {}
  void Discard() noexcept;

  std::string path_;
  std::string scratch_;  // empty: written in place (see the header comment)
  FILE* file_ = nullptr;
};

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_OUTPUT_FILE_H_
