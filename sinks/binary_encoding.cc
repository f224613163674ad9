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

uint64_t UnZigZag(uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }

// Reads records field by field from [p, end); writes the first problem to `*error`.
class FieldReader {
 public:
  FieldReader(const uint8_t* p, const uint8_t* end, std::string* error)
      : p_(p), end_(end), error_(error) {}

  // Most fields are one byte: that case is inline, the rest in VarintSlow().
  bool Varint(uint64_t* out) {
    if (__builtin_expect(p_ != end_ && *p_ < 0x80, 1)) {
      *out = *p_++;
      return true;
    }
    return VarintSlow(out);
  }
  bool U32(const char* field, uint32_t* out) {
    uint64_t v;
    if (!Varint(&v)) return false;
    if (__builtin_expect(v > 0xffffffffu, 0)) return OutOfRange(field, v);
    *out = static_cast<uint32_t>(v);
    return true;
  }
  bool Delta(uint64_t base, uint64_t* out) {
    uint64_t v;
    if (!Varint(&v)) return false;
    *out = base + UnZigZag(v);
    return true;
  }
  bool Fixed64(uint64_t* out) {
    if (end_ - p_ < 8) {
      need_more_ = true;
      return false;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{p_[i]} << (8 * i);
    p_ += 8;
    *out = v;
    return true;
  }
  bool Fail(std::string what) {
    *error_ = std::move(what);
    failed_ = true;
    return false;
  }

  const uint8_t* position() const { return p_; }
  bool need_more() const { return need_more_; }
  // Fail() was called: `*error` says why.
  bool failed() const { return failed_; }

 private:
  __attribute__((noinline)) bool VarintSlow(uint64_t* out) {
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
  __attribute__((noinline)) bool OutOfRange(const char* field, uint64_t v) {
    return Fail(absl::StrCat("field '", field, "' is out of range (", v, ")"));
  }

  const uint8_t* p_;
  const uint8_t* const end_;
  std::string* const error_;
  bool need_more_ = false;
  bool failed_ = false;
};

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

BinaryDecoder::Result BinaryDecoder::Next(std::string_view in, size_t* used,
                                          BinaryRecord* out, std::string* error) {
  const auto* begin = reinterpret_cast<const uint8_t*>(in.data());
  const uint8_t* const end = begin + in.size();
  if (begin == end) return Result::kNeedMore;
  const uint8_t tag = *begin;
  FieldReader r(begin + 1, end, error);
  // Each branch decodes into locals and commits state only once the record is whole.
  auto finish = [&](bool ok) {
    if (ok) {
      *used = static_cast<size_t>(r.position() - begin);
      return Result::kRecord;
    }
    return r.failed() ? Result::kError : Result::kNeedMore;
  };
  // From a constant: a BinaryRecord{} built on the stack and copied was read back before
  // its stores had landed, a stall a record.
  static constexpr BinaryRecord kBlank{};
  *out = kBlank;
  if (tag == kBinaryTagJson ||
      (tag >= kBinarySkippableFirst && tag <= kBinarySkippableLast)) {
    uint64_t length = 0;
    if (!r.Varint(&length)) return finish(false);
    if (length > kBinaryMaxPayload) {
      *error = absl::StrCat("a record of ", length, " bytes (at most ", kBinaryMaxPayload,
                            " are allowed)");
      return Result::kError;
    }
    const auto available = static_cast<uint64_t>(end - r.position());
    if (length > available) return Result::kNeedMore;
    out->kind = tag == kBinaryTagJson ? BinaryRecord::Kind::kJson : BinaryRecord::Kind::kSkipped;
    out->json = std::string_view(reinterpret_cast<const char*>(r.position()), length);
    out->t = t_;
    out->epoch = epoch_;
    *used = static_cast<size_t>(r.position() - begin) + length;
    return Result::kRecord;
  }
  if (tag == kBinaryTagEpoch) {
    uint32_t epoch = 0;
    uint64_t t = 0;
    if (!r.U32("epoch", &epoch) || !r.Delta(static_cast<uint64_t>(t_), &t)) {
      return finish(false);
    }
    t_ = static_cast<int64_t>(t);
    epoch_ = epoch;
    out->kind = BinaryRecord::Kind::kEpoch;
    out->t = t_;
    out->epoch = epoch_;
    return finish(true);
  }
  // Bit 0x80: a weight on an allocation, a change on a census record (version 3).
  static_assert(kBinaryWeightFlag == kBinaryCensusDeltaFlag);
  const bool flagged = (tag & kBinaryWeightFlag) != 0;
  const uint8_t base = tag & static_cast<uint8_t>(~kBinaryWeightFlag);
  // Version 2's short records: an alloc, free, remap or remap_target whose thread and
  // layer (and scope) are the context's (BinaryEventContext).
  const bool full = base < kBinaryShortTagBase;
  const auto type = static_cast<CaptureEventType>(
      base - (full ? kBinaryEventTagBase : kBinaryShortTagBase));
  const bool release = type == CaptureEventType::kFree || type == CaptureEventType::kRemap;
  const bool known =
      full ? base >= kBinaryEventTagBase && base < kBinaryEventTagBase + kCaptureEventTypes
           : version_ >= 2 && base < kBinaryShortTagBase + kCaptureEventTypes &&
                 (IsAllocation(type) || release);
  const bool census_delta = flagged && full && type == CaptureEventType::kCensus;
  const bool weighted = flagged && !census_delta;
  if (!known || (weighted && !IsAllocation(type)) || (census_delta && version_ < 3)) {
    *error = absl::StrCat("unknown record tag 0x", absl::Hex(tag, absl::kZeroPad2),
                          " (this reader knows binary encoding versions 1 to ", kBinaryVersion,
                          "; the capture's magic says version ", version_, ")");
    return Result::kError;
  }
  if (!full && !(IsAllocation(type) ? context_.scope_valid : context_.valid)) {
    *error = absl::StrCat("a short ", CaptureEventTypeName(type), " record (tag 0x",
                          absl::Hex(tag, absl::kZeroPad2), ") comes before any ",
                          IsAllocation(type) ? "allocation" : "allocation or release",
                          " it could take its thread and layer from");
    return Result::kError;
  }
  CaptureEvent& e = out->event;
  e.type = type;
  if (full) {
    if (!r.U32("thread", &e.thread)) return finish(false);
  } else {
    e.thread = context_.thread;
  }
  // Nothing else looks a thread up before the commit below, so the reference holds.
  BinaryThreadState& state = threads_.Get(e.thread);
  const BinaryThreadState before = state;
  BinaryThreadState after = before;
  bool ok = true;
  // Inlined, so that `after` stays in registers (out of line, the lambdas took it by
  // address, and the commit below read it back from memory still being written).
  auto addr = [&]() __attribute__((always_inline)) {
    ok = ok && r.Delta(before.addr, &e.addr);
    after.addr = e.addr;
  };
  auto ticket_and_of = [&](bool with_of) __attribute__((always_inline)) {
    if (full) {
      ok = ok && r.Delta(before.ticket, &e.ticket);
    } else {
      e.ticket = before.ticket + 1;  // a short record's (BinaryEventContext)
    }
    after.ticket = e.ticket;
    if (with_of) {
      ok = ok && r.Delta(e.ticket, &e.of);
      if (e.of == e.ticket) e.of = 0;  // no ticket (BinaryEncoder::OfDelta)
    }
  };
  auto mono = [&]() __attribute__((always_inline)) {
    uint64_t now = 0;
    ok = ok && r.Delta(before.mono_ns, &now);
    e.mono_ns = static_cast<int64_t>(now);
    after.mono_ns = now;
  };
  switch (type) {
    case CaptureEventType::kAlloc:
    case CaptureEventType::kRemapTarget:
      addr();
      ok = ok && r.Varint(&e.size);
      if (full) {
        ok = ok && r.U32("layer", &e.layer) && r.U32("scope", &e.scope);
      } else {
        e.layer = context_.layer;
        e.scope = context_.scope;
      }
      ok = ok && r.U32("site", &e.site);
      ticket_and_of(false);
      if (ok && weighted) {
        uint64_t bits = 0;
        ok = r.Fixed64(&bits);
        e.has_weight = true;
        e.weight = std::bit_cast<double>(bits);
        if (ok && !(e.weight >= 1.0 && e.weight <= 1e15)) {
          ok = r.Fail("field 'weight' must be a number from 1 to 1e15");
        }
      }
      break;
    case CaptureEventType::kFree:
    case CaptureEventType::kRemap:
      addr();
      if (full) {
        ok = ok && r.U32("layer", &e.layer);
      } else {
        e.layer = context_.layer;
      }
      ticket_and_of(true);
      break;
    case CaptureEventType::kResize:
      addr();
      ok = ok && r.Varint(&e.size) && r.U32("layer", &e.layer);
      ticket_and_of(true);
      break;
    case CaptureEventType::kArenaReset:
      ok = r.U32("layer", &e.layer);
      break;
    case CaptureEventType::kScopeEnter:
    case CaptureEventType::kScopeExit:
      ok = r.U32("scope", &e.scope) && r.U32("outer", &e.outer);
      mono();
      break;
    case CaptureEventType::kCensus: {
      uint64_t bytes = 0;
      ok = r.U32("label", &e.label) && r.Varint(&bytes);
      e.has_delta = census_delta;
      (census_delta ? e.delta : e.bytes) = static_cast<int64_t>(UnZigZag(bytes));
      break;
    }
    case CaptureEventType::kIntervalBegin:
    case CaptureEventType::kIntervalEnd:
      ok = r.U32("category", &e.category);
      mono();
      break;
  }
  if (!ok) return finish(false);
  state = after;
  if (IsAllocation(type)) {
    context_.Allocation(e.thread, e.layer, e.scope);
  } else if (release) {
    context_.Release(e.thread, e.layer);
  }
  out->kind = BinaryRecord::Kind::kEvent;
  out->t = t_;
  out->epoch = epoch_;
  return finish(true);
}

}  // namespace memtrace
