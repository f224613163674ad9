// Copyright 2026 The memtrace Authors.

#include "tests/serializing_heap.h"

#include <stdexcept>

namespace memtrace::testing {
namespace {

void CountAllocate(ReplayCounters& c, uint64_t bytes) {
  c.allocated_bytes += bytes;
  ++c.allocated_count;
  c.live_bytes += bytes;
  ++c.live_count;
  if (c.live_bytes > c.high_water_bytes) c.high_water_bytes = c.live_bytes;
}

void CountRelease(ReplayCounters& c, uint64_t bytes) {
  c.freed_bytes += bytes;
  ++c.freed_count;
  c.live_bytes -= bytes;
  --c.live_count;
}

void CountResize(ReplayCounters& c, uint64_t from, uint64_t to) {
  if (to >= from) {
    c.allocated_bytes += to - from;
    c.live_bytes += to - from;
    if (c.live_bytes > c.high_water_bytes) c.high_water_bytes = c.live_bytes;
  } else {
    c.freed_bytes += from - to;
    c.live_bytes -= from - to;
  }
}

}  // namespace

uint64_t SerializingHeap::TakeBlockLocked(uint64_t size) {
  const uint64_t cls = ClassOf(size == 0 ? 1 : size);
  auto& list = free_by_class_[cls];
  uint64_t address;
  if (!list.empty()) {
    address = list.back();
    list.pop_back();
  } else {
    address = next_address_;
    next_address_ += cls * kClassBytes;
  }
  class_of_block_[address] = cls;
  return address;
}

uint64_t SerializingHeap::Alloc(uint64_t size, uint32_t scope, uint64_t site) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t address = TakeBlockLocked(size);
  log_.push_back(LogEntry{Op::kAlloc, address, 0, size, scope, site});
  return address;
}

void SerializingHeap::Free(uint64_t address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = class_of_block_.find(address);
  if (it == class_of_block_.end()) throw std::logic_error("test heap: free of a free block");
  free_by_class_[it->second].push_back(address);
  class_of_block_.erase(it);
  log_.push_back(LogEntry{Op::kFree, address, 0, 0, 0, 0});
}

bool SerializingHeap::Resize(uint64_t address, uint64_t new_size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = class_of_block_.find(address);
  if (it == class_of_block_.end()) throw std::logic_error("test heap: resize of free block");
  if (ClassOf(new_size == 0 ? 1 : new_size) > it->second) return false;
  log_.push_back(LogEntry{Op::kResize, address, 0, new_size, 0, 0});
  return true;
}

uint64_t SerializingHeap::Remap(uint64_t address, uint64_t new_size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = class_of_block_.find(address);
  if (it == class_of_block_.end()) throw std::logic_error("test heap: remap of free block");
  const uint64_t cls = it->second;
  const uint64_t moved = TakeBlockLocked(new_size);
  free_by_class_[cls].push_back(address);
  class_of_block_.erase(address);
  log_.push_back(LogEntry{Op::kRemap, address, moved, new_size, 0, 0});
  return moved;
}

size_t SerializingHeap::operations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_.size();
}

ReplayResult SerializingHeap::Replay() const {
  std::lock_guard<std::mutex> lock(mu_);
  ReplayResult r;
  for (const LogEntry& e : log_) {
    switch (e.op) {
      case Op::kAlloc:
        r.live[e.address] = ReplayBlock{e.size, e.scope, e.site};
        CountAllocate(r.totals, e.size);
        CountAllocate(r.scopes[e.scope], e.size);
        break;
      case Op::kFree: {
        const ReplayBlock b = r.live.at(e.address);
        r.live.erase(e.address);
        CountRelease(r.totals, b.size);
        CountRelease(r.scopes[b.scope], b.size);
        break;
      }
      case Op::kResize: {
        ReplayBlock& b = r.live.at(e.address);
        CountResize(r.totals, b.size, e.size);
        CountResize(r.scopes[b.scope], b.size, e.size);
        b.size = e.size;
        break;
      }
      case Op::kRemap: {
        const ReplayBlock b = r.live.at(e.address);
        r.live.erase(e.address);
        CountRelease(r.totals, b.size);
        CountRelease(r.scopes[b.scope], b.size);
        r.live[e.new_address] = ReplayBlock{e.size, b.scope, b.site};
        CountAllocate(r.totals, e.size);
        CountAllocate(r.scopes[b.scope], e.size);
        break;
      }
    }
  }
  return r;
}

}  // namespace memtrace::testing
