// Copyright 2026 The memtrace Authors.
//
// batch_reader.h: ReadCapture() on a thread of its own, its records handed over in batches.
//
// A replay has two halves of about the same cost on a binary capture: reading (bytes,
// varints, the structure checks: capture_reader.h) and applying (the ledger and the
// counters: analyzer.h). ReadCaptureBatches() reads on a second thread while the
// caller's thread applies, so a replay takes about the longer half instead of their sum:
//
//   reading thread: file -> decode -> check -> batch ──(bounded queue)──► caller: fn(batch)
//
// What fn sees is ReadCapture()'s: the same records in the same order, in batches of at
// most kCaptureBatchRecords; an error of the reading comes after every record before it,
// as ReadCapture() returns it; `*stats` at the end is ReadCapture()'s. A batch's records
// stay valid while fn runs, so a consumer may look ahead inside a batch (the Analyzer asks
// memory for the ledger slots of the events a few places ahead). fn's first error stops
// the reading and is what the call returns, with `*stats` as of the end of the batch fn
// failed on; `read`, fn's second argument, is the stats as of the batch's last record
// (the bytes read so far, for a progress bar).
//
// Threads. ReadThreads::kAuto reads on a second thread when the caller may run on two
// CPUs or more (sched_getaffinity), otherwise on the caller's thread, which then calls fn
// each time a batch is full (also ReadThreads::kOne, and when a thread cannot be
// started). The threads share a fixed set of kCaptureBatches batches through a queue
// guarded by one mutex, taken once a batch. Neither side spins: one that finds nothing
// to do sleeps on a condition variable, and the other wakes it only then. The reader,
// once it has found no free batch, is woken when half of them are free again, so a
// reader faster than the caller (the usual case) sleeps once per kCaptureBatches / 2
// batches, not once a batch.
//
// Memory: kCaptureBatches * kCaptureBatchRecords records (a few MiB), whatever the capture.

#ifndef MEMTRACE_ANALYSIS_BATCH_READER_H_
#define MEMTRACE_ANALYSIS_BATCH_READER_H_

#include <cstddef>
#include <functional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "analysis/capture_reader.h"

namespace memtrace {

inline constexpr size_t kCaptureBatchRecords = 1024;
inline constexpr size_t kCaptureBatches = 8;

enum class ReadThreads : uint8_t {
  kAuto,  // a reading thread when there are two CPUs or more
  kOne,   // the caller's thread alone
  kTwo,   // a reading thread, whatever the CPUs (tests)
};

using CaptureBatchFn = std::function<absl::Status(std::span<const CaptureRecord> batch,
                                                  const CaptureReadStats& read)>;

// Reads `path` as ReadCapture() does, calling `fn` with its records in order, a batch at a
// time (above).
absl::Status ReadCaptureBatches(const std::string& path, const CaptureBatchFn& fn,
                                CaptureReadStats* stats = nullptr,
                                ReadThreads threads = ReadThreads::kAuto);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_BATCH_READER_H_
