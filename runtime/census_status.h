// Copyright 2026 The memtrace Authors.
//
// census_status.h: the plain data a Census reports (census.h): its limits, its entries,
// and the record of any exhaustion. Kept apart from Census so that snapshots and sinks can
// carry census data without depending on the census itself.
//
// Thread safety: plain data.

#ifndef MEMTRACE_RUNTIME_CENSUS_STATUS_H_
#define MEMTRACE_RUNTIME_CENSUS_STATUS_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace memtrace {

struct CensusLimits {
  uint32_t max_entries = 256;
  uint32_t label_storage_bytes = 16 * 1024;
};

// How much of each bound is used.
struct CensusCapacity {
  uint32_t entries_used = 0;
  uint32_t entries_max = 0;
};

// A label was refused because every entry was taken.
struct CensusCapacityError {
  std::string label;
  uint32_t max_entries = 0;
};

// A label was refused because its text did not fit in the label storage.
struct CensusStorageExhaustion {
  std::string label;
  uint32_t needed_bytes = 0;
  uint32_t available_bytes = 0;
};

// Which bound a census has hit (a bit set).
enum class CensusExhaustion : uint8_t {
  kNone = 0,
  kEntries = 1,
  kStorage = 2,
  kBoth = 3,
};

struct CensusStorageStatus {
  uint32_t used_bytes = 0;
  uint32_t capacity_bytes = 0;
};

struct CensusStatus {
  CensusCapacity capacity;
  CensusStorageStatus storage;
  CensusExhaustion exhausted = CensusExhaustion::kNone;
  uint64_t refused_for_entries = 0;  // Label() calls refused: no free entry
  uint64_t refused_for_storage = 0;  // Label() calls refused: label text did not fit
  bool ok() const noexcept { return exhausted == CensusExhaustion::kNone; }
};

struct CensusEntry {
  std::string label;
  int64_t bytes = 0;
  int64_t high_water_bytes = 0;
};

// How summaries show a census.
struct CensusSummaryOptions {
  bool include_zero = false;  // show entries whose value is 0
  size_t max_rows = 50;       // largest entries first; the rest are summed as "(others)"
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_CENSUS_STATUS_H_
