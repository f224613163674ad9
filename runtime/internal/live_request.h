// Copyright 2026 The memtrace Authors.
//
// live_request.h: what the bytes a client of the live endpoint sent ask for
// (runtime/internal/live_server.h, "Protocol").
//
// A request is one line, "snapshot" or "capture", ended by "\n" (or "\r\n"). The server reads a
// client's bytes as they come and asks ParseLiveRequest() after each read, with all it
// has so far; the answer is final once it is not kIncomplete, and never changes as more
// bytes come. It is kept apart from the socket code so that it can be fuzzed without one
// (tests/fuzz/live_request_fuzzer.cc).
//
//   ParseLiveRequest("snap")           kIncomplete  (read on, until the deadline)
//   ParseLiveRequest("snapshot\n")     kSnapshot
//   ParseLiveRequest("capture\r\n")    kCapture
//   ParseLiveRequest("hello\nsnap")    kUnknown     (the first line decides)
//   ParseLiveRequest(257 bytes, no newline)  kTooLong
//
// Thread safety: a pure function.

#ifndef MEMTRACE_RUNTIME_INTERNAL_LIVE_REQUEST_H_
#define MEMTRACE_RUNTIME_INTERNAL_LIVE_REQUEST_H_

#include <cstddef>
#include <string_view>

namespace memtrace::runtime_internal {

// The longest request line read, its newline left out: a client that sends more without
// one is answered kTooLong. A server needs to read at most one byte more.
inline constexpr size_t kMaxLiveRequestBytes = 256;

enum class LiveRequest {
  kIncomplete,  // no newline yet, and no more than kMaxLiveRequestBytes bytes
  kSnapshot,    // the first line is "snapshot": the counters and top sites, one JSON line
  kCapture,     // the first line is "capture": a capture of the live blocks (`memtrace
                // snapshot`)
  kUnknown,     // the first line is anything else
  kTooLong,     // more than kMaxLiveRequestBytes bytes and no newline among them
};

// What `received`, every byte a client has sent so far, asks for. Bytes after the first
// newline are ignored.
LiveRequest ParseLiveRequest(std::string_view received) noexcept;

}  // namespace memtrace::runtime_internal

#endif  // MEMTRACE_RUNTIME_INTERNAL_LIVE_REQUEST_H_
