// Copyright 2026 The memtrace Authors.

#include "analysis/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace memtrace {
namespace {

absl::Status Failed(const std::string& what, const std::string& path, int err,
                    const char* hint) {
  return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "': ", strerror(err),
                                                 " (errno ", err, ")", hint));
}

}  // namespace

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

absl::StatusOr<OutputFile> OutputFile::Create(const std::string& path,
                                              const std::vector<std::string>& inputs) {
  if (path.empty()) return absl::InvalidArgumentError("the output path is empty");
  struct stat st;
  for (const std::string& in : inputs) {
    if (SameFile(path, in)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot write '", path, "': it is '", in, "', which this reads; writing it would "
          "replace that file: give the output a new name"));
    }
  }
  const bool in_place = lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  if (in_place && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write '", path, "': it is a directory; name a file in it"));
  }
  // Beside the destination, so that the rename stays on one file system; the pid keeps two
  // runs writing one path apart.
  std::string scratch = in_place ? std::string() : absl::StrCat(path, ".partial-", getpid());
  FILE* file = fopen(in_place ? path.c_str() : scratch.c_str(), "wb");
  if (file == nullptr) {
    return Failed("cannot write", path, errno, "; check that its directory exists and is writable");
  }
  return OutputFile(path, std::move(scratch), file);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      scratch_(std::move(other.scratch_)),
      file_(std::exchange(other.file_, nullptr)) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    Discard();
    path_ = std::move(other.path_);
    scratch_ = std::move(other.scratch_);
    file_ = std::exchange(other.file_, nullptr);
  }
  return *this;
}

OutputFile::~OutputFile() { Discard(); }

void OutputFile::Discard() noexcept {
  if (file_ == nullptr) return;
  fclose(file_);
  file_ = nullptr;
  if (!scratch_.empty()) unlink(scratch_.c_str());
}

absl::Status OutputFile::Write(std::string_view bytes) {
  if (file_ == nullptr) return absl::FailedPreconditionError("OutputFile: written after Commit()");
  if (fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    return Failed("writing", path_, errno, "; is the disk full?");
  }
  return absl::OkStatus();
}

absl::Status OutputFile::Commit() {
  if (file_ == nullptr) return absl::FailedPreconditionError("OutputFile: committed twice");
  FILE* file = std::exchange(file_, nullptr);
  if (fclose(file) != 0) {
    const int err = errno;
    if (!scratch_.empty()) unlink(scratch_.c_str());
    return Failed("writing", path_, err, "; is the disk full?");
  }
  if (!scratch_.empty() && rename(scratch_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    unlink(scratch_.c_str());
    return Failed("cannot put the output at", path_, err, "");
  }
  return absl::OkStatus();
}

}  // namespace memtrace
