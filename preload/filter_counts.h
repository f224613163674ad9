// Copyright 2026 The memtrace Authors.
//
// filter_counts.h: what the interposer's recording filters left out, counted.
//
// A filter is not a loss: the user asked for it. But a capture that leaves out most of a
// program's allocations must say how many, or `memtrace verify` would call it complete and
// exact with nothing beside it. Two filters leave allocations out of the capture:
//
//   kMinSize  MEMTRACE_MIN_SIZE (--min-size): a block whose usable size is below the
//             minimum is not recorded, nor is its release.
//   kSample   MEMTRACE_SAMPLE_BYTES (--sample): a block of the right size that sampling did
//             not draw is not recorded (the recorded ones carry weights that scale them to
//             an estimate of the whole).
//
// Each allocation is counted once, under the first filter that left it out (min-size is
// decided before sampling), with the bytes the program asked for. The trailer carries the
// totals ("filtered", docs/capture-format.md), and every verdict states them.
//
// Layout and policy. kLines cache lines, one per thread: a thread claims the next free
// line the first time a filter leaves one of its allocations out (one relaxed
// compare-and-swap on `next_`, once in its life), keeps its number in its ThreadState
// (runtime/internal/thread_state.h), and from then on is that line's only writer, which
// it updates with a relaxed load and store (no locked instruction), as a ring's producer
// keeps its loss counters (transport/spsc_ring.h, Bump). A line is never handed out
// again: a thread that exits leaves its counts where they are, and Sum() reads them. When
// the lines are all taken, every later thread shares the last one, kSharedLine, and adds
// to it with relaxed fetch_add: still exact, slower only for a program that starts more
// than kLines - 1 threads that allocate below the filters.
//
//   lines_[0]  lines_[1]  ...  lines_[kLines - 2]  lines_[kSharedLine]
//   thread A   thread B        a thread            every later thread (fetch_add)
//
//   one line:  +------------------+------------------+-------------+-------------+
//              | allocations[min] | allocations[smp] | bytes[min]  | bytes[smp]  |  32 B used
//              +------------------+------------------+-------------+-------------+
//
// Thread safety: Count() from any thread, on its own ThreadState; it never takes a lock,
// never allocates and makes no system call. Sum() from any thread, at any time: it gives a
// recent total (a count made while it reads may or may not be in it). Reset() only while
// one thread runs (a forked child, before it traces).
//
// Memory ordering: all relaxed. The counts are statistics that publish nothing; the line
// numbers handed out by `next_` need only be distinct, which the read-modify-write gives.
// A count made by a signal handler that interrupted its own thread's Count() between the
// load and the store may be lost (as with the ring's counters); malloc in a signal
// handler is not async-signal-safe to begin with.
//
// Example:
//   constinit FilterCounts counts;
//   if (usable < min_size) counts.Count(runtime_internal::Tls(), Filter::kMinSize, n);
//   const FilterTotals t = counts.Sum();

#ifndef MEMTRACE_PRELOAD_FILTER_COUNTS_H_
#define MEMTRACE_PRELOAD_FILTER_COUNTS_H_

#include <atomic>
#include <cstdint>

#include "runtime/internal/thread_state.h"
#include "transport/cache_line.h"

namespace memtrace::preload_internal {

enum class Filter : uint32_t { kMinSize = 0, kSample = 1 };
inline constexpr uint32_t kFilterKinds = 2;

// What the filters left out, by filter (index: Filter).
struct FilterTotals {
  uint64_t allocations[kFilterKinds] = {};
  uint64_t bytes[kFilterKinds] = {};
};

class FilterCounts {
 public:
  static constexpr uint32_t kLines = 256;
  static constexpr uint32_t kSharedLine = kLines - 1;

  constexpr FilterCounts() = default;
  FilterCounts(const FilterCounts&) = delete;
  FilterCounts& operator=(const FilterCounts&) = delete;

  // One allocation of `bytes` (as asked for) that `filter` left out, made by the thread
  // whose state is `t`. Hot path: noexcept, no lock, no allocation, no system call.
  void Count(runtime_internal::ThreadState& t, Filter filter, uint64_t bytes) noexcept {
    uint32_t line = t.filter_line;
    if (__builtin_expect(line == 0, 0)) line = Claim(t);
    Line& l = lines_[line - 1];
    const auto f = static_cast<uint32_t>(filter);
    if (__builtin_expect(line - 1 != kSharedLine, 1)) {
      Bump(l.allocations[f], 1);
      Bump(l.bytes[f], bytes);
    } else {
      // Relaxed: a statistic; the read-modify-write keeps other threads' adds.
      l.allocations[f].fetch_add(1, std::memory_order_relaxed);
      l.bytes[f].fetch_add(bytes, std::memory_order_relaxed);
    }
  }

  // The totals over every line. Any thread.
  FilterTotals Sum() const noexcept {
    FilterTotals out;
    for (const Line& l : lines_) {
      for (uint32_t f = 0; f < kFilterKinds; ++f) {
        // Relaxed: monotonic statistics; a recent value is all a reader wants.
        out.allocations[f] += l.allocations[f].load(std::memory_order_relaxed);
        out.bytes[f] += l.bytes[f].load(std::memory_order_relaxed);
      }
    }
    return out;
  }

  // Zeroes every count: a forked child's capture counts from its own start. Lines stay
  // with the threads that claimed them (in the child only the forking thread is left).
  // Only while one thread runs.
  void Reset() noexcept {
    for (Line& l : lines_) {
      for (uint32_t f = 0; f < kFilterKinds; ++f) {
        // Relaxed: no other thread runs.
        l.allocations[f].store(0, std::memory_order_relaxed);
        l.bytes[f].store(0, std::memory_order_relaxed);
      }
    }
  }

 private:
  struct alignas(kCacheLineSize) Line {
    std::atomic<uint64_t> allocations[kFilterKinds] = {};
    std::atomic<uint64_t> bytes[kFilterKinds] = {};
  };
  static_assert(sizeof(Line) == kCacheLineSize,
                "each thread's counts own a cache line: no other thread writes it");

  // Hands the calling thread the next line (or the shared one) and remembers it in `t`.
  // Once per thread; not inlined into the hot path.
  __attribute__((noinline)) uint32_t Claim(runtime_internal::ThreadState& t) noexcept {
    // Relaxed: the line numbers need only be distinct (see the header comment).
    uint32_t next = next_.load(std::memory_order_relaxed);
    while (next < kSharedLine &&
           !next_.compare_exchange_weak(next, next + 1, std::memory_order_relaxed)) {
    }
    t.filter_line = (next < kSharedLine ? next : kSharedLine) + 1;
    return t.filter_line;
  }

  static void Bump(std::atomic<uint64_t>& counter, uint64_t by) noexcept {
    // Relaxed: a statistic with a single writer; readers want a recent value, not an order.
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  Line lines_[kLines];
  alignas(kCacheLineSize) std::atomic<uint32_t> next_{0};  // lines handed out
};

}  // namespace memtrace::preload_internal

#endif  // MEMTRACE_PRELOAD_FILTER_COUNTS_H_
