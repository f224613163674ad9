// Copyright 2026 The memtrace Authors.
//
// census.h: a bounded table of labeled byte counts that a program reports by hand.
//
// The census records memory the allocator does not name on its own: mapped files, GPU
// textures, caches sized by policy, pools owned by a library. Each entry is a label and a
// signed byte count that the program sets, adds to or subtracts from. Census values appear
// in every summary beside the totals the tracer observed, so a reader can see both what
// the allocator saw and what the program says it holds.
//
// Bounds (CensusLimits): at most `max_entries` labels, and at most `label_storage_bytes`
// bytes of label text (CensusStorage). When a new label does not fit:
//   - the caller gets a clear error: kResourceExhausted whose message names the label and
//     the limit, and the details as a CensusCapacityError (too many entries) or a
//     CensusStorageExhaustion (label text does not fit) from last_error();
//   - existing entries are kept and keep working;
//   - the exhaustion is recorded in CensusStatus (how many refusals of each kind, and
//     which limit was hit first), which every summary prints.
//
// Hot path: label a value once (Label() interns under a mutex), then update it through the
// returned CensusLabel with Set/Add/Subtract, which are one relaxed atomic operation each
// and, when a recorder is attached, one record (kCensusUpdate) so the census has a time
// series in captures.
//
// Thread safety: every method is thread-safe.
//
// Example:
//   memtrace::Census census(memtrace::CensusLimits{.max_entries = 64});
//   auto textures = census.Label("gpu/textures").value();
//   census.Add(textures, 4 << 20);

#ifndef MEMTRACE_RUNTIME_CENSUS_H_
#define MEMTRACE_RUNTIME_CENSUS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/census_status.h"

namespace memtrace {

class Recorder;

// The bounded store of label text: one contiguous buffer, labels appended.
class CensusStorage {
 public:
  explicit CensusStorage(uint32_t capacity_bytes) : capacity_(capacity_bytes) {}
  // Appends `label`; returns its offset, or nullopt if it does not fit.
  std::optional<uint32_t> Append(std::string_view label);
  std::string_view View(uint32_t offset, uint32_t length) const {
    return std::string_view(bytes_).substr(offset, length);
  }
  CensusStorageStatus status() const {
    return CensusStorageStatus{static_cast<uint32_t>(bytes_.size()), capacity_};
  }

 private:
  const uint32_t capacity_;
  std::string bytes_;
};

// A handle to one census entry, valid for the census's lifetime.
struct CensusLabel {
  uint32_t id = 0;
};

class Census {
 public:
  explicit Census(CensusLimits limits = CensusLimits{});

  Census(const Census&) = delete;
  Census& operator=(const Census&) = delete;

  // The entry for `label`, created at 0 if new. kResourceExhausted when it does not fit
  // (see the header comment); kInvalidArgument for an empty label.
  absl::StatusOr<CensusLabel> Label(std::string_view label);

  // Hot path: one atomic operation, plus a record when a recorder is attached.
  void Set(CensusLabel label, int64_t bytes) noexcept;
  void Add(CensusLabel label, int64_t bytes) noexcept;
  void Subtract(CensusLabel label, int64_t bytes) noexcept { Add(label, -bytes); }

  // Convenience by name (interns first; returns Label()'s error if refused).
  absl::Status Set(std::string_view label, int64_t bytes);
  absl::Status Add(std::string_view label, int64_t bytes);
  absl::Status Subtract(std::string_view label, int64_t bytes);

  // Sends every later update to `recorder` as a kCensusUpdate record (null detaches).
  void Attach(Recorder* recorder) noexcept {
    // Release: the recorder is fully built before updates use it; pairs with the acquire
    // load in Publish().
    recorder_.store(recorder, std::memory_order_release);
  }

  std::vector<CensusEntry> Entries() const;
  CensusStatus status() const;
  // The detail of the most recent refusal, if any.
  std::optional<CensusCapacityError> last_capacity_error() const;
  std::optional<CensusStorageExhaustion> last_storage_error() const;

  const CensusLimits& limits() const noexcept { return limits_; }

 private:
  struct Value {
    std::atomic<int64_t> bytes{0};
    std::atomic<int64_t> high_water{0};
  };

  void RaiseHighWater(Value& v, int64_t now) noexcept;
  void Publish(uint32_t id, int64_t bytes) noexcept;

  const CensusLimits limits_;
  // Fixed at construction so handles never move; entries_used_ says how many are live.
  std::unique_ptr<Value[]> values_;
  std::atomic<uint32_t> entries_used_{0};
  std::atomic<Recorder*> recorder_{nullptr};

  mutable std::mutex mu_;  // guards everything below
  CensusStorage storage_;
  std::vector<std::pair<uint32_t, uint32_t>> label_spans_;  // id -> (offset, length)
  absl::flat_hash_map<std::string, uint32_t> ids_;
  uint64_t refused_for_entries_ = 0;
  uint64_t refused_for_storage_ = 0;
  std::optional<CensusCapacityError> last_capacity_error_;
  std::optional<CensusStorageExhaustion> last_storage_error_;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_CENSUS_H_
