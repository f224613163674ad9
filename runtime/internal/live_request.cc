// Copyright 2026 The memtrace Authors.

#include "runtime/internal/live_request.h"

namespace memtrace::runtime_internal {

LiveRequest ParseLiveRequest(std::string_view received) noexcept {
  // Only the bytes a line may span are looked at: a line that ends later is too long
  // whatever follows, as it was when those bytes were all there was.
  const std::string_view window = received.substr(0, kMaxLiveRequestBytes + 1);
  const size_t newline = window.find('\n');
  if (newline == std::string_view::npos) {
    return window.size() > kMaxLiveRequestBytes ? LiveRequest::kTooLong
                                                : LiveRequest::kIncomplete;
  }
  std::string_view line = window.substr(0, newline);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line == "snapshot") return LiveRequest::kSnapshot;
  if (line == "capture") return LiveRequest::kCapture;
  return LiveRequest::kUnknown;
}

}  // namespace memtrace::runtime_internal
