// Copyright 2026 The memtrace Authors.
//
// seeded_workload: one thread, a seeded sequence of allocations, resizes and frees through
// the public API in nested scopes and at fixed call sites, written to a JSONL capture;
// and, beside it, the truth the program computed itself from its own operations (JSON):
// what the CLI's summary, top, peak, retention and coverage must print for the capture
// (tests/seeded_cli_test.sh compares them). Nothing in the truth comes from memtrace.
//
// With one thread the order of the records is the order of the operations, so every
// number, the high-water marks and the peak's composition included, is exact.
//
//   seeded_workload CAPTURE TRUTH [SEED]

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"

namespace {

using memtrace::ScopeName;
using memtrace::Span;

// The counters of usage_counters.h, kept by the program.
struct Usage {
  uint64_t allocated_count = 0, allocated_bytes = 0, freed_count = 0, freed_bytes = 0;
  uint64_t live_count = 0, live_bytes = 0, high_water = 0;
  void Add(uint64_t n) {
    ++allocated_count;
    allocated_bytes += n;
    ++live_count;
    live_bytes += n;
    high_water = std::max(high_water, live_bytes);
  }
  void Remove(uint64_t n) {
    ++freed_count;
    freed_bytes += n;
    --live_count;
    live_bytes -= n;
  }
  void Resize(uint64_t from, uint64_t to) {  // in place: bytes only
    if (to >= from) {
      allocated_bytes += to - from;
      live_bytes += to - from;
      high_water = std::max(high_water, live_bytes);
    } else {
      freed_bytes += from - to;
      live_bytes -= from - to;
    }
  }
  std::string Json() const {
    char buf[320];
    snprintf(buf, sizeof(buf),
             "{\"allocated_count\":%" PRIu64 ",\"allocated_bytes\":%" PRIu64
             ",\"freed_count\":%" PRIu64 ",\"freed_bytes\":%" PRIu64 ",\"live_count\":%" PRIu64
             ",\"live_bytes\":%" PRIu64 ",\"high_water_bytes\":%" PRIu64 "}",
             allocated_count, allocated_bytes, freed_count, freed_bytes, live_count,
             live_bytes, high_water);
    return buf;
  }
};

struct Block {
  void* p;
  uint64_t size;
  std::string scope;  // path, "" outside any scope
  uint64_t site;
  std::vector<size_t> instances;  // scope instances open at its allocation (retention)
};

class Workload {
 public:
  Workload(memtrace::Tracer* tracer, uint64_t seed)
      : tracer_(tracer), traced_(tracer, &heap_, memtrace::layers::kCpuHeap), rng_(seed) {}

  void Run() {
    static const ScopeName kLoad("load");
    static const ScopeName kParse("parse");
    static const ScopeName kRender("render");
    static const ScopeName kCache("cache");
    for (int round = 0; round < 40; ++round) {
      {
        Span load = Enter(kLoad, "load");
        Churn(0x1100, 6, 300, 0.6);
        {
          Span parse = Enter(kParse, "load/parse");
          Churn(0x1200, 10, 2000, 0.8);
          if (round % 8 == 0) {
            Span cache = Enter(kCache, "load/parse/cache");
            Churn(0x1300, 2, 5000, 0.0);  // kept: freed at the end
            Exit("load/parse/cache");
          }
          Exit("load/parse");
        }
        Exit("load");
      }
      {
        Span render = Enter(kRender, "render");
        Churn(0x1400, 8, 64000, 0.9);
        Exit("render");
      }
      Churn(0x1500, 3, 100, 0.5);  // outside any scope
    }
    // Every third block still live stays so: a leak for summary, diff and coverage.
    for (size_t k = live_.size(); k-- > 0;) {
      if (k % 3 != 0) FreeAt(k);
    }
  }

  // After the capture: gives the blocks it left live back to the heap, untraced (they are
  // the capture's leak, not the process's).
  void ReleaseUntraced() {
    for (const Block& b : live_) heap_.Free(memtrace::AsMemory(b.p, b.size), 16, 0);
    live_.clear();
  }

