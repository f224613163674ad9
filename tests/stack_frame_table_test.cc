// Copyright 2026 The memtrace Authors.
//
// StackFrameTable: the drainer's copy of each call stack's frames (stack_frame_table.h).
// The records are built here the way Recorder::SendStack lays them out (event.h), by a
// helper written for this test, so what the table returns is checked against frames the
// test chose, not against the recorder's own encoding.

#include "runtime/internal/stack_frame_table.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "transport/event.h"

namespace memtrace {
namespace {

// The kStackFrames records of one stack: two frames a record, the last one flagged.
std::vector<Event> StackRecords(uint64_t hash, const std::vector<uint64_t>& frames) {
  std::vector<Event> records;
  for (size_t first = 0; first < frames.size(); first += 2) {
    const bool two = first + 1 < frames.size();
    const bool last = first + 2 >= frames.size();
    const auto flags = static_cast<uint8_t>((two ? 2 : 1) | (last ? kStackLastRecord : 0));
    records.push_back(
        Event{hash, Event::PackKindSize(EventKind::kStackFrames, flags, frames[first]),
              two ? frames[first + 1] : 0, Event::PackScopeEpoch(0, 1)});
  }
  return records;
}

std::vector<uint64_t> Found(const StackFrameTable& table, uint64_t hash) {
  const absl::Span<const uint64_t> f = table.Find(hash);
  return std::vector<uint64_t>(f.begin(), f.end());
}

constexpr uint64_t kHashA = kStackHashBit | 0x1111;
constexpr uint64_t kHashB = kStackHashBit | 0x2222;
constexpr uint64_t kHashC = kStackHashBit | 0x3333;

TEST(StackFrameTableTest, KeepsEachStacksFramesInOrder) {
  StackFrameTable table(16);
  const std::vector<uint64_t> odd = {0x401000, 0x402000, 0x403000};
  const std::vector<uint64_t> even = {0x501000, 0x502000, 0x503000, 0x504000};
  const std::vector<uint64_t> one = {0x601000};
  for (const Event& e : StackRecords(kHashA, odd)) table.Add(0, e);
  for (const Event& e : StackRecords(kHashB, even)) table.Add(0, e);
  for (const Event& e : StackRecords(kHashC, one)) table.Add(0, e);
  EXPECT_EQ(Found(table, kHashA), odd);
  EXPECT_EQ(Found(table, kHashB), even);
  EXPECT_EQ(Found(table, kHashC), one);
  EXPECT_TRUE(table.Find(kStackHashBit | 0x4444).empty());
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(table.dropped(), 0u);
  EXPECT_GE(table.memory_bytes(), (3 + 4 + 1) * sizeof(uint64_t));
}

// Two rings' stacks whose records the drainer applies interleaved (a slice may end inside
// one ring's stack while another ring's is applied): each ring's frames stay its own.
TEST(StackFrameTableTest, StacksOfTwoRingsInterleavedStayApart) {
  StackFrameTable table(16);
  const std::vector<uint64_t> a = {1, 2, 3, 4, 5, 6, 7};
  const std::vector<uint64_t> b = {11, 12, 13, 14, 15};
  const std::vector<Event> ra = StackRecords(kHashA, a);
  const std::vector<Event> rb = StackRecords(kHashB, b);
  for (size_t i = 0; i < std::max(ra.size(), rb.size()); ++i) {
    if (i < rb.size()) table.Add(7, rb[i]);
    if (i < ra.size()) table.Add(3, ra[i]);
  }
  EXPECT_EQ(Found(table, kHashA), a);
  EXPECT_EQ(Found(table, kHashB), b);
  // Records of other kinds are not frames.
  table.Add(3, Event{0x1000, Event::PackKindSize(EventKind::kAlloc, 0, 64), kHashA, 0});
  EXPECT_EQ(table.size(), 2u);
}

// A stack sent again (another thread's first use of it) keeps the frames it had.
TEST(StackFrameTableTest, AStackSentAgainKeepsItsFirstFrames) {
  StackFrameTable table(16);
  const std::vector<uint64_t> first = {0x10, 0x20};
  for (const Event& e : StackRecords(kHashA, first)) table.Add(0, e);
  for (const Event& e : StackRecords(kHashA, {0x10, 0x20})) table.Add(1, e);
  for (const Event& e : StackRecords(kHashA, {0x99})) table.Add(1, e);
  EXPECT_EQ(Found(table, kHashA), first);
  EXPECT_EQ(table.size(), 1u);
}

// Past its capacity the table keeps no more stacks and counts each it did not keep; a
// later stack of the same ring is not mixed with the frames of the dropped one.
TEST(StackFrameTableTest, PastItsCapacityItCountsTheStacksItDoesNotKeep) {
  StackFrameTable table(2);
  for (const Event& e : StackRecords(kHashA, {1, 2, 3})) table.Add(0, e);
  for (const Event& e : StackRecords(kHashB, {4, 5})) table.Add(0, e);
  for (const Event& e : StackRecords(kHashC, {6, 7, 8})) table.Add(0, e);
  for (const Event& e : StackRecords(kStackHashBit | 0x5555, {9})) table.Add(0, e);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.dropped(), 2u);
  EXPECT_TRUE(table.Find(kHashC).empty());
  EXPECT_EQ(Found(table, kHashA), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(Found(table, kHashB), (std::vector<uint64_t>{4, 5}));
}

}  // namespace
}  // namespace memtrace
