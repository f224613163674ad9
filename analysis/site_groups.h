// Copyright 2026 The memtrace Authors.
//
// site_groups.h: the rows of a call-site listing that would read the same, added up.
//
// A capture's site is one call stack. Listings (`memtrace top`, `peak`, the HTML report's
// tables) name a site after the function that called the allocator
// (analysis/allocator_frames.h), and stacks that differ only in the callers above that
// function get one name. A helper that allocates for many callers is one function, but
// as many sites as paths reach it: postgres's palloc, under `--allocator=palloc`, names
// its callers, and btbeginscan() reached from two executor paths is two sites. Listed
// apart, such rows look alike, and they split the function's total, so that it ranks
// below functions that allocated less. The groups below add them up and keep each
// stack, for the views that show stacks (`top --stacks`).
//
// Thread safety: plain functions of their arguments.
//
// Example:
//   SiteNamer names(summary, allocators);
//   for (const SiteGroup& g : GroupSitesByName(
//            summary.attribution, [&](uint32_t s) { return names.Name(s); },
//            [](const UsageCounters& u, uint64_t) { return u.allocated_bytes; })) {
//     printf("%s%s: %llu bytes\n", g.name.c_str(), StacksNote(g.stacks.size()).c_str(),
//            g.usage.allocated_bytes);
//   }

#ifndef MEMTRACE_ANALYSIS_SITE_GROUPS_H_
#define MEMTRACE_ANALYSIS_SITE_GROUPS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analyzer.h"
#include "runtime/usage_counters.h"

namespace memtrace {

// The sites of one name, scope and layer.
struct SiteGroup {
  std::string name;
  uint32_t scope = 0;
  uint32_t layer = 0;
  UsageCounters usage;  // the stacks' counts added up; high_water_bytes is the stack's
                        // own in a group of one, else 0 (their moments differ)
  uint64_t temporaries = 0;
  uint64_t short_lived = 0;
  std::vector<AllocationAttribution> stacks;  // the sites added up, in input order
};

// What a listing orders by: a number from a row's (or a group's) counts, temporaries and
// short-lived blocks (CaptureSummary says which is which).
using SiteKey =
    std::function<uint64_t(const UsageCounters&, uint64_t temporaries, uint64_t short_lived)>;

// Groups `rows` by (name(site), scope, layer), largest key first; each group's stacks too,
// ties in (site, scope, layer) order; groups of equal key by bytes allocated, then in the
// order of their largest stack.
std::vector<SiteGroup> GroupSitesByName(std::vector<AllocationAttribution> rows,
                                        const std::function<std::string(uint32_t)>& name,
                                        const SiteKey& key);

// Bytes by site (a peak's composition), added up by site name.
struct NamedSiteBytes {
  std::string name;
  uint64_t bytes = 0;
  std::vector<uint32_t> sites;  // in input order
};

// Groups (site, bytes) pairs by name(site); largest first, ties in order of first
// appearance.
std::vector<NamedSiteBytes> GroupSiteBytesByName(
    const std::vector<std::pair<uint32_t, uint64_t>>& by_site,
    const std::function<std::string(uint32_t)>& name);

// What a listing appends to a group's name when it adds up several stacks:
// " [3 stacks]"; nothing for one.
std::string StacksNote(size_t stacks);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_SITE_GROUPS_H_
