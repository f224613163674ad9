// Copyright 2026 The memtrace Authors.

#include "runtime/internal/sharded_apply.h"

#include <immintrin.h>

#include <algorithm>
#include <utility>

#include "runtime/internal/memtrace_thread.h"
#include "runtime/internal/thread_state.h"

namespace memtrace {
namespace {

// How many of its own records ahead an applier asks for the ledger slot of the next.
constexpr size_t kPrefetchAhead = 8;

}  // namespace

ShardedApply::ShardedApply(AllocationLedger* ledger, int appliers, const CpuList& cpus,
                           ThreadCpuTime* cpu, size_t solo_records)
    : ledger_(ledger), solo_records_(solo_records), cpus_(cpus), cpu_(cpu) {
  appliers = std::clamp(appliers, 1, AllocationLedger::kShards);
  for (int i = 0; i < appliers; ++i) appliers_.push_back(std::make_unique<Applier>());
  for (int s = 0; s < AllocationLedger::kShards; ++s) {
    owner_of_shard_[s] = s % appliers;
    appliers_[s % appliers]->shards |= AllocationLedger::ShardMask{1} << s;
  }
  records_.reserve(kBatchRecords + 1);
  StartThreads();
}

ShardedApply::~ShardedApply() {
  if (!abandoned_) StopThreads();
}

void ShardedApply::StartThreads() {
  if (threads_running_ || appliers_.size() == 1) return;
  // The generation the new threads start from: they wait for the next.
  const uint64_t start = generation_.load(std::memory_order_relaxed);
  for (size_t i = 1; i < appliers_.size(); ++i) {
    ThreadCpuTime* const cpu = cpu_ == nullptr ? nullptr : &cpu_[i - 1];
    try {
      appliers_[i]->thread = StartMemtraceThread(
          [this, i, start, cpu] { Run(static_cast<int>(i), start, cpu); });
    } catch (...) {
      // No thread to be had (resources, or the process's limits): the ones made are
      // ended, and the adding thread applies every batch alone.
      threads_running_ = true;
      StopThreads();
      return;
    }
  }
  threads_running_ = true;
}

void ShardedApply::StopThreads() {
  if (!threads_running_) return;
  stopping_.store(true, std::memory_order_relaxed);
  // Release: pairs with Run()'s acquire load; the stop flag above is seen with it.
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& a : appliers_) {
    if (a->thread.joinable()) a->thread.join();
  }
  stopping_.store(false, std::memory_order_relaxed);  // no thread is left to read it
  threads_running_ = false;
}

void ShardedApply::AbandonAfterFork() noexcept {
  // The objects name threads of the parent: neither joined nor destroyed (a joinable
  // std::thread's destructor terminates). Kept reachable, so no leak checker counts them.
  static std::vector<std::thread>* const abandoned = new std::vector<std::thread>;
  for (auto& a : appliers_) {
    if (a->thread.joinable()) {
      try {
        abandoned->push_back(std::move(a->thread));
      } catch (...) {
        new std::thread(std::move(a->thread));  // no room: let go of it all the same
      }
    }
  }
  abandoned_ = true;
  threads_running_ = false;
}

void ShardedApply::Run(int index, uint64_t seen, ThreadCpuTime* cpu) {
  runtime_internal::MarkInternalThread();
  PlaceMemtraceThread("memtrace-apply", cpus_);
  if (cpu != nullptr) cpu->Attach();
  for (;;) {
    generation_.wait(seen, std::memory_order_acquire);
    // Acquire: pairs with RunAll()'s (and the destructor's) release increment, so the
    // batch and the ledger's state are visible here.
    const uint64_t now = generation_.load(std::memory_order_acquire);
    if (now == seen) continue;  // a spurious wake
    seen = now;
    if (stopping_.load(std::memory_order_relaxed)) break;
    ApplyOwn(index, batch_number_);
    // Release: pairs with RunAll()'s acquire load of finished_; every result, release
    // and ledger change this applier made happens-before the accounting reads them.
    finished_.fetch_add(1, std::memory_order_release);
    finished_.notify_one();
  }
  if (cpu != nullptr) cpu->Detach();
}

void ShardedApply::RunAll() {
  // Each applier's records, by index, in one pass here: an applier then reads only its
  // own. An arena reset is everyone's.
  for (uint32_t i = 0; i < records_.size(); ++i) {
    const ApplyRecord& r = records_[i];
    if (r.op == ApplyRecord::Op::kReset) {
      for (auto& a : appliers_) a->own.push_back(i);
    } else {
      appliers_[Owner(r.address)]->own.push_back(i);
    }
  }
  const uint32_t helpers = static_cast<uint32_t>(appliers_.size() - 1);
  finished_.store(0, std::memory_order_relaxed);
  if (helpers > 0) {
    // Release: pairs with Run()'s acquire load (see the header comment).
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
  }
  ApplyOwn(0, batch_number_);
  if (helpers > 0) {
    for (uint32_t done = finished_.load(std::memory_order_acquire); done != helpers;
         done = finished_.load(std::memory_order_acquire)) {
      finished_.wait(done, std::memory_order_acquire);
    }
  }
}

