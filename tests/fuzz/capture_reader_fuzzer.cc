// Copyright 2026 The memtrace Authors.
//
// libFuzzer target for the capture reader, the analyzer's replay and the reading of the
// trailer's blocks (`memtrace summary`): any input must end in an OK status or a clear
// error, never a crash, a hang or undefined behaviour.
// Built and run by tools/fuzz (clang 14, -fsanitize=fuzzer,address,undefined).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analysis/analyzer.h"
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
  return 0;
}