  std::string TruthJson() const {
    std::string out = "{\"totals\":" + totals_.Json() + ",\"scopes\":{";
    bool first = true;
    for (const auto& [path, u] : scopes_) {
      if (path.empty()) continue;
      out += std::string(first ? "" : ",") + "\"" + path + "\":" + u.Json();
      first = false;
    }
    out += "},\"sites\":{";
    first = true;
    for (const auto& [site, u] : sites_) {
      char key[32];
      snprintf(key, sizeof(key), "\"0x%" PRIx64 "\":", site);
      out += std::string(first ? "" : ",") + key + u.Json();
      first = false;
    }
    out += "},\"peak\":{\"live_bytes\":" + std::to_string(peak_live_) + ",\"by_scope\":{";
    first = true;
    for (const auto& [path, bytes] : peak_by_scope_) {
      if (bytes == 0) continue;
      out += std::string(first ? "" : ",") + "\"" + (path.empty() ? "(unscoped)" : path) +
             "\":" + std::to_string(bytes);
      first = false;
    }
    out += "}},\"retention\":{";
    first = true;
    for (const auto& [path, r] : retention_) {
      out += std::string(first ? "" : ",") + "\"" + path + "\":{\"exits\":" +
             std::to_string(r.exits) + ",\"exits_retaining\":" +
             std::to_string(r.exits_retaining) + ",\"retained_blocks\":" +
             std::to_string(r.retained_blocks) + ",\"retained_bytes\":" +
             std::to_string(r.retained_bytes) + "}";
      first = false;
    }
    uint64_t live_scoped = 0, live_unscoped = 0;
    for (const Block& b : live_) (b.scope.empty() ? live_unscoped : live_scoped) += b.size;
    out += "},\"coverage\":{\"allocated_scoped\":" + std::to_string(allocated_scoped_) +
           ",\"allocated_unscoped\":" + std::to_string(allocated_unscoped_) +
           ",\"live_scoped\":" + std::to_string(live_scoped) +
           ",\"live_unscoped\":" + std::to_string(live_unscoped) + "}}\n";
    return out;
  }

 private:
  struct Retention {
    uint64_t exits = 0, exits_retaining = 0, retained_blocks = 0, retained_bytes = 0;
  };

  Span Enter(const ScopeName& name, const std::string& path) {
    instances_.push_back(path);
    open_.push_back(instances_.size() - 1);
    return tracer_->Enter(name);
  }
  // Called just before the Span of `path` closes: what it allocated (itself or in scopes
  // inside it) that is live now is retained by this exit.
  void Exit(const std::string& path) {
    const size_t instance = open_.back();
    open_.pop_back();
    Retention& r = retention_[path];
    ++r.exits;
    uint64_t blocks = 0, bytes = 0;
    for (const Block& b : live_) {
      if (std::find(b.instances.begin(), b.instances.end(), instance) != b.instances.end()) {
        ++blocks;
        bytes += b.size;
      }
    }
    r.retained_blocks += blocks;
    r.retained_bytes += bytes;
    if (blocks != 0) ++r.exits_retaining;
  }

  std::string CurrentPath() const {
    return open_.empty() ? std::string() : instances_[open_.back()];
  }

