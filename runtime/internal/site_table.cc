// Copyright 2026 The memtrace Authors.

#include "runtime/internal/site_table.h"

namespace memtrace {

uint32_t SiteTable::Intern(uint64_t site) {
  auto it = ids_.find(site);
  if (it != ids_.end()) return it->second;
  if (values_.size() >= capacity_) {
    ++overflowed_;
    return kOtherSites;
  }
  const auto id = static_cast<uint32_t>(values_.size());
  values_.push_back(site);
  ids_.emplace(site, id);
  return id;
}

}  // namespace memtrace