bool ShardedApply::AddEvent(EventKind kind, LayerId layer, uint32_t scope, uint64_t address,
                            uint64_t size, uint64_t ticket, uint64_t of, uint64_t site,
                            bool sole, PendingMove* move) {
  using Op = ApplyRecord::Op;
  ApplyRecord r;
  r.layer = layer;
  r.sole = sole;
  r.address = address;
  r.ticket = ticket;
  r.of = of;
  bool in_order = true;
  switch (kind) {
    case EventKind::kAlloc:
      r.op = Op::kAlloc;
      r.size = size;
      r.scope = scope;
      r.context = ledger_->ContextOf(scope, site);
      Add(r);
      break;
    case EventKind::kFree:
      r.op = Op::kFree;
      Add(r);
      break;
    case EventKind::kResize:
      r.op = Op::kResize;
      r.size = size;
      Add(r);
      break;
    case EventKind::kRemap:
      move->slot = AddMoveOut(r);
      move->batch = batch_number_;
      move->moving = true;
      break;
    case EventKind::kRemapTarget:
      r.op = Op::kMoveIn;
      r.size = size;
      r.scope = scope;
      if (move->moving && move->batch == batch_number_) {
        // The first half is in this batch: what it finds is known once it is applied.
        r.pair = move->slot;
        r.site = site;
        r.context = ledger_->ProvisionalContext(scope);
      } else {
        if (!move->moving) {
          in_order = false;
          move->moved = AllocationLedger::Moved{};
        }
        // The first half was applied with an earlier batch (Collect).
        if (move->moved.known) {
          r.scope = move->moved.scope;
          r.context = move->moved.context;
        } else {
          r.context = ledger_->ContextOf(scope, site);
        }
      }
      move->moving = false;
      Add(r);
      break;
    case EventKind::kArenaReset:
      r.op = Op::kReset;
      Add(r);
      break;
    default:
      break;
  }
  return in_order;
}

void ShardedApply::Apply() {
  if (moves_added_ > moves_size_) {
    moves_size_ = moves_added_ + moves_added_ / 2;
    moves_ = std::make_unique<Move[]>(moves_size_);  // fresh words read 0: no batch
  }
  if (!records_.empty()) {
    ledger_->set_counting(false);  // Account() counts, in order
    if (records_.size() <= solo_records_ || !threads_running_) {
      ApplySolo(batch_number_);
    } else {
      RunAll();
    }
    ledger_->set_counting(true);
  }
  Account();
  records_.clear();
  markers_.clear();
  moves_added_ = 0;
  for (auto& a : appliers_) {
    a->own.clear();
    a->results.clear();
    a->releases.clear();
  }
  ++batch_number_;
}

void ShardedApply::ApplyOwn(int index, uint64_t batch) {
  Applier& me = *appliers_[index];
  const std::vector<uint32_t>& own = me.own;
  for (size_t k = 0; k < own.size(); ++k) {
    // The ledger's lookups miss the caches once its tables outgrow them. (An arena reset
    // is every applier's, and its address names nobody's table: another may be growing
    // the one it would read.)
    if (k + kPrefetchAhead < own.size()) {
      const ApplyRecord& ahead = records_[own[k + kPrefetchAhead]];
      if (ahead.op != ApplyRecord::Op::kReset) ledger_->Prefetch(ahead.layer, ahead.address);
    }
    ApplyOne(me, own[k], batch);
  }
}

void ShardedApply::ApplySolo(uint64_t batch) {
  const uint32_t n = static_cast<uint32_t>(records_.size());
  for (uint32_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) {
      const ApplyRecord& ahead = records_[i + kPrefetchAhead];
      ledger_->Prefetch(ahead.layer, ahead.address);
    }
    const ApplyRecord& r = records_[i];
    if (r.op == ApplyRecord::Op::kReset) {
      for (auto& a : appliers_) ApplyOne(*a, i, batch);
    } else {
      ApplyOne(*appliers_[Owner(r.address)], i, batch);
    }
  }
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void ShardedApply::ApplyOne(Applier& me, uint32_t i,
                                                                uint64_t batch) {
  using Op = ApplyRecord::Op;
  AllocationLedger& ledger = *ledger_;
  const ApplyRecord& r = records_[i];
  switch (r.op) {
    case Op::kReset:
      ledger.ResetLayer(r.layer, me.shards, [&](const AllocationLedger::Released& b) {
        me.releases.push_back(Release{i, r.layer, b.block.scope, b.block.size});
      });
      break;
    case Op::kAlloc:
      ledger.Place(r.layer, r.address, r.size, r.ticket, r.context);
      break;
    case Op::kFree: {
      Result& out = me.results.emplace_back();
      out.outcome = ledger.Free(r.layer, r.address, r.of, &out.scope, &out.bytes);
      break;
    }
    case Op::kResize: {
      AllocationLedger::Released b;
      const LedgerOutcome outcome = ledger.Resize(r.layer, r.address, r.of, r.size, r.ticket, &b);
      me.results.push_back(Result{outcome, b.block.scope, b.block.size});
      break;
    }
    case Op::kMoveOut: {
      Move& out = moves_[r.pair];
      out.outcome = ledger.MoveOut(r.layer, r.address, r.of, &out.moved);
      // Release: pairs with the target owner's acquire load below.
      out.ready.store(batch, std::memory_order_release);
      break;
    }
    case Op::kMoveIn: {
      uint32_t context = r.context;
      if (r.pair != ApplyRecord::kNoPair) {
        const Move& first = moves_[r.pair];
        // Acquire: pairs with the release store of the first half's owner. The first half
        // is an earlier record, so its owner reaches it without waiting on this one (and
        // ApplySolo() has applied it already).
        for (int spins = 0; first.ready.load(std::memory_order_acquire) != batch; ++spins) {
          // The owner may not be on a CPU (more appliers than cores): let it run.
          if (spins < 64) {
            _mm_pause();
          } else {
            std::this_thread::yield();
          }
        }
        if (first.moved.known) context = first.moved.context;
      }
      ledger.Place(r.layer, r.address, r.size, r.ticket, context);
      break;
    }
  }
}