  // `n` allocations of 1..max_size bytes at `site`; each, with probability `free_share`,
  // freed again soon (a block chosen among the live ones of the same scope), and every
  // third grown or shrunk in place where the heap allows it.
  void Churn(uint64_t site, int n, uint64_t max_size, double free_share) {
    std::uniform_int_distribution<uint64_t> size(1, max_size);
    std::bernoulli_distribution freed(free_share);
    for (int i = 0; i < n; ++i) {
      const uint64_t bytes = size(rng_);
      void* p = traced_.Alloc(bytes, 16, site);
      if (p == nullptr) {
        fprintf(stderr, "seeded_workload: allocation refused\n");
        exit(1);
      }
      const Block b{p, bytes, CurrentPath(), site, open_};
      live_.push_back(b);  // live before Observe() looks
      Charge(b, true);
      if (i % 3 == 2) {
        Block& last = live_.back();
        const uint64_t to = last.size / 2 + 1;
        if (traced_.Resize(memtrace::AsMemory(last.p, last.size), 16, to, site)) {
          scopes_[last.scope].Resize(last.size, to);
          sites_[last.site].Resize(last.size, to);
          totals_.Resize(last.size, to);
          last.size = to;
          Observe();
        }
      }
      if (freed(rng_)) {
        std::vector<size_t> same;
        for (size_t k = 0; k < live_.size(); ++k) {
          if (live_[k].scope == b.scope) same.push_back(k);
        }
        FreeAt(same[std::uniform_int_distribution<size_t>(0, same.size() - 1)(rng_)]);
      }
    }
  }

  void FreeAt(size_t k) {
    const Block b = live_[k];
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(k));
    traced_.Free(memtrace::AsMemory(b.p, b.size), 16, b.site);
    Charge(b, false);
  }

  void Charge(const Block& b, bool allocate) {
    for (Usage* u : {&totals_, &scopes_[b.scope], &sites_[b.site]}) {
      if (allocate) {
        u->Add(b.size);
      } else {
        u->Remove(b.size);
      }
    }
    if (allocate) (b.scope.empty() ? allocated_unscoped_ : allocated_scoped_) += b.size;
    Observe();
  }

  // The global high-water moment: the first time the live total reaches its maximum.
  void Observe() {
    if (totals_.live_bytes <= peak_live_) return;
    peak_live_ = totals_.live_bytes;
    peak_by_scope_.clear();
    for (const Block& b : live_) peak_by_scope_[b.scope] += b.size;
  }

  memtrace::Tracer* tracer_;
  memtrace::MallocAllocator heap_;
  memtrace::TracingAllocator traced_;
  std::mt19937_64 rng_;
  std::vector<Block> live_;  // in allocation order
  std::vector<std::string> instances_;  // every scope instance entered, by path
  std::vector<size_t> open_;             // the open ones, innermost last
  Usage totals_;
  std::map<std::string, Usage> scopes_;
  std::map<uint64_t, Usage> sites_;
  std::map<std::string, Retention> retention_;
  uint64_t peak_live_ = 0;
  std::map<std::string, uint64_t> peak_by_scope_;
  uint64_t allocated_scoped_ = 0, allocated_unscoped_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: seeded_workload CAPTURE TRUTH [SEED]\n");
    return 2;
  }
  const uint64_t seed = argc == 4 ? std::strtoull(argv[3], nullptr, 10) : 1;
  auto tracer = memtrace::Tracer::Create(memtrace::Config{}).value();
  auto sink = memtrace::JsonlSink::Open(argv[1]);
  if (!sink.ok()) {
    fprintf(stderr, "seeded_workload: %s\n", sink.status().ToString().c_str());
    return 1;
  }
  if (!tracer->recorder().SetObserver(sink->get()).ok() || !tracer->Start().ok()) {
    fprintf(stderr, "seeded_workload: could not start tracing\n");
    return 1;
  }
  Workload workload(tracer.get(), seed);
  workload.Run();
  if (!tracer->Stop().ok() || !(*sink)->Finish(tracer->TakeSnapshot()).ok()) {
    fprintf(stderr, "seeded_workload: could not finish the capture\n");
    return 1;
  }
  FILE* truth = fopen(argv[2], "w");
  if (truth == nullptr || fputs(workload.TruthJson().c_str(), truth) < 0 || fclose(truth) != 0) {
    fprintf(stderr, "seeded_workload: could not write %s\n", argv[2]);
    return 1;
  }
  workload.ReleaseUntraced();
  return 0;
}
