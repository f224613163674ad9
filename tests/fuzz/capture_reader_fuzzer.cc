// Copyright 2026 The memtrace Authors.
//
// libFuzzer target for the capture reader, the analyzer's replay and the reading of the
// trailer's blocks (`memtrace summary`): any input must end in an OK status or a clear
// error, never a crash, a hang or undefined behaviour. The input is also replayed as a
// file, which reads it in batches on a second thread and sizes the replay's tables from
// its trailer (Analyzer::ApplyFile()), and matched as `memtrace verify` matches it
// (MatchCapture()): each must agree with the text replay.
// Built and run by tools/fuzz (clang 14, -fsanitize=fuzzer,address,undefined).

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "analysis/analyzer.h"
#include "analysis/capture_matcher.h"
#include "analysis/trailer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto summary = memtrace::Analyzer::SummarizeText(text, "fuzz");
  if (summary.ok()) {
    // Reading what was produced must be safe too.
    volatile uint64_t sink = summary->totals.live_bytes + summary->attribution.size() +
                             summary->retention.size();
    (void)sink;
    if (summary->has_trailer) {
      const auto blocks = memtrace::ParseTrailer(summary->trailer);
      if (blocks.ok()) {
        volatile size_t losses = blocks->Losses().size() + blocks->integrity_json.size();
        (void)losses;
      }
    }
  }
  // A capture the text replay took, as a file, must give what the text gave. (Only those:
  // a file replay starts a reading thread, and the rest fail where the text's did.)
  if (summary.ok()) {
    struct TempFile {
      std::string path = "/tmp/memtrace_fuzz_capture." + std::to_string(getpid());
      ~TempFile() { unlink(path.c_str()); }
    };
    static const TempFile file;
    if (FILE* f = fopen(file.path.c_str(), "wb")) {
      const bool written = fwrite(data, 1, size, f) == size;
      if (fclose(f) == 0 && written) {
        const auto from_file = memtrace::Analyzer::Summarize(file.path);
        if (!from_file.ok() || from_file->totals.live_bytes != summary->totals.live_bytes) {
          __builtin_trap();
        }
        const auto matched = memtrace::MatchCapture(file.path);
        if (!matched.ok() || matched->unmatched_releases != summary->unmatched_releases ||
            matched->events != summary->events || matched->cut != summary->cut ||
            matched->sampled != summary->sampled ||
            matched->has_trailer != summary->has_trailer) {
          __builtin_trap();
        }
      }
    }
  }
  return 0;
}
