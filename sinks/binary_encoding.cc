// Copyright 2026 The memtrace Authors.

#include "sinks/binary_encoding.h"

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace memtrace {
namespace {

// The longest event Event() writes itself (a resize): tag, thread (5), five 10-byte
// varints.
constexpr size_t kMaxEventBytes = 1 + 5 + 5 * 10;
// An epoch record: tag, epoch (5), time delta (10).
constexpr size_t kMaxEpochBytes = 1 + 5 + 10;

}  // namespace

int BinaryCaptureVersion(std::string_view bytes) {
  if (bytes.size() < kBinaryMagicSize || !bytes.starts_with(kBinaryMagicStem)) return 0;
  const char version = bytes[kBinaryMagicStem.size()];
  return version >= '1' && version <= '0' + kBinaryVersion ? version - '0' : 0;
}

bool IsBinaryCapture(std::string_view bytes) { return BinaryCaptureVersion(bytes) != 0; }

BinaryThreadState& BinaryThreadStates::GetSlow(uint32_t thread) {
  if (thread < kDirect) {
    direct_.resize(thread + 1);
    return direct_[thread];
  }
  return others_[thread];
}

void BinaryEncoder::Magic() {
  Flush();
  out_->append(kBinaryMagic, kBinaryMagicSize);
}

void BinaryEncoder::Json(std::string_view line) {
  Flush();
  uint8_t head[11];
  head[0] = kBinaryTagJson;
  const uint8_t* end = PutVarint(head + 1, line.size());
  out_->append(reinterpret_cast<const char*>(head), static_cast<size_t>(end - head));
  out_->append(line.data(), line.size());
}

void BinaryEncoder::WriteEpoch(int64_t t, uint32_t epoch) {
  uint8_t* const record = Room(kMaxEpochBytes);
  record[0] = kBinaryTagEpoch;
  uint8_t* p = PutVarint(record + 1, epoch);
  p = PutVarint(p, ZigZag(static_cast<uint64_t>(t) - static_cast<uint64_t>(t_)));
  Staged(p);
  t_ = t;
  epoch_ = epoch;
}

void BinaryEncoder::Event(const CaptureEvent& e) {
  switch (e.type) {
    case CaptureEventType::kAlloc:
    case CaptureEventType::kRemapTarget:
      Alloc(e.thread, e.addr, e.size, e.layer, e.scope, e.site, e.ticket, e.type,
            e.has_weight ? &e.weight : nullptr);
      return;
    case CaptureEventType::kFree:
    case CaptureEventType::kRemap:
      Free(e.thread, e.addr, e.layer, e.ticket, e.of, e.type);
      return;
    default:
      break;
  }
  uint8_t* const record = Room(kMaxEventBytes);
  record[0] = static_cast<uint8_t>(kBinaryEventTagBase + static_cast<uint8_t>(e.type));
  if (e.type == CaptureEventType::kCensus && e.has_delta) record[0] |= kBinaryCensusDeltaFlag;
  uint8_t* p = PutVarint(record + 1, e.thread);
  BinaryThreadState& s = threads_.Get(e.thread);
  auto mono = [&] {
    const auto now = static_cast<uint64_t>(e.mono_ns);
    p = PutVarint(p, ZigZag(now - s.mono_ns));
    s.mono_ns = now;
  };
  switch (e.type) {
    case CaptureEventType::kAlloc:
    case CaptureEventType::kRemapTarget:
    case CaptureEventType::kFree:
    case CaptureEventType::kRemap:
      break;  // written above
    case CaptureEventType::kResize:
      p = PutVarint(p, ZigZag(e.addr - s.addr));
      s.addr = e.addr;
      p = PutVarint(p, e.size);
      p = PutVarint(p, e.layer);
      p = PutVarint(p, ZigZag(e.ticket - s.ticket));
      s.ticket = e.ticket;
      p = PutVarint(p, OfDelta(e.of, e.ticket));
      break;
    case CaptureEventType::kArenaReset:
      p = PutVarint(p, e.layer);
      break;
    case CaptureEventType::kScopeEnter:
    case CaptureEventType::kScopeExit:
      p = PutVarint(p, e.scope);
      p = PutVarint(p, e.outer);
      mono();
      break;
    case CaptureEventType::kCensus:
      p = PutVarint(p, e.label);
      p = PutVarint(p, ZigZag(static_cast<uint64_t>(e.has_delta ? e.delta : e.bytes)));
      break;
    case CaptureEventType::kIntervalBegin:
    case CaptureEventType::kIntervalEnd:
      p = PutVarint(p, e.category);
      mono();
      break;
  }
  Staged(p);
}

bool sinks_internal::BinaryFieldReaderBase::VarintSlow(uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p_ == end_) {
      need_more_ = true;
      return false;
    }
    const uint8_t b = *p_++;
    if (shift == 63 && b > 1) return Fail("a varint overflows 64 bits");
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return Fail("a varint is longer than 10 bytes");
}

bool sinks_internal::BinaryFieldReaderBase::OutOfRange(const char* field, uint64_t v) {
  return Fail(absl::StrCat("field '", field, "' is out of range (", v, ")"));
}

bool sinks_internal::BinaryFieldReaderBase::Fail(std::string what) {
  *error_ = std::move(what);
  failed_ = true;
  return false;
}

std::string BinaryDecoder::PayloadError(uint64_t length) {
  return absl::StrCat("a record of ", length, " bytes (at most ", kBinaryMaxPayload,
                      " are allowed)");
}

std::string BinaryDecoder::TagError(uint8_t tag) const {
  return absl::StrCat("unknown record tag 0x", absl::Hex(tag, absl::kZeroPad2),
                      " (this reader knows binary encoding versions 1 to ", kBinaryVersion,
                      "; the capture's magic says version ", version_, ")");
}

std::string BinaryDecoder::ShortFirstError(CaptureEventType type, uint8_t tag) {
  return absl::StrCat("a short ", CaptureEventTypeName(type), " record (tag 0x",
                      absl::Hex(tag, absl::kZeroPad2), ") comes before any ",
                      IsAllocation(type) ? "allocation" : "allocation or release",
                      " it could take its thread and layer from");
}

}  // namespace memtrace
