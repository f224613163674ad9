// Copyright 2026 The memtrace Authors.
//
// serializing_heap.h: a test backing allocator that records the real order of operations.
//
// Ground truth for the stress tests. Every operation takes one mutex, and while it holds it
// the heap both performs the operation and appends it to a log, so the log is the real
// sequential order in which blocks were handed out and given back. Replay() runs that log
// through a plain map and counters that share no code with memtrace, and the tests compare
// memtrace's ledger with the result.
//
// Addresses are numbers, not memory: blocks are carved from a fake address range in size
// classes of 16 bytes and reused LIFO, so addresses are reused heavily and across threads,
// the way small blocks are in malloc.
//
// Thread safety: every method is thread-safe.

#ifndef MEMTRACE_TESTS_SERIALIZING_HEAP_H_
#define MEMTRACE_TESTS_SERIALIZING_HEAP_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace memtrace::testing {

struct ReplayCounters {
  uint64_t live_bytes = 0;
  uint64_t live_count = 0;
  uint64_t high_water_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t allocated_count = 0;
  uint64_t freed_bytes = 0;
  uint64_t freed_count = 0;
};

struct ReplayBlock {
  uint64_t size;
  uint32_t scope;
  uint64_t site;
};

struct ReplayResult {
  std::map<uint64_t, ReplayBlock> live;  // address -> block
  ReplayCounters totals;
  std::map<uint32_t, ReplayCounters> scopes;
};

class SerializingHeap {
 public:
  static constexpr uint64_t kBase = 0x10000000;
  static constexpr uint64_t kClassBytes = 16;

  // Keeps room in the log for `expected_operations` up front. Every operation holds the
  // heap's one mutex, and a log that grows as it goes copies itself inside it now and
  // then, the last copies of a stress run's millions of entries taking seconds on a
  // loaded machine. A thread whose record claim spans a heap call (Recorder::BeginRemap
  // before Remap(), CommitRemap after) would wait that long with its claim open, longer
  // than the drainer waits for a record being written (Drainer::kClaimWait): counted as
  // a stalled claim and a late record, as the drainer must for a backing allocator that
  // stalls, and the capture would no longer be exact. Past the room kept the log grows
  // as before.
  explicit SerializingHeap(size_t expected_operations = 0) { log_.reserve(expected_operations); }

  // Returns a block of at least `size` bytes, logged with its scope and site.
  uint64_t Alloc(uint64_t size, uint32_t scope, uint64_t site);
  // Releases a block.
  void Free(uint64_t address);
  // Grows or shrinks in place if the block's size class allows; returns success.
  bool Resize(uint64_t address, uint64_t new_size);
  // Moves the block to a new one of new_size bytes (the old address is reusable at once).
  uint64_t Remap(uint64_t address, uint64_t new_size);

  // The sequential replay of every operation so far.
  ReplayResult Replay() const;
  size_t operations() const;

 private:
  enum class Op : uint8_t { kAlloc, kFree, kResize, kRemap };
  struct LogEntry {
    Op op;
    uint64_t address;
    uint64_t new_address;
    uint64_t size;
    uint32_t scope;
    uint64_t site;
  };

  uint64_t TakeBlockLocked(uint64_t size);
  static uint64_t ClassOf(uint64_t size) { return (size + kClassBytes - 1) / kClassBytes; }

  mutable std::mutex mu_;
  std::map<uint64_t, std::vector<uint64_t>> free_by_class_;  // class -> LIFO addresses
  std::map<uint64_t, uint64_t> class_of_block_;             // address -> class
  uint64_t next_address_ = kBase;
  std::vector<LogEntry> log_;
};

}  // namespace memtrace::testing

#endif  // MEMTRACE_TESTS_SERIALIZING_HEAP_H_
