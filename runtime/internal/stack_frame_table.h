// Copyright 2026 The memtrace Authors.
//
// stack_frame_table.h: the frames of the call stacks a recorder saw, by the stack's hash.
//
// A call stack reaches the drainer as kStackFrames records (transport/event.h) ahead of
// the allocations whose site word is its hash. The sinks keep the frames for the capture;
// the ledger keeps only the hash. A process that forks and traces its children
// (Config::keep_stack_frames, set by the interposer under MEMTRACE_TRACE_FORKS=1) needs
// them in the drainer as well: the forked child's capture begins with the blocks it
// inherited, and it can name their stacks only from the drainer's copy, the one state
// that is whole in the child (the parent's drainer is held between rounds across the
// fork; its sink's writer is not).
//
// Each ring sends a stack's records together, but the drainer may apply them in two
// slices, so a ring's frames gather here until its stack's last record. A stack sent
// again (by another thread, or by one whose cache forgot it) keeps its first frames. At
// most `capacity` stacks are kept (Config::request_site_capacity_max, the bound on sites);
// later ones are counted in dropped() and not kept.
//
// Thread safety: none; the drainer owns it, and reads between its rounds see it whole.
//
// Example:
//   StackFrameTable table(1024);
//   table.Add(ring_id, record);                    // each kStackFrames record, in order
//   absl::Span<const uint64_t> frames = table.Find(site_hash);   // empty: not kept

#ifndef MEMTRACE_RUNTIME_INTERNAL_STACK_FRAME_TABLE_H_
#define MEMTRACE_RUNTIME_INTERNAL_STACK_FRAME_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "transport/event.h"

namespace memtrace {

class StackFrameTable {
 public:
  explicit StackFrameTable(uint32_t capacity) : capacity_(capacity) {}

  // A kStackFrames record of ring `ring`, in that ring's order. Records of other kinds
  // are ignored.
  void Add(uint32_t ring, const Event& e);

  // The frames of the stack whose hash is `hash` (innermost first), or an empty span
  // when none were kept. Valid until the next Add().
  absl::Span<const uint64_t> Find(uint64_t hash) const;

  // Stacks kept, and stacks not kept because the table held `capacity` already.
  size_t size() const noexcept { return stacks_.size(); }
  uint64_t dropped() const noexcept { return dropped_; }
  // Bytes of memory the table holds (frames, index, stacks in progress).
  size_t memory_bytes() const;

 private:
  struct Stack {
    uint32_t at;     // into frames_
    uint32_t count;
  };

  const uint32_t capacity_;
  absl::flat_hash_map<uint64_t, Stack> stacks_;
  std::vector<uint64_t> frames_;  // every kept stack's frames, one after another
  // Per ring: the frames of the stack whose records it is sending, until the last one.
  absl::flat_hash_map<uint32_t, std::vector<uint64_t>> partial_;
  uint64_t dropped_ = 0;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_STACK_FRAME_TABLE_H_