void ShardedApply::Account() {
  using Op = ApplyRecord::Op;
  AllocationLedger& ledger = *ledger_;
  PeakTracker* const tracker = ledger.tracker_;
  cursor_.assign(appliers_.size(), 0);
  result_cursor_.assign(appliers_.size(), 0);
  size_t next_marker = 0;
  auto markers_before = [&](size_t i) {
    for (; next_marker < markers_.size() && markers_[next_marker].before <= i; ++next_marker) {
      const Marker& m = markers_[next_marker];
      if (tracker == nullptr) continue;
      if (m.begin) {
        tracker->Begin(m.open, m.ring, m.segment, m.lo, m.hi);
      } else {
        tracker->Use(m.open);
      }
    }
  };
  auto released = [](LedgerOutcome o) {
    return o != LedgerOutcome::kUnknown && o != LedgerOutcome::kDoubleFree;
  };
  // The next result of the owner of `r` (a kFree or kResize): owners list theirs in order.
  auto result_of = [&](const ApplyRecord& r) -> const Result& {
    const int owner = Owner(r.address);
    return appliers_[owner]->results[result_cursor_[owner]++];
  };
  for (uint32_t i = 0; i < records_.size(); ++i) {
    if (next_marker < markers_.size()) markers_before(i);
    const ApplyRecord& r = records_[i];
    switch (r.op) {
      case Op::kAlloc:
        ledger.CountChange(r.layer, r.scope, r.size, /*allocate=*/true);
        break;
      case Op::kFree: {
        const Result& out = result_of(r);
        if (released(out.outcome)) {
          ledger.CountChange(r.layer, out.scope, out.bytes, /*allocate=*/false);
        }
        CountOutcome(out.outcome, r.sole, &outcomes_.unknown_frees, &outcomes_);
        break;
      }
      case Op::kResize: {
        const Result& out = result_of(r);
        if (out.outcome != LedgerOutcome::kUnknown) {
          ledger.CountResize(r.layer, out.scope, out.bytes, r.size);
        }
        CountOutcome(out.outcome, r.sole, &outcomes_.unknown_resizes, &outcomes_);
        break;
      }
      case Op::kMoveOut: {
        const Move& out = moves_[r.pair];
        if (out.moved.known) {
          ledger.CountChange(r.layer, out.moved.scope, out.moved.size, /*allocate=*/false);
        }
        CountOutcome(out.outcome, r.sole, &outcomes_.unknown_remaps, &outcomes_);
        break;
      }
      case Op::kMoveIn: {
        if (r.pair == ApplyRecord::kNoPair) {
          ledger.CountChange(r.layer, r.scope, r.size, /*allocate=*/true);
          break;
        }
        const AllocationLedger::Moved& moved = moves_[r.pair].moved;
        if (moved.known) {
          ledger.GiveBackProvisional(r.context);  // the block took the old one's
          ledger.CountChange(r.layer, moved.scope, r.size, /*allocate=*/true);
        } else {
          // The block placed with the provisional context now has the record's own. It
          // is interned here, after the sites of the batch's later allocations (Add):
          // only the site table's order can differ from one thread's, and with it, once
          // the table is full, which sites share its overflow bucket.
          ledger.ResolveProvisional(r.context, r.site, r.layer, r.address, r.ticket);
          ledger.CountChange(r.layer, r.scope, r.size, /*allocate=*/true);
        }
        break;
      }
      case Op::kReset:
        for (size_t a = 0; a < appliers_.size(); ++a) {
          const std::vector<Release>& list = appliers_[a]->releases;
          for (size_t& c = cursor_[a]; c < list.size() && list[c].record == i; ++c) {
            ledger.CountChange(list[c].layer, list[c].scope, list[c].bytes, /*allocate=*/false);
          }
        }
        break;
    }
  }
  markers_before(records_.size());
}

}  // namespace memtrace
