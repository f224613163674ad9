// Copyright 2026 The memtrace Authors.
//
// libFuzzer target for the live endpoint's request parser (runtime/internal/
// live_request.h). A client of the socket may send any bytes, in pieces of any size, so
// ParseLiveRequest() is asked about every prefix the server might hold. It must never
// crash, read past its input or be undefined, and:
//   - its answer for a prefix, once it is not kIncomplete, is the answer for the whole
//     input (the server stops reading at the first answer; more bytes must not change it);
//   - kIncomplete only without a newline and within the bound, kTooLong only past the
//     bound without a newline, kSnapshot only for the line "snapshot" and kCapture only
//     for the line "capture" (each with "\r" or not).
//
// Input: the bytes a client sends. Built and run by tools/fuzz (clang 14,
// -fsanitize=fuzzer,address,undefined); seeds in tests/fuzz/live_request_corpus.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "runtime/internal/live_request.h"

using memtrace::runtime_internal::kMaxLiveRequestBytes;
using memtrace::runtime_internal::LiveRequest;
using memtrace::runtime_internal::ParseLiveRequest;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const LiveRequest whole = ParseLiveRequest(all);
  const size_t newline = all.find('\n');
  const bool ends_in_bound =
      newline != std::string_view::npos && newline <= kMaxLiveRequestBytes;
  switch (whole) {
    case LiveRequest::kIncomplete:
      if (newline != std::string_view::npos || size > kMaxLiveRequestBytes) abort();
      break;
    case LiveRequest::kTooLong:
      if (ends_in_bound || size <= kMaxLiveRequestBytes) abort();
      break;
    case LiveRequest::kSnapshot: {
      if (!ends_in_bound) abort();
      const std::string_view line = all.substr(0, newline);
      if (line != "snapshot" && line != "snapshot\r") abort();
      break;
    }
    case LiveRequest::kCapture: {
      if (!ends_in_bound) abort();
      const std::string_view line = all.substr(0, newline);
      if (line != "capture" && line != "capture\r") abort();
      break;
    }
    case LiveRequest::kUnknown:
      if (!ends_in_bound) abort();
      break;
  }
  // Every prefix the server could hold: undecided, or decided as the whole is.
  for (size_t len = 0; len <= size; ++len) {
    const LiveRequest part = ParseLiveRequest(all.substr(0, len));
    if (part != LiveRequest::kIncomplete && part != whole) abort();
  }
  return 0;
}
