// Copyright 2026 The memtrace Authors.
//
// progress_bar.h: "reading capture.jsonl: 42% (1.1 GiB of 2.6 GiB)" on stderr while a large
// capture is read, only when stderr is a terminal.
//
// A ProgressBar is enabled when stderr is a terminal (isatty(2)) and the file is at least
// kMinBytes; otherwise every call is a no-op and nothing is ever written, so stderr stays
// clean when piped or redirected (tests check this). Update() is cheap: it looks at the
// clock once every kCheckBytes read, however often it is called (a record at a time, or
// a batch: analysis/batch_reader.h), and redraws at most every kRedraw. For a zstd capture the
// bytes read are decompressed bytes, so the bar shows bytes without a percentage. The
// line is erased by Done() and by the destructor.
//
// Thread safety: one thread.

#ifndef MEMTRACE_CLI_PROGRESS_BAR_H_
#define MEMTRACE_CLI_PROGRESS_BAR_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace memtrace {

class ProgressBar {
 public:
  static constexpr uint64_t kMinBytes = uint64_t{32} << 20;
  static constexpr std::chrono::milliseconds kRedraw{250};
  static constexpr uint64_t kCheckBytes = uint64_t{1} << 20;

  // `what` names the pass ("reading", "finding the peak").
  ProgressBar(const std::string& path, const std::string& what);
  ~ProgressBar() { Done(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void Update(uint64_t bytes_read);
  void Done();
  bool enabled() const { return enabled_; }

 private:
  std::string label_;
  uint64_t file_bytes_ = 0;
  bool compressed_ = false;
  bool enabled_ = false;
  bool drawn_ = false;
  uint64_t next_check_ = 0;  // bytes read by the next look at the clock
  std::chrono::steady_clock::time_point next_draw_;
};

}  // namespace memtrace

#endif  // MEMTRACE_CLI_PROGRESS_BAR_H_
