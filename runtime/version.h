// Copyright 2026 The memtrace Authors.
//
// version.h: memtrace's version, the one place it is written. `memtrace --version` prints
// it, and the interposer writes it into every capture's header (interposer.version,
// docs/capture-format.md), so a capture names the memtrace that made it.
//
// Thread safety: a constant.

#ifndef MEMTRACE_RUNTIME_VERSION_H_
#define MEMTRACE_RUNTIME_VERSION_H_

namespace memtrace {

inline constexpr char kMemtraceVersion[] = "0.1.0";

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_VERSION_H_
