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
// series in captures, and one relaxed load that finds no unsent amount (below).
//
// What a capture carries: each record holds the entry's signed change, never its new
// value. The drainer applies one epoch's records ring by ring (or in time-stamp order, a
// stamp every few records), not in the order threads made them, so of two threads'
// updates to one label the older value could be applied last; a sum of changes is the
// same in every order. Set() records the difference from the value it replaced. A change
// that no record carried (made before a recorder was attached or started, or whose record
// failed: a full ring) is kept as the entry's `unsent` amount, and the entry's next record,
// Attach() or Tracer::Start() sends it, so a capture's changes to a label add up to the
// census's value:
//
//   update(d):  bytes += d;  r = recorder;
//               if r records d:  if unsent != 0: send unsent.exchange(0) to r
//               else  unsent += d;  if recorder: send unsent.exchange(0), re-park on failure
//   Attach(r):  recorder = r;  send each entry's unsent.exchange(0) to r
//
// Each amount leaves `unsent` through one exchange, so none is sent twice. Leaving a
// recorder (Attach(nullptr), or Attach() of another) parks each entry's whole value again,
// so that the next recorder's capture starts from it. Hence: attach a census to a tracer
// once per capture (attached again after a detach, the capture would get its values
// twice), and detach or move it while no thread updates it (an update racing the move may
// reach the next capture twice or not at all; snapshots and trailers, which read the
// census itself, stay exact).
//
// Thread safety: every method is thread-safe.
//
// Memory ordering: values and high-water marks are statistics (relaxed). An amount parked
// by an update while Attach() runs must not be left behind: the update parks (seq_cst
// RMW on `unsent`) and then loads the recorder (seq_cst); Attach() stores the recorder
// (seq_cst) and then exchanges `unsent` (seq_cst). In the single total order one of the
// two sees the other's write, so either the updating thread or Attach() sends the amount.
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

  // Sends every later update to `recorder` as a kCensusUpdate record, and each entry's
  // unsent amount now (on the first attach, its whole value). Null detaches. Leaving a
  // recorder parks each entry's whole value for the next one (see the header comment).
  void Attach(Recorder* recorder) noexcept;

  // Sends the attached recorder each entry's unsent amount (Tracer::Start() calls it, for
  // the updates made before the recorder started). Never allocates.
  void SendUnsent() noexcept;

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
    // The part of `bytes` no record has carried to the attached recorder yet (see the
    // header comment). Equal to `bytes` while no recorder was ever attached.
    std::atomic<int64_t> unsent{0};
  };

  void RaiseHighWater(Value& v, int64_t now) noexcept;
  // Records a change of `delta` for entry `id`, or parks it in `unsent`.
  void Publish(uint32_t id, int64_t delta) noexcept;
  // Sends entry `id`'s unsent amount to `recorder`, or parks it again if the record fails.
  void SendUnsent(uint32_t id, Recorder* recorder) noexcept;

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
