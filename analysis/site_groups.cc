// Copyright 2026 The memtrace Authors.

#include "analysis/site_groups.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace memtrace {

std::vector<SiteGroup> GroupSitesByName(std::vector<AllocationAttribution> rows,
                                        const std::function<std::string(uint32_t)>& name,
                                        const SiteKey& key) {
  std::sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    const uint64_t ka = key(a.usage, a.temporaries, a.short_lived);
    const uint64_t kb = key(b.usage, b.temporaries, b.short_lived);
    if (ka != kb) return ka > kb;
    return std::tie(a.site, a.scope, a.layer) < std::tie(b.site, b.scope, b.layer);
  });
  std::vector<SiteGroup> groups;
  absl::flat_hash_map<std::tuple<std::string, uint32_t, uint32_t>, size_t> index;
  for (const AllocationAttribution& a : rows) {
    std::string n = name(a.site);
    auto [it, added] = index.try_emplace(std::make_tuple(n, a.scope, a.layer), groups.size());
    if (added) {
      SiteGroup& g = groups.emplace_back();
      g.name = std::move(n);
      g.scope = a.scope;
      g.layer = a.layer;
    }
    SiteGroup& g = groups[it->second];
    if (g.stacks.empty()) {
      g.usage = a.usage;  // a group of one is its stack, high-water included
    } else {
      g.usage.AddCounts(a.usage);
      // The stacks peaked at different moments: the group's peak is not known.
      g.usage.high_water_bytes = g.usage.high_water_low_bytes = g.usage.high_water_high_bytes = 0;
    }
    g.temporaries += a.temporaries;
    g.short_lived += a.short_lived;
    g.stacks.push_back(a);
  }
  // Rows the key ties (every row with 0 B live, by live) go by bytes allocated.
  std::stable_sort(groups.begin(), groups.end(), [&](const SiteGroup& a, const SiteGroup& b) {
    const uint64_t ka = key(a.usage, a.temporaries, a.short_lived);
    const uint64_t kb = key(b.usage, b.temporaries, b.short_lived);
    if (ka != kb) return ka > kb;
    return a.usage.allocated_bytes > b.usage.allocated_bytes;
  });
  return groups;
}

std::vector<NamedSiteBytes> GroupSiteBytesByName(
    const std::vector<std::pair<uint32_t, uint64_t>>& by_site,
    const std::function<std::string(uint32_t)>& name) {
  std::vector<NamedSiteBytes> groups;
  absl::flat_hash_map<std::string, size_t> index;
  for (const auto& [site, bytes] : by_site) {
    std::string n = name(site);
    auto [it, added] = index.try_emplace(n, groups.size());
    if (added) groups.push_back(NamedSiteBytes{std::move(n), 0, {}});
    groups[it->second].bytes += bytes;
    groups[it->second].sites.push_back(site);
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const NamedSiteBytes& a, const NamedSiteBytes& b) {
                     return a.bytes > b.bytes;
                   });
  return groups;
}

std::string StacksNote(size_t stacks) {
  return stacks > 1 ? absl::StrCat(" [", stacks, " stacks]") : std::string();
}

}  // namespace memtrace
