// Copyright 2026 The memtrace Authors.

#include "cli/progress_bar.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "sinks/summary_table.h"

namespace memtrace {

ProgressBar::ProgressBar(const std::string& path, const std::string& what)
    : label_(what + " " + path) {
  if (isatty(STDERR_FILENO) == 0) return;
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) < kMinBytes) return;
  file_bytes_ = static_cast<uint64_t>(st.st_size);
  unsigned char magic[4] = {};
  if (FILE* f = fopen(path.c_str(), "rb"); f != nullptr) {
    compressed_ = fread(magic, 1, 4, f) == 4 && magic[0] == 0x28 && magic[1] == 0xb5 &&
                  magic[2] == 0x2f && magic[3] == 0xfd;
    fclose(f);
  }
  enabled_ = true;
  next_draw_ = std::chrono::steady_clock::now() + kRedraw;
}

void ProgressBar::Update(uint64_t bytes_read) {
  if (!enabled_ || bytes_read < next_check_) return;
  next_check_ = bytes_read + kCheckBytes;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_draw_) return;
  next_draw_ = now + kRedraw;
  if (compressed_) {
    fprintf(stderr, "\r%s: %s read (decompressed)\033[K", label_.c_str(),
            FormatBytes(bytes_read).c_str());
  } else {
    fprintf(stderr, "\r%s: %3.0f%% (%s of %s)\033[K", label_.c_str(),
            100.0 * static_cast<double>(bytes_read) / static_cast<double>(file_bytes_),
            FormatBytes(bytes_read).c_str(), FormatBytes(file_bytes_).c_str());
  }
  fflush(stderr);
  drawn_ = true;
}

void ProgressBar::Done() {
  if (drawn_) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  drawn_ = false;
  enabled_ = false;
}

}  // namespace memtrace
