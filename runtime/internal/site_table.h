// Copyright 2026 The memtrace Authors.
//
// site_table.h: the drainer's table of call sites.
//
// Records carry a call site as a 64-bit value (a return address). The drainer interns each
// distinct value into a dense 32-bit id the ledger can store. The table is bounded by
// `request_site_capacity_max` (Config); values beyond that share the id kOtherSites and
// are counted, so a capture says when it ran out of distinct sites instead of silently
// merging them.
//
// Thread safety: none; the drainer owns it. Snapshots copy what they need.

#ifndef MEMTRACE_RUNTIME_INTERNAL_SITE_TABLE_H_
#define MEMTRACE_RUNTIME_INTERNAL_SITE_TABLE_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace memtrace {

// The default bound on distinct call sites per recorder (the seed's
// request_site_capacity_max).
inline constexpr uint32_t kDefaultSiteCapacity = 1u << 16;

class SiteTable {
 public:
  static constexpr uint32_t kOtherSites = 0xffffffffu;
  // The value reported for allocations whose site landed in the overflow bucket.
  static constexpr uint64_t kOtherSitesValue = ~uint64_t{0};

  explicit SiteTable(uint32_t capacity) : capacity_(capacity) {}

  // The id of `site`, interning it if there is room; kOtherSites (and overflowed() grows)
  // if there is not.
  uint32_t Intern(uint64_t site);

  // The value of an id from Intern().
  uint64_t value(uint32_t id) const noexcept {
    return id < values_.size() ? values_[id] : kOtherSitesValue;
  }

  size_t size() const noexcept { return values_.size(); }
  uint32_t capacity() const noexcept { return capacity_; }
  // Lookups that found the table full.
  uint64_t overflowed() const noexcept { return overflowed_; }

 private:
  const uint32_t capacity_;
  absl::flat_hash_map<uint64_t, uint32_t> ids_;
  std::vector<uint64_t> values_;
  uint64_t overflowed_ = 0;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_SITE_TABLE_H_
