// Copyright 2026 The memtrace Authors.

#include "runtime/census.h"

#include "absl/strings/str_cat.h"
#include "runtime/internal/recorder.h"

namespace memtrace {

std::optional<uint32_t> CensusStorage::Append(std::string_view label) {
  if (label.size() > capacity_ - bytes_.size()) return std::nullopt;
  const auto offset = static_cast<uint32_t>(bytes_.size());
  bytes_.append(label);
  return offset;
}

Census::Census(CensusLimits limits)
    : limits_(limits),
      values_(new Value[limits.max_entries]),
      storage_(limits.label_storage_bytes) {}

absl::StatusOr<CensusLabel> Census::Label(std::string_view label) {
  if (label.empty()) {
    return absl::InvalidArgumentError("memtrace census: a label must not be empty");
  }
  // Debian's abseil is built without std::string_view, so look up by std::string.
  const std::string name(label);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(name);
  if (it != ids_.end()) return CensusLabel{it->second};
  if (label_spans_.size() >= limits_.max_entries) {
    ++refused_for_entries_;
    last_capacity_error_ = CensusCapacityError{name, limits_.max_entries};
    return absl::ResourceExhaustedError(absl::StrCat(
        "memtrace census: cannot add label '", name, "': all ", limits_.max_entries,
        " entries are in use (CensusLimits.max_entries); existing entries are kept. Raise "
        "the limit or reuse a label"));
  }
  const std::optional<uint32_t> offset = storage_.Append(label);
  if (!offset.has_value()) {
    ++refused_for_storage_;
    const CensusStorageStatus s = storage_.status();
    last_storage_error_ = CensusStorageExhaustion{name, static_cast<uint32_t>(label.size()),
                                                  s.capacity_bytes - s.used_bytes};
    return absl::ResourceExhaustedError(absl::StrCat(
        "memtrace census: cannot add label '", name, "': it needs ", label.size(),
        " bytes of label storage and ", s.capacity_bytes - s.used_bytes,
        " are left (CensusLimits.label_storage_bytes = ", s.capacity_bytes,
        "); existing entries are kept. Raise the limit or use shorter labels"));
  }
  const auto id = static_cast<uint32_t>(label_spans_.size());
  label_spans_.emplace_back(*offset, static_cast<uint32_t>(label.size()));
  ids_.emplace(name, id);
  // Release: the entry's (zeroed) value is ready before readers count it; pairs with the
  // acquire load in Entries().
  entries_used_.store(id + 1, std::memory_order_release);
  return CensusLabel{id};
}

void Census::RaiseHighWater(Value& v, int64_t now) noexcept {
  // Relaxed: a monotonic maximum; the CAS loop keeps it monotonic without ordering.
  int64_t seen = v.high_water.load(std::memory_order_relaxed);
  while (now > seen &&
         !v.high_water.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

void Census::Publish(uint32_t id, int64_t delta) noexcept {
  if (delta == 0) return;  // nothing changed: nothing to carry
  Value& v = values_[id];
  // Acquire: the recorder is fully built before it is used; pairs with the store in
  // Attach(), which is seq_cst and so also a release.
  Recorder* const r = recorder_.load(std::memory_order_acquire);
  // Not while it is stopped: SendUnsent() says why.
  if (r != nullptr && r->running() && r->RecordCensus(id, delta) == RecordResult::kRecorded) {
    // Relaxed: only a hint that an amount waits (an earlier failed record, or the updates
    // made before the recorder started). An amount parked concurrently is sent by the
    // thread that parks it (below), or by this label's next record.
    if (v.unsent.load(std::memory_order_relaxed) != 0) SendUnsent(id, r);
    return;
  }
  // Seq_cst: the park, then the load of the recorder below, against Attach()'s store of
  // the recorder, then its exchange of `unsent`: one of the two sees the other (header
  // comment, "Memory ordering"), so an amount parked during Attach() is not left behind.
  v.unsent.fetch_add(delta, std::memory_order_seq_cst);
  if (Recorder* const now = recorder_.load(std::memory_order_seq_cst)) SendUnsent(id, now);
}

void Census::SendUnsent(uint32_t id, Recorder* recorder) noexcept {
  // A stopped recorder would refuse the record and count it as an operation it missed
  // (not_recording): the amount stays parked, and Tracer::Start() sends it.
  if (!recorder->running()) return;
  Value& v = values_[id];
  // Seq_cst: pairs with the park in Publish() (header comment, "Memory ordering"). The
  // exchange takes each parked amount exactly once, whoever else sends at the same time.
  const int64_t amount = v.unsent.exchange(0, std::memory_order_seq_cst);
  if (amount != 0 && recorder->RecordCensus(id, amount) != RecordResult::kRecorded) {
    // Seq_cst: parked again, as in Publish(); this label's next record or the next
    // Attach() or Tracer::Start() sends it.
    v.unsent.fetch_add(amount, std::memory_order_seq_cst);
  }
}

void Census::SendUnsent() noexcept {
  // Acquire: pairs with the store in Attach(), as in Publish().
  Recorder* const r = recorder_.load(std::memory_order_acquire);
  if (r == nullptr) return;
  // Acquire: pairs with the release store in Label(); later entries' updates see `r`.
  const uint32_t n = entries_used_.load(std::memory_order_acquire);
  for (uint32_t id = 0; id < n; ++id) SendUnsent(id, r);
}

void Census::Attach(Recorder* recorder) noexcept {
  // Seq_cst: also a release (the recorder is fully built before updates use it; pairs
  // with the acquire loads in Publish()), and ordered before the exchanges in
  // SendUnsent() against the parks in Publish() (header comment, "Memory ordering").
  Recorder* const before = recorder_.exchange(recorder, std::memory_order_seq_cst);
  if (before != nullptr && before != recorder) {
    // Leaving a capture: the next recorder's starts from each entry's whole value.
    // Relaxed: this is done while no thread updates the census (header comment), so no
    // update races these stores; SendUnsent()'s exchanges come after them.
    const uint32_t n = entries_used_.load(std::memory_order_acquire);  // see SendUnsent()
    for (uint32_t id = 0; id < n; ++id) {
      values_[id].unsent.store(values_[id].bytes.load(std::memory_order_relaxed),
                               std::memory_order_relaxed);
    }
  }
  if (recorder != nullptr) SendUnsent();
}

void Census::Set(CensusLabel label, int64_t bytes) noexcept {
  if (label.id >= limits_.max_entries) return;
  Value& v = values_[label.id];
  // Relaxed: the value is a statistic; readers want a recent value, not an order. The
  // RMW gives the value it replaced, so the change recorded is exact under concurrent
  // updates: the changes of all updates, in their order on `bytes`, add up to the value.
  const int64_t before = v.bytes.exchange(bytes, std::memory_order_relaxed);
  RaiseHighWater(v, bytes);
  // Unsigned: the difference of two extreme values wraps instead of overflowing, and a
  // reader's sum wraps back.
  Publish(label.id, static_cast<int64_t>(static_cast<uint64_t>(bytes) -
                                         static_cast<uint64_t>(before)));
}

void Census::Add(CensusLabel label, int64_t bytes) noexcept {
  if (label.id >= limits_.max_entries) return;
  Value& v = values_[label.id];
  // Relaxed: see Set(); the RMW keeps concurrent additions exact.
  const int64_t now = v.bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  RaiseHighWater(v, now);
  Publish(label.id, bytes);
}

absl::Status Census::Set(std::string_view label, int64_t bytes) {
  auto id = Label(label);
  if (!id.ok()) return id.status();
  Set(*id, bytes);
  return absl::OkStatus();
}

absl::Status Census::Add(std::string_view label, int64_t bytes) {
  auto id = Label(label);
  if (!id.ok()) return id.status();
  Add(*id, bytes);
  return absl::OkStatus();
}

absl::Status Census::Subtract(std::string_view label, int64_t bytes) {
  return Add(label, -bytes);
}

std::vector<CensusEntry> Census::Entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  // Acquire: pairs with the release store in Label().
  const uint32_t n = entries_used_.load(std::memory_order_acquire);
  std::vector<CensusEntry> out;
  out.reserve(n);
  for (uint32_t id = 0; id < n; ++id) {
    const auto [offset, length] = label_spans_[id];
    out.push_back(CensusEntry{std::string(storage_.View(offset, length)),
                              values_[id].bytes.load(std::memory_order_relaxed),
                              values_[id].high_water.load(std::memory_order_relaxed)});
  }
  return out;
}

CensusStatus Census::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  CensusStatus s;
  s.capacity = CensusCapacity{static_cast<uint32_t>(label_spans_.size()), limits_.max_entries};
  s.storage = storage_.status();
  s.refused_for_entries = refused_for_entries_;
  s.refused_for_storage = refused_for_storage_;
  s.exhausted = static_cast<CensusExhaustion>((refused_for_entries_ ? 1 : 0) |
                                              (refused_for_storage_ ? 2 : 0));
  return s;
}

std::optional<CensusCapacityError> Census::last_capacity_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_capacity_error_;
}

std::optional<CensusStorageExhaustion> Census::last_storage_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_storage_error_;
}

}  // namespace memtrace
