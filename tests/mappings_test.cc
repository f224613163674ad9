// Copyright 2026 The memtrace Authors.
//
// MappingTable (preload/mappings.h) against a page-by-page model: random maps, unmaps
// (holes, fronts, tails, spans of several mappings) and whole-mapping moves, with the
// block operations applied to a map of blocks the way the ledger applies them. After
// every call the blocks must cover exactly the pages the model has mapped, one block per
// run of pages from one mapping, and each page's call site must be the site of the call
// that mapped it. The model is computed without the table.

#include "preload/mappings.h"

#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

#include "gtest/gtest.h"

namespace memtrace::preload_internal {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kBase = 0x7f0000000000;
constexpr int kPages = 64;

struct Block {
  uint64_t size;
  uint64_t site;
};

// Applies operations as the ledger would; fails the test on a release or resize of a
// block that is not there, or an allocation over a live one.
void Apply(const std::vector<MappingOp>& ops, std::map<uint64_t, Block>* blocks) {
  for (const MappingOp& op : ops) {
    switch (op.kind) {
      case MappingOp::Kind::kAlloc:
        ASSERT_EQ(blocks->count(op.address), 0u) << "allocation over a live block";
        ASSERT_GT(op.size, 0u);
        (*blocks)[op.address] = Block{op.size, op.site};
        break;
      case MappingOp::Kind::kResize: {
        auto it = blocks->find(op.address);
        ASSERT_NE(it, blocks->end()) << "resize of no block";
        ASSERT_GT(op.size, 0u);
        it->second.size = op.size;
        break;
      }
      case MappingOp::Kind::kFree:
        ASSERT_EQ(blocks->erase(op.address), 1u) << "release of no block";
        break;
    }
  }
}

// The model: which pages are mapped, and the site of the call that mapped each. Every
// call maps with a site of its own, so a block that wrongly spanned two mappings, or
// the two sides of a hole, shows up as a page with the wrong site or an unmapped page.
struct Model {
  bool mapped[kPages] = {};
  uint64_t site[kPages] = {};
};

void Check(const Model& m, const std::map<uint64_t, Block>& blocks, int step) {
  uint64_t covered = 0;
  uint64_t previous_end = 0;
  for (const auto& [address, b] : blocks) {
    ASSERT_GE(address, previous_end) << "overlapping blocks at step " << step;
    previous_end = address + b.size;
    ASSERT_EQ((address - kBase) % kPage, 0u);
    ASSERT_EQ(b.size % kPage, 0u);
    const int first = static_cast<int>((address - kBase) / kPage);
    const int count = static_cast<int>(b.size / kPage);
    ASSERT_LE(first + count, kPages);
    for (int p = first; p < first + count; ++p) {
      ASSERT_TRUE(m.mapped[p]) << "a block covers unmapped page " << p << ", step " << step;
      ASSERT_EQ(m.site[p], b.site) << "page " << p << " has the wrong site, step " << step;
    }
    covered += static_cast<uint64_t>(count);
  }
  uint64_t mapped = 0;
  for (int p = 0; p < kPages; ++p) mapped += m.mapped[p];
  ASSERT_EQ(covered, mapped) << "mapped pages without a block, step " << step;
}

TEST(MappingTableTest, RandomCallsMatchAPageModel) {
  MappingTable table(kPage);
  std::map<uint64_t, Block> blocks;
  Model model;
  uint32_t seed = 12345;
  auto next = [&](uint32_t n) {
    seed ^= seed << 13;
    seed ^= seed >> 17;
    seed ^= seed << 5;
    return seed % n;
  };
  uint64_t calls = 0;
  int moves = 0, holes = 0;
  for (int step = 0; step < 20000; ++step) {
    const int first = static_cast<int>(next(kPages));
    const int count = 1 + static_cast<int>(next(static_cast<uint32_t>(kPages - first)));
    const uint64_t start = kBase + static_cast<uint64_t>(first) * kPage;
    // Lengths that are not whole pages are rounded up, as the kernel does.
    const uint64_t length = static_cast<uint64_t>(count) * kPage - next(kPage);
    std::vector<MappingOp> ops;
    const uint32_t what = next(10);
    if (what < 4) {  // mmap(MAP_FIXED), or a fresh mapping
      const uint64_t site = 0x401000 + 16 * ++calls;
      table.Map(start, length, site, &ops);
      for (int p = first; p < first + count; ++p) {
        model.mapped[p] = true;
        model.site[p] = site;
      }
    } else if (what < 8) {  // munmap
      if (first > 0 && model.mapped[first - 1] && first + count < kPages &&
          model.mapped[first + count] && model.site[first - 1] == model.site[first + count]) {
        ++holes;
      }
      table.Unmap(start, length, &ops);
      for (int p = first; p < first + count; ++p) model.mapped[p] = false;
    } else {  // mremap of a whole mapping: in place, or to a range with nothing mapped
      if (blocks.empty()) continue;
      // A block the operations so far made: the table must know it as one mapping.
      auto pick = blocks.begin();
      std::advance(pick, next(static_cast<uint32_t>(blocks.size())));
      const uint64_t old_start = pick->first;
      const int old_first = static_cast<int>((old_start - kBase) / kPage);
      const int old_count = static_cast<int>(pick->second.size / kPage);
      uint64_t site = 0;
      ASSERT_TRUE(table.Exact(old_start, pick->second.size - next(kPage), &site));
      ASSERT_EQ(site, pick->second.site);
      const int new_count = 1 + static_cast<int>(next(8));
      const int target = next(2) == 0 ? old_first : static_cast<int>(next(kPages));
      if (target + new_count > kPages) continue;
      bool free_range = true;
      for (int p = target; p < target + new_count; ++p) {
        const bool own = p >= old_first && p < old_first + old_count;
        if (model.mapped[p] && !own) free_range = false;
      }
      if (!free_range) continue;
      for (int p = old_first; p < old_first + old_count; ++p) model.mapped[p] = false;
      const uint64_t new_start = kBase + static_cast<uint64_t>(target) * kPage;
      const uint64_t new_length = static_cast<uint64_t>(new_count) * kPage;
      table.Moved(old_start, new_start, new_length, &ops);
      ASSERT_TRUE(ops.empty()) << "nothing was replaced";
      // The caller's own operation: a resize in place or a move.
      if (new_start == old_start) {
        ops.push_back(MappingOp{MappingOp::Kind::kResize, old_start, new_length, 0});
      } else {
        ops.push_back(MappingOp{MappingOp::Kind::kFree, old_start, 0, 0});
        ops.push_back(MappingOp{MappingOp::Kind::kAlloc, new_start, new_length, site});
      }
      for (int p = target; p < target + new_count; ++p) {
        model.mapped[p] = true;
        model.site[p] = site;
      }
      ++moves;
    }
    Apply(ops, &blocks);
    if (HasFatalFailure()) return;
    Check(model, blocks, step);
    if (HasFatalFailure()) return;
  }
  // The run exercised what it is for.
  EXPECT_GT(moves, 100);
  EXPECT_GT(holes, 100);
}

TEST(MappingTableTest, AHoleSplitsAMappingIntoTwoBlocks) {
  MappingTable table(kPage);
  std::vector<MappingOp> ops;
  table.Map(kBase, 10 * kPage, 0x401000, &ops);
  ops.clear();
  table.Unmap(kBase + 3 * kPage, 2 * kPage, &ops);
  const std::vector<MappingOp> expected = {
      {MappingOp::Kind::kResize, kBase, 3 * kPage, 0},
      {MappingOp::Kind::kAlloc, kBase + 5 * kPage, 5 * kPage, 0x401000},
  };
  EXPECT_EQ(ops, expected);
  EXPECT_EQ(table.size(), 2u);
  uint64_t site = 0;
  EXPECT_TRUE(table.Exact(kBase + 5 * kPage, 5 * kPage, &site));
  EXPECT_EQ(site, 0x401000u);
}

TEST(MappingTableTest, UnknownRangesAreIgnored) {
  MappingTable table(kPage);
  std::vector<MappingOp> ops;
  table.Unmap(kBase, 100 * kPage, &ops);  // a file mapping, or one made before tracing
  EXPECT_TRUE(ops.empty());
  table.Map(kBase, kPage - 100, 0x401000, &ops);  // rounded up to one page
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].size, kPage);
}

}  // namespace
}  // namespace memtrace::preload_internal
