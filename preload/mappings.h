// Copyright 2026 The memtrace Authors.
//
// mappings.h: the program's anonymous memory mappings, as the interposer's optional mmap
// layer records them (MEMTRACE_MMAP=1, preload_config.h).
//
// Mapping calls change address ranges, not blocks. munmap() may cut a hole in a mapping
// or remove several at once; mmap(MAP_FIXED) replaces whatever it overlaps; mremap() may
// grow, shrink or move one, or part of one. The ledger knows blocks by their start
// address, so this table keeps the ranges and turns each change into block operations:
//   - a mapping covered entirely goes away:              kFree(start)
//   - a mapping that loses its end (or a middle hole):   kResize(start, new size)
//   - the part after a hole or after a cut at the front: kAlloc(piece start, size, site)
//     (a new block: it keeps the mapping's call site; its scope is the one in force
//     when the cut was made)
//   - a new mapping:                                     kAlloc(start, size, site)
// Applied in order to a map of blocks, the operations leave exactly one block per
// mapped range (mappings_test checks this against a page-by-page model).
//
// Sizes are what the kernel maps: lengths rounded up to whole pages.
//
// Thread safety: none; the interposer holds a mutex around each call (mapping calls are
// system calls anyway, and rare next to malloc).

#ifndef MEMTRACE_PRELOAD_MAPPINGS_H_
#define MEMTRACE_PRELOAD_MAPPINGS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace memtrace::preload_internal {

struct MappingOp {
  enum class Kind : uint8_t { kAlloc, kResize, kFree };
  Kind kind;
  uint64_t address;  // the block's start
  uint64_t size;     // kAlloc, kResize: the block's (new) size
  uint64_t site;     // kAlloc: the call site word of the mapping it came from
  friend bool operator==(const MappingOp&, const MappingOp&) = default;
};

class MappingTable {
 public:
  explicit MappingTable(uint64_t page_size) : page_size_(page_size) {}

  // [start, start + length) is newly mapped at `site`, replacing any part of a known
  // mapping it overlaps (MAP_FIXED). Appends the operations.
  void Map(uint64_t start, uint64_t length, uint64_t site, std::vector<MappingOp>* ops);

  // [start, start + length) is no longer mapped. Parts of it that hold no known mapping
  // (file mappings, mappings made before tracing started) are ignored.
  void Unmap(uint64_t start, uint64_t length, std::vector<MappingOp>* ops);

  // The known mappings that overlap [start, start + length), whole (for putting them
  // back with Map() when the call that was to change them fails).
  struct Entry {
    uint64_t start;
    uint64_t end;
    uint64_t site;
  };
  std::vector<Entry> Overlapping(uint64_t start, uint64_t length) const;

  // Whether `address` lies in a known mapping.
  bool Contains(uint64_t address) const;

  // The call site of the known mapping that is exactly [start, start + length), or
  // false: what a whole-mapping mremap() can move as one block.
  bool Exact(uint64_t start, uint64_t length, uint64_t* site) const;

  // A whole mapping, Exact(), was resized in place or moved by mremap(): the table
  // follows. The caller records the block operation itself (a resize or a remap); any
  // known mapping the new range replaced (MREMAP_FIXED) yields operations here, before
  // the caller's.
  void Moved(uint64_t old_start, uint64_t new_start, uint64_t new_length,
             std::vector<MappingOp>* ops);

  // The mapped range of a length: rounded up to whole pages.
  uint64_t Round(uint64_t length) const {
    return (length + page_size_ - 1) / page_size_ * page_size_;
  }

  size_t size() const { return ranges_.size(); }

 private:
  struct Range {
    uint64_t end;
    uint64_t site;
  };
  const uint64_t page_size_;
  std::map<uint64_t, Range> ranges_;  // by start; never overlapping
};

}  // namespace memtrace::preload_internal

#endif  // MEMTRACE_PRELOAD_MAPPINGS_H_
