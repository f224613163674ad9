// Copyright 2026 The memtrace Authors.

#include "runtime/internal/stack_frame_table.h"

#include <cstdint>

namespace memtrace {

void StackFrameTable::Add(uint32_t ring, const Event& e) {
  if (e.kind() != EventKind::kStackFrames) return;
  std::vector<uint64_t>& partial = partial_[ring];
  if (!AppendStackFrames(e, &partial)) return;
  const uint64_t hash = e.word0;
  if (!stacks_.contains(hash)) {
    if (stacks_.size() >= capacity_ || frames_.size() + partial.size() > UINT32_MAX) {
      ++dropped_;
    } else {
      stacks_.emplace(hash, Stack{static_cast<uint32_t>(frames_.size()),
                                  static_cast<uint32_t>(partial.size())});
      frames_.insert(frames_.end(), partial.begin(), partial.end());
    }
  }
  partial.clear();
}

absl::Span<const uint64_t> StackFrameTable::Find(uint64_t hash) const {
  auto it = stacks_.find(hash);
  if (it == stacks_.end()) return {};
  return absl::Span<const uint64_t>(frames_.data() + it->second.at, it->second.count);
}

size_t StackFrameTable::memory_bytes() const {
  size_t bytes = frames_.capacity() * sizeof(uint64_t) +
                 stacks_.capacity() * (sizeof(uint64_t) + sizeof(Stack) + 1) +
                 partial_.capacity() * (sizeof(uint32_t) + sizeof(std::vector<uint64_t>) + 1);
  for (const auto& [ring, frames] : partial_) bytes += frames.capacity() * sizeof(uint64_t);
  return bytes;
}

}  // namespace memtrace
