// Copyright 2026 The memtrace Authors.

#include "preload/mappings.h"

#include <iterator>

namespace memtrace::preload_internal {

void MappingTable::Map(uint64_t start, uint64_t length, uint64_t site,
                       std::vector<MappingOp>* ops) {
  const uint64_t mapped = Round(length);
  if (mapped == 0) return;
  Unmap(start, mapped, ops);
  ranges_[start] = Range{start + mapped, site};
  ops->push_back(MappingOp{MappingOp::Kind::kAlloc, start, mapped, site});
}

void MappingTable::Unmap(uint64_t start, uint64_t length, std::vector<MappingOp>* ops) {
  const uint64_t end = start + Round(length);
  if (end <= start) return;
  // The first range that may overlap: the last one starting at or before `start`, if it
  // reaches past it, else the first starting after it.
  auto it = ranges_.upper_bound(start);
  if (it != ranges_.begin()) {
    auto before = std::prev(it);
    if (before->second.end > start) it = before;
  }
  while (it != ranges_.end() && it->first < end) {
    const uint64_t r_start = it->first;
    const Range r = it->second;
    if (r_start < start) {
      // The range keeps its front: the block shrinks in place.
      ops->push_back(MappingOp{MappingOp::Kind::kResize, r_start, start - r_start, 0});
      it->second.end = start;
      ++it;
      if (r.end > end) {
        // A hole in the middle: the part after it is a block of its own.
        ops->push_back(MappingOp{MappingOp::Kind::kAlloc, end, r.end - end, r.site});
        it = ranges_.emplace_hint(it, end, Range{r.end, r.site});
        ++it;
      }
      continue;
    }
    // The range starts inside [start, end): its block goes; a tail past `end` stays.
    ops->push_back(MappingOp{MappingOp::Kind::kFree, r_start, 0, 0});
    it = ranges_.erase(it);
    if (r.end > end) {
      ops->push_back(MappingOp{MappingOp::Kind::kAlloc, end, r.end - end, r.site});
      it = ranges_.emplace_hint(it, end, Range{r.end, r.site});
      ++it;
    }
  }
}

std::vector<MappingTable::Entry> MappingTable::Overlapping(uint64_t start,
                                                          uint64_t length) const {
  std::vector<Entry> out;
  const uint64_t end = start + Round(length);
  auto it = ranges_.upper_bound(start);
  if (it != ranges_.begin() && std::prev(it)->second.end > start) --it;
  for (; it != ranges_.end() && it->first < end; ++it) {
    out.push_back(Entry{it->first, it->second.end, it->second.site});
  }
  return out;
}

bool MappingTable::Contains(uint64_t address) const {
  auto it = ranges_.upper_bound(address);
  return it != ranges_.begin() && std::prev(it)->second.end > address;
}

bool MappingTable::Exact(uint64_t start, uint64_t length, uint64_t* site) const {
  const auto it = ranges_.find(start);
  if (it == ranges_.end() || it->second.end != start + Round(length)) return false;
  *site = it->second.site;
  return true;
}

void MappingTable::Moved(uint64_t old_start, uint64_t new_start, uint64_t new_length,
                         std::vector<MappingOp>* ops) {
  const auto it = ranges_.find(old_start);
  if (it == ranges_.end()) return;
  const uint64_t site = it->second.site;
  ranges_.erase(it);
  Unmap(new_start, new_length, ops);  // what MREMAP_FIXED replaced, if anything
  ranges_[new_start] = Range{new_start + Round(new_length), site};
}

}  // namespace memtrace::preload_internal
