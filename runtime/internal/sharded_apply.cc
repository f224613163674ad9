// Copyright 2026 The memtrace Authors.

#include "runtime/internal/sharded_apply.h"

#include <immintrin.h>

namespace memtrace {

ShardedApply::ShardedApply(int appliers, uint32_t site_capacity) {
  if (appliers < 1) appliers = 1;
  for (int i = 0; i < appliers; ++i) {
    appliers_.push_back(std::make_unique<Applier>(site_capacity));
    appliers_.back()->ledger.set_counting(false);  // Account() counts, in order
  }
  scopes_.resize(1);
  for (int i = 1; i < appliers; ++i) appliers_[i]->thread = std::thread([this, i] { Run(i); });
}

ShardedApply::~ShardedApply() {
  stopping_.store(true, std::memory_order_relaxed);
  // Release: pairs with Run()'s acquire load; the stop flag above is seen with it.
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& a : appliers_) {
    if (a->thread.joinable()) a->thread.join();
  }
}

void ShardedApply::Run(int index) {
  uint64_t seen = 0;
  for (;;) {
    generation_.wait(seen, std::memory_order_acquire);
    // Acquire: pairs with Apply()'s (and the destructor's) release increment, so the batch
    // and the results array it set up are visible here.
    const uint64_t now = generation_.load(std::memory_order_acquire);
    if (now == seen) continue;  // a spurious wake
    seen = now;
    if (stopping_.load(std::memory_order_relaxed)) return;
    ApplyOwn(index, now);
    // Release: pairs with Apply()'s acquire load of finished_; every result and release
    // this applier wrote for the batch happens-before the accounting reads them.
    finished_.fetch_add(1, std::memory_order_release);
    finished_.notify_one();
  }
}

void ShardedApply::Apply(const std::vector<ApplyRecord>& records, uint32_t moves) {
  if (moves > moves_size_) {
    // Fresh words read 0, which no batch number is.
    moves_size_ = moves + moves / 2;
    moves_ = std::make_unique<Move[]>(moves_size_);
  }
  batch_ = &records;
  for (auto& a : appliers_) {
    a->own.clear();
    a->results.clear();
    a->releases.clear();
  }
  // Each applier's records, by index, in one pass here: an applier then reads only its
  // own (reading every record in every applier cost more than applying half of them). An
  // arena reset is everyone's.
  const int k = static_cast<int>(appliers_.size());
  for (uint32_t i = 0; i < records.size(); ++i) {
    const ApplyRecord& r = records[i];
    if (r.kind == EventKind::kArenaReset) {
      for (auto& a : appliers_) a->own.push_back(i);
    } else {
      appliers_[k == 1 ? 0 : Owner(r.layer, r.address, k)]->own.push_back(i);
    }
  }
  const uint32_t helpers = static_cast<uint32_t>(appliers_.size() - 1);
  finished_.store(0, std::memory_order_relaxed);
  // Release: pairs with Run()'s acquire load (see the header comment).
  const uint64_t batch = generation_.fetch_add(1, std::memory_order_release) + 1;
  if (helpers > 0) generation_.notify_all();
  ApplyOwn(0, batch);
  if (helpers > 0) {
    for (uint32_t done = finished_.load(std::memory_order_acquire); done != helpers;
         done = finished_.load(std::memory_order_acquire)) {
      finished_.wait(done, std::memory_order_acquire);
    }
  }
  Account();
}

void ShardedApply::ApplyOwn(int index, uint64_t batch) {
  Applier& me = *appliers_[index];
  const std::vector<ApplyRecord>& records = *batch_;
  for (const uint32_t i : me.own) {
    const ApplyRecord& r = records[i];
    switch (r.kind) {
      case EventKind::kArenaReset:
        me.ledger.ResetLayer(r.layer, [&](const AllocationLedger::Released& b) {
          me.releases.push_back(Release{i, r.layer, b.block.scope, b.block.size});
        });
        break;
      case EventKind::kAlloc:
        me.ledger.Alloc(r.layer, r.address, r.size, r.ticket, r.scope, r.site);
        break;
      case EventKind::kFree: {
        AllocationLedger::Released b;
        const auto outcome = me.ledger.Free(r.layer, r.address, r.of, &b);
        me.results.push_back(Result{outcome, b.block.scope, b.block.size});
        break;
      }
      case EventKind::kResize: {
        AllocationLedger::Released b;
        const auto outcome = me.ledger.Resize(r.layer, r.address, r.of, r.size, r.ticket, &b);
        me.results.push_back(Result{outcome, b.block.scope, b.block.size});
        break;
      }
      case EventKind::kRemap: {
        Move& out = moves_[r.pair];
        me.ledger.MoveOut(r.layer, r.address, r.of, &out.moved);
        // Release: pairs with the target owner's acquire load below.
        out.ready.store(batch, std::memory_order_release);
        break;
      }
      case EventKind::kRemapTarget: {
        AllocationLedger::Moved moved;
        if (r.pair != ApplyRecord::kNoPair) {
          Move& first = moves_[r.pair];
          // Acquire: pairs with the release store of the first half's owner. The first half
          // is an earlier record, so its owner reaches it without waiting on this one.
          for (int spins = 0; first.ready.load(std::memory_order_acquire) != batch; ++spins) {
            // The owner may not be on a CPU (more appliers than cores): let it run.
            if (spins < 64) {
              _mm_pause();
            } else {
              std::this_thread::yield();
            }
          }
          moved = first.moved;
        }
        me.ledger.MoveIn(r.layer, moved, r.address, r.size, r.ticket, r.scope, r.site);
        break;
      }
      default:
        break;
    }
  }
  me.ledger.SettleDisplaced([&](const AllocationLedger::Released& b) {
    me.releases.push_back(Release{~0u, b.block.layer, b.block.scope, b.block.size});
  });
}

UsageCounters& ShardedApply::ScopeCounters(uint32_t scope) {
  if (scope >= scopes_.size()) scopes_.resize(size_t{scope} + 1);
  return scopes_[scope];
}

bool ShardedApply::Sole(LayerId layer, uint32_t scope) {
  if (__builtin_expect(sole_ && sole_named_ && layer == sole_layer_ && scope == sole_scope_, 1)) {
    return true;
  }
  if (!sole_) return false;
  if (!sole_named_) {
    sole_named_ = true;
    sole_layer_ = layer;
    sole_scope_ = scope;
    return true;
  }
  // Another pair: the sole pair's counters are the totals up to here.
  layers_[sole_layer_] = totals_;
  ScopeCounters(sole_scope_) = totals_;
  sole_ = false;
  return false;
}

void ShardedApply::Change(LayerId layer, uint32_t scope, int64_t delta) {
  auto apply = [delta](UsageCounters& c) {
    if (delta >= 0) {
      c.Allocate(static_cast<uint64_t>(delta));
    } else {
      c.Free(static_cast<uint64_t>(-delta));
    }
  };
  const bool sole = Sole(layer, scope);  // asked first: see Sole()
  apply(totals_);
  if (sole) return;
  apply(layers_[layer]);
  apply(ScopeCounters(scope));
}

void ShardedApply::ChangeResize(LayerId layer, uint32_t scope, uint64_t from, uint64_t to) {
  const bool sole = Sole(layer, scope);
  totals_.Resize(from, to);
  if (sole) return;
  layers_[layer].Resize(from, to);
  ScopeCounters(scope).Resize(from, to);
}

void ShardedApply::Account() {
  using Outcome = AllocationLedger::Outcome;
  const std::vector<ApplyRecord>& records = *batch_;
  const int k = static_cast<int>(appliers_.size());
  cursor_.assign(appliers_.size(), 0);
  result_cursor_.assign(appliers_.size(), 0);
  std::vector<size_t>& cursor = cursor_;
  auto released = [](Outcome o) { return o != Outcome::kUnknown && o != Outcome::kDoubleFree; };
  // The next result of the owner of `r` (a kFree or kResize): owners list theirs in order.
  auto result_of = [&](const ApplyRecord& r) -> const Result& {
    const int owner = k > 1 ? Owner(r.layer, r.address, k) : 0;
    return appliers_[owner]->results[result_cursor_[owner]++];
  };
  for (uint32_t i = 0; i < records.size(); ++i) {
    const ApplyRecord& r = records[i];
    switch (r.kind) {
      case EventKind::kAlloc:
        Change(r.layer, r.scope, static_cast<int64_t>(r.size));
        break;
      case EventKind::kFree: {
        const Result& out = result_of(r);
        if (released(out.outcome)) {
          Change(r.layer, out.scope, -static_cast<int64_t>(out.bytes));
        } else {
          ++unknown_;
        }
        break;
      }
      case EventKind::kResize: {
        const Result& out = result_of(r);
        if (out.outcome != Outcome::kUnknown) {
          ChangeResize(r.layer, out.scope, out.bytes, r.size);
        } else {
          ++unknown_;
        }
        break;
      }
      case EventKind::kRemap: {
        const Move& out = moves_[r.pair];
        if (out.moved.known) {
          Change(r.layer, out.moved.scope, -static_cast<int64_t>(out.moved.size));
        } else {
          ++unknown_;
        }
        break;
      }
      case EventKind::kRemapTarget: {
        const bool known = r.pair != ApplyRecord::kNoPair && moves_[r.pair].moved.known;
        Change(r.layer, known ? moves_[r.pair].moved.scope : r.scope,
               static_cast<int64_t>(r.size));
        break;
      }
      case EventKind::kArenaReset:
        for (size_t a = 0; a < appliers_.size(); ++a) {
          const std::vector<Release>& list = appliers_[a]->releases;
          for (size_t& c = cursor[a]; c < list.size() && list[c].record == i; ++c) {
            Change(list[c].layer, list[c].scope, -static_cast<int64_t>(list[c].bytes));
          }
        }
        break;
      default:
        break;
    }
  }
  // Blocks settled at the batch's end, after every record (as the drainer settles them).
  for (size_t a = 0; a < appliers_.size(); ++a) {
    const std::vector<Release>& list = appliers_[a]->releases;
    for (size_t c = cursor[a]; c < list.size(); ++c) {
      Change(list[c].layer, list[c].scope, -static_cast<int64_t>(list[c].bytes));
      ++missed_;
    }
  }
}

}  // namespace memtrace
