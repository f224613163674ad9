// Copyright 2026 The memtrace Authors.
//
// binary_encoding.h: the compact binary capture encoding (.mtb), byte by byte in
// docs/capture-format.md, "Binary encoding (.mtb)".
//
// A binary capture holds the same records as a JSONL capture, in the same order, and a
// reader turns it into the same CaptureRecords (analysis/capture_reader.h). It exists
// because formatting JSON is most of what the sink's writer thread does, and the
// interposer paces the traced program by that thread: a binary event is 3-12 bytes of
// varints instead of ~150 bytes of text.
//
//   file    := magic record*
//   magic   := "MTRACEB3"                          (8 bytes; "MTRACEB1", "MTRACEB2" are
//                                                  still read)
//   record  := 0x01 len:varint json[len]           header, layer, scope, site, module,
//                                                  trailer: the JSONL line's exact text
//            | 0x02 epoch:varint dt:zigzag         sets the current `t` (+= dt), `epoch`
//            | tag fields...                       an event; tag = 0x10 + type, 0x80 set
//                                                  when a weight follows (version 3: on
//                                                  a census, when it holds a change)
//            | short-tag fields...                 version 2: an alloc, free, remap or
//                                                  remap_target without the fields it
//                                                  shares with the event before it
//                                                  (tag = 0x20 + type)
//            | 0x40..0x7f len:varint bytes[len]    skippable (later versions); ignored
//
// Events carry neither `t` nor `epoch` (the last epoch record's apply), and encode
// addresses, tickets and steady-clock times as zigzag differences against the same
// thread's previous value, so most fields take one or two bytes. Version 2's short
// records leave out `thread` and `layer` (and an allocation's `scope`) when they equal
// the previous allocation's or release's, and the ticket when it is the thread's
// previous one plus one: a program's events come in long runs from one
// thread, layer and scope, and the short forms made sqlite3's capture 37% smaller
// (bench/README.md, "Short records").
//
// BinaryEncoder appends records to a caller's byte buffer without allocating per event
// (the buffer grows, then is reused). Events are first encoded into a block inside the
// encoder and reach the buffer a block at a time (one copy per 16 KiB instead of a
// string append per 9-byte event: the append was a fifth of the sink's time); call
// Flush() before reading or writing the buffer yourself. BinaryDecoder decodes one record at a time from a
// byte range, tells "needs more bytes" apart from "malformed", and never reads past the
// range it is given.
//
// Thread safety: an encoder or a decoder belongs to one thread (each keeps per-thread
// delta state of the capture it encodes).
//
// Example:
//   std::string buffer;
//   BinaryEncoder encoder(&buffer);
//   encoder.Magic();
//   encoder.Json(header_line);
//   encoder.Epoch(start_unix_ns, epoch);
//   encoder.Event(event);
//   encoder.Flush();
//   ... write `buffer`, then buffer.clear() ...
//
//   BinaryDecoder decoder;      // over the bytes after the magic
//   BinaryRecord record;
//   switch (decoder.Next(bytes, &used, &record, &error)) { ... }

#ifndef MEMTRACE_SINKS_BINARY_ENCODING_H_
#define MEMTRACE_SINKS_BINARY_ENCODING_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sinks/capture_event.h"

namespace memtrace {

// The first 8 bytes of a binary capture. The last byte is the encoding version: a change
// an older reader would misread (a new non-skippable tag, a changed field) raises it.
// The encoder writes version 3; the decoder reads versions 1 to 3. Version 2 added the
// short records; version 3 the census record that holds a change (kBinaryCensusDeltaFlag).
inline constexpr char kBinaryMagic[] = "MTRACEB3";
inline constexpr size_t kBinaryMagicSize = 8;
static_assert(sizeof(kBinaryMagic) == kBinaryMagicSize + 1);
// The magic without its version character.
inline constexpr std::string_view kBinaryMagicStem = "MTRACEB";
inline constexpr int kBinaryVersion = 3;

inline constexpr uint8_t kBinaryTagJson = 0x01;
inline constexpr uint8_t kBinaryTagEpoch = 0x02;
inline constexpr uint8_t kBinaryEventTagBase = 0x10;  // + CaptureEventType
// Version 2: + kAlloc, kFree, kRemap or kRemapTarget, a record without the fields it
// shares with the event before it (BinaryEventContext).
inline constexpr uint8_t kBinaryShortTagBase = 0x20;
inline constexpr uint8_t kBinaryWeightFlag = 0x80;    // on alloc and remap_target tags
// Version 3: on the census tag, the record holds the entry's signed change (what memtrace
// writes); without it, the entry's new value (what versions 1 and 2 hold).
inline constexpr uint8_t kBinaryCensusDeltaFlag = 0x80;
inline constexpr uint8_t kBinarySkippableFirst = 0x40;
inline constexpr uint8_t kBinarySkippableLast = 0x7f;
// The longest JSON or skippable payload a reader accepts (a trailer with thousands of
// scopes is well under a megabyte).
inline constexpr uint64_t kBinaryMaxPayload = uint64_t{64} << 20;

// The encoding version `bytes` starts with the magic of (1 to 3), or 0: not a binary
// capture (or one of a version this reader does not know).
int BinaryCaptureVersion(std::string_view bytes);
// True when `bytes` starts with a binary capture's magic, of a version this reader knows.
bool IsBinaryCapture(std::string_view bytes);

// The delta state kept per thread (ring id) by both sides.
struct BinaryThreadState {
  uint64_t addr = 0;
  uint64_t ticket = 0;
  uint64_t mono_ns = 0;
};

// What a version-2 short record leaves out, kept alike by both sides: the `thread` and
// `layer` of the last alloc, free, remap or remap_target record (short or not), and the
// `scope` of the last alloc or remap_target record. A short alloc or remap_target is
// written when its thread, layer and scope equal these; a short free or remap when its
// thread and layer do; either only when its ticket is its thread's previous ticket plus
// one (records of one ring, in order), which it leaves out too. Other events leave the
// context as it is.
struct BinaryEventContext {
  bool valid = false;        // some alloc, free, remap or remap_target came before
  bool scope_valid = false;  // some alloc or remap_target came before
  uint32_t thread = 0;
  uint32_t layer = 0;
  uint32_t scope = 0;

  bool ServesRelease(uint32_t t, uint32_t l) const { return valid && t == thread && l == layer; }
  bool ServesAllocation(uint32_t t, uint32_t l, uint32_t s) const {
    return ServesRelease(t, l) && scope_valid && s == scope;
  }
  void Release(uint32_t t, uint32_t l) {
    valid = true;
    thread = t;
    layer = l;
  }
  void Allocation(uint32_t t, uint32_t l, uint32_t s) {
    Release(t, l);
    scope_valid = true;
    scope = s;
  }
};

class BinaryThreadStates {
 public:
  BinaryThreadState& Get(uint32_t thread) {
    if (thread < direct_.size()) return direct_[thread];
    return GetSlow(thread);
  }

 private:
  BinaryThreadState& GetSlow(uint32_t thread);

  // Ring ids are small and dense; others (hand-written captures) go to the map.
  static constexpr uint32_t kDirect = 4096;
  std::vector<BinaryThreadState> direct_;
  absl::flat_hash_map<uint32_t, BinaryThreadState> others_;
};

class BinaryEncoder {
 public:
  explicit BinaryEncoder(std::string* out) : out_(out) {}
  BinaryEncoder(const BinaryEncoder&) = delete;
  BinaryEncoder& operator=(const BinaryEncoder&) = delete;

  void Magic();
  // A header, table or trailer line: its JSONL text, without the newline.
  void Json(std::string_view line);
  // The `t` and `epoch` of the events that follow; writes a record only on a change.
  void Epoch(int64_t t, uint32_t epoch) {
    if (t != t_ || epoch != epoch_) WriteEpoch(t, epoch);
  }
  void Event(const CaptureEvent& e);

  // The two record shapes most of a capture is made of, from their fields instead of a
  // CaptureEvent; Event() writes every alloc and remap_target with Alloc() (`weight` set
  // in a sampled capture) and every free and remap with Free(). The sink's loop calls
  // them directly for unsampled allocs and frees.
  // Both write the short form (version 2) when the context allows it.
  void Alloc(uint32_t thread, uint64_t addr, uint64_t size, uint32_t layer, uint32_t scope,
             uint32_t site, uint64_t ticket,
             CaptureEventType type = CaptureEventType::kAlloc,
             const double* weight = nullptr) {
    BinaryThreadState& s = threads_.Get(thread);
    const bool full = !context_.ServesAllocation(thread, layer, scope) || ticket != s.ticket + 1;
    context_.Allocation(thread, layer, scope);
    uint8_t* p = Start(kMaxAllocBytes, type, full, weight != nullptr, thread, addr, s);
    p = PutVarint(p, size);
    if (full) {
      p = PutVarint(p, layer);
      p = PutVarint(p, scope);
    }
    p = PutVarint(p, site);
    if (full) p = PutVarint(p, ZigZag(ticket - s.ticket));
    s.ticket = ticket;
    if (weight != nullptr) {
      const uint64_t bits = std::bit_cast<uint64_t>(*weight);
      for (int i = 0; i < 8; ++i) *p++ = static_cast<uint8_t>(bits >> (8 * i));
    }
    Staged(p);
  }
  void Free(uint32_t thread, uint64_t addr, uint32_t layer, uint64_t ticket, uint64_t of,
            CaptureEventType type = CaptureEventType::kFree) {
    BinaryThreadState& s = threads_.Get(thread);
    const bool full = !context_.ServesRelease(thread, layer) || ticket != s.ticket + 1;
    context_.Release(thread, layer);
    uint8_t* p = Start(kMaxFreeBytes, type, full, /*weighted=*/false, thread, addr, s);
    if (full) {
      p = PutVarint(p, layer);
      p = PutVarint(p, ZigZag(ticket - s.ticket));
    }
    s.ticket = ticket;
    p = PutVarint(p, OfDelta(of, ticket));
    Staged(p);
  }

  // A release's `of` as written: its difference from the release's own ticket, where
  // `of` 0 (no ticket) is written as that ticket itself, difference 0, one byte. No
  // release names itself, so a reader maps that back to 0.
  static uint64_t OfDelta(uint64_t of, uint64_t ticket) {
    return ZigZag((of == 0 ? ticket : of) - ticket);
  }

  // Writes `v` as LEB128 (7 bits a byte, low bits first, high bit set on all but the
  // last); returns the end. At most 10 bytes, and it may write up to kVarintSpill bytes
  // past the end it returns (the caller's buffer has that room; later fields overwrite
  // them).
  //
  // Without a branch on the length below 2^56: the lengths of a capture's fields (address
  // deltas, sizes, `of` deltas) change from event to event as the program's do, so a loop
  // that stops at the last byte mispredicts its exit about once a field. The seven-bit
  // groups are spread into the bytes of one word in three shift-and-mask steps, the
  // continuation bits of all but the last byte set by mask, and the word stored whole.
  // Out of line: inlined, its masks and temporaries take the sink loop's registers, and
  // that loop runs slower.
  __attribute__((noinline)) static uint8_t* PutVarint(uint8_t* p, uint64_t v) {
    if constexpr (std::endian::native == std::endian::little) {
      if (__builtin_expect(v < (uint64_t{1} << 56), 1)) {
        uint64_t x = (v & 0x000000000fffffffull) | ((v & 0x00fffffff0000000ull) << 4);
        x = (x & 0x00003fff00003fffull) | ((x & 0x0fffc0000fffc000ull) << 2);
        x = (x & 0x007f007f007f007full) | ((x & 0x3f803f803f803f80ull) << 1);
        const VarintShape& shape = kVarintShapes[std::bit_width(v | 1)];
        x |= shape.continuation;
        std::memcpy(p, &x, sizeof(x));
        return p + shape.bytes;
      }
    }
    return PutLongVarint(p, v);
  }
  // What PutVarint() may write past the end it returns: a whole word from the start of a
  // one-byte varint.
  static constexpr size_t kVarintSpill = 7;
  // PutVarint() a byte at a time: values from 2^56 on, and big-endian machines.
  static uint8_t* PutLongVarint(uint8_t* p, uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
    return p;
  }
  // Signed differences as unsigned varints: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ...
  static uint64_t ZigZag(uint64_t delta) {
    const auto v = static_cast<int64_t>(delta);
    return (delta << 1) ^ static_cast<uint64_t>(v >> 63);
  }

  // Moves the staged records to the end of the output buffer. Magic() and Json() do it
  // themselves; the caller does it before it reads, writes or clears the buffer.
  void Flush() {
    out_->append(reinterpret_cast<const char*>(stage_), staged_);
    staged_ = 0;
  }
  // Bytes written so far and not yet cleared from the buffer: its size plus the staged.
  size_t size() const { return out_->size() + staged_; }

 private:
  // A varint of a value of `w` significant bits (bit_width, 1 to 56): its length, and
  // the continuation bits of every byte but its last, as PutVarint() ORs them in.
  struct VarintShape {
    uint64_t continuation;
    uint64_t bytes;
  };
  static constexpr std::array<VarintShape, 57> kVarintShapes = [] {
    std::array<VarintShape, 57> shapes{};
    for (size_t w = 1; w < shapes.size(); ++w) {
      const uint64_t bytes = (w + 6) / 7;
      shapes[w] = {0x8080808080808080ull & ((uint64_t{1} << (8 * bytes - 8)) - 1), bytes};
    }
    return shapes;
  }();

  static constexpr size_t kStageBytes = 16 * 1024;
  // Tag, thread, address delta, size, layer, scope, site, ticket delta, weight (alloc);
  // tag, thread, address delta, layer, ticket delta, `of` delta (free).
  static constexpr size_t kMaxAllocBytes = 1 + 5 + 10 + 10 + 5 + 5 + 5 + 10 + 8;
  static constexpr size_t kMaxFreeBytes = 1 + 5 + 10 + 5 + 10 + 10;
  // Room for `n` more bytes in the stage; flushes when there is not.
  uint8_t* Room(size_t n) {
    if (kStageBytes - staged_ < n) Flush();
    return stage_ + staged_;
  }
  // The start both Alloc() and Free() share: room for `max_bytes`, the tag, the thread
  // (`full` records only) and the address delta, against and into `s` (the thread's).
  uint8_t* Start(size_t max_bytes, CaptureEventType type, bool full, bool weighted,
                 uint32_t thread, uint64_t addr, BinaryThreadState& s) {
    uint8_t* p = Room(max_bytes);
    *p++ = static_cast<uint8_t>((full ? kBinaryEventTagBase : kBinaryShortTagBase) +
                                static_cast<uint8_t>(type) +
                                (weighted ? kBinaryWeightFlag : 0));
    if (full) p = PutVarint(p, thread);
    p = PutVarint(p, ZigZag(addr - s.addr));
    s.addr = addr;
    return p;
  }
  void Staged(const uint8_t* end) { staged_ = static_cast<size_t>(end - stage_); }
  void WriteEpoch(int64_t t, uint32_t epoch);

  std::string* out_;
  int64_t t_ = 0;
  uint32_t epoch_ = 0;
  BinaryThreadStates threads_;
  BinaryEventContext context_;
  size_t staged_ = 0;
  // Room() keeps a record inside kStageBytes; its last varint may spill past it.
  uint8_t stage_[kStageBytes + kVarintSpill];
};

struct BinaryRecord {
  enum class Kind : uint8_t { kJson, kEpoch, kEvent, kSkipped };
  Kind kind = Kind::kJson;
  std::string_view json;  // kJson: points into the bytes given to Next()
  // kEvent, from the Next() that takes no `event` of its own. The fields its type's JSONL
  // line does not carry are CaptureEvent's defaults, so a reader may copy them all.
  CaptureEvent event;
  int64_t t = 0;          // the current epoch's, for every kind
  uint32_t epoch = 0;
};

// The most bytes any record's fields other than a JSON payload take, even malformed: a
// tag, at most 7 varints (a weighted alloc's) of at most 10 bytes, and a fixed 8-byte
// weight. A reader given at least this many bytes cannot run out inside those fields.
inline constexpr size_t kBinaryMaxFieldBytes = 1 + 7 * 10 + 8;

namespace sinks_internal {

// Reads a binary record field by field from [p, end) (BinaryDecoder::Next()); writes the
// first problem to `*error`. The parts out of the hot path, shared by both readers below.
class BinaryFieldReaderBase {
 public:
  BinaryFieldReaderBase(const uint8_t* p, const uint8_t* end, std::string* error)
      : p_(p), end_(end), error_(error) {}

  __attribute__((noinline)) bool Fail(std::string what);

  const uint8_t* position() const { return p_; }
  bool need_more() const { return need_more_; }
  // Fail() was called: `*error` says why.
  bool failed() const { return failed_; }

  // BinaryEncoder::ZigZag() undone.
  static uint64_t UnZigZag(uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }

 protected:
  // The 8 bytes at `p`, little-endian.
  static uint64_t Load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
    return v;
  }

  // A varint byte by byte, each checked against end_: any length, and the errors.
  __attribute__((noinline)) bool VarintSlow(uint64_t* out);
  __attribute__((noinline)) bool OutOfRange(const char* field, uint64_t v);

  const uint8_t* p_;
  const uint8_t* const end_;
  std::string* const error_;
  bool need_more_ = false;
  bool failed_ = false;
};

// kRoomy: [p, end) holds at least kBinaryMaxFieldBytes (BinaryDecoder::NextRoomy()), so
// a field is read with no check against `end`, a varint of up to 8 bytes as one word.
template <bool kRoomy>
class BinaryFieldReader : public BinaryFieldReaderBase {
 public:
  using BinaryFieldReaderBase::BinaryFieldReaderBase;

  // Most fields are one or two bytes: those cases are inline first. Checked, the rest
  // are read in VarintSlow(); roomy, a varint of up to 8 bytes is read from one 8-byte
  // load, its length from the first byte whose high bit is clear.
  __attribute__((always_inline)) bool Varint(uint64_t* out) {
    if constexpr (kRoomy) {
      if (__builtin_expect(*p_ < 0x80, 1)) {
        *out = *p_++;
        return true;
      }
      if (p_[1] < 0x80) {
        *out = (p_[0] & 0x7fu) | (uint64_t{p_[1]} << 7);
        p_ += 2;
        return true;
      }
      const uint64_t word = Load64(p_);
      const uint64_t last = ~word & 0x8080808080808080ull;  // each byte that ends a varint
      if (__builtin_expect(last == 0, 0)) return VarintSlow(out);  // 9 or 10 bytes
      const int bits = __builtin_ctzll(last) + 1;  // 8 times the varint's length
      uint64_t v = (word << (64 - bits) >> (64 - bits)) & 0x7f7f7f7f7f7f7f7full;
      // The 7-bit groups side by side: in pairs, in fours, then all eight.
      v = (v & 0x007f007f007f007full) | ((v & 0x7f007f007f007f00ull) >> 1);
      v = (v & 0x00003fff00003fffull) | ((v & 0x3fff00003fff0000ull) >> 2);
      v = (v & 0x000000000fffffffull) | ((v & 0x0fffffff00000000ull) >> 4);
      p_ += bits / 8;
      *out = v;
      return true;
    } else {
      if (__builtin_expect(p_ != end_ && *p_ < 0x80, 1)) {
        *out = *p_++;
        return true;
      }
      if (end_ - p_ >= 2 && p_[1] < 0x80) {
        *out = (p_[0] & 0x7fu) | (uint64_t{p_[1]} << 7);
        p_ += 2;
        return true;
      }
      return VarintSlow(out);
    }
  }
  __attribute__((always_inline)) bool U32(const char* field, uint32_t* out) {
    uint64_t v;
    if (!Varint(&v)) return false;
    if (__builtin_expect(v > 0xffffffffu, 0)) return OutOfRange(field, v);
    *out = static_cast<uint32_t>(v);
    return true;
  }
  __attribute__((always_inline)) bool Delta(uint64_t base, uint64_t* out) {
    uint64_t v;
    if (!Varint(&v)) return false;
    *out = base + UnZigZag(v);
    return true;
  }
  bool Fixed64(uint64_t* out) {
    if (!kRoomy && end_ - p_ < 8) {
      need_more_ = true;
      return false;
    }
    *out = Load64(p_);
    p_ += 8;
    return true;
  }
};

// What an event record's tag says (BinaryDecoder::Next()): since == 0 for a tag that is
// no event's.
struct BinaryEventTag {
  uint8_t since = 0;  // the first encoding version that has the tag
  CaptureEventType type = CaptureEventType::kAlloc;
  bool full = false;  // thread and layer (and scope) written, not the context's
  bool weighted = false;
  bool census_delta = false;
};

// Every tag byte's BinaryEventTag. Bit 0x80 is a weight on an allocation, a change on a
// census record (version 3). Version 2's short records are an alloc, free, remap or
// remap_target whose thread and layer (and scope) are the context's (BinaryEventContext).
inline constexpr std::array<BinaryEventTag, 256> kBinaryEventTags = [] {
  static_assert(kBinaryWeightFlag == kBinaryCensusDeltaFlag);
  std::array<BinaryEventTag, 256> tags{};
  for (int tag = 0; tag < 256; ++tag) {
    const bool flagged = (tag & kBinaryWeightFlag) != 0;
    const int base = tag & ~kBinaryWeightFlag;
    const bool full = base < kBinaryShortTagBase;
    const int first = full ? kBinaryEventTagBase : kBinaryShortTagBase;
    if (base < first || base >= first + kCaptureEventTypes) continue;
    const auto type = static_cast<CaptureEventType>(base - first);
    const bool release = type == CaptureEventType::kFree || type == CaptureEventType::kRemap;
    if (!full && !IsAllocation(type) && !release) continue;
    const bool census_delta = flagged && full && type == CaptureEventType::kCensus;
    const bool weighted = flagged && !census_delta;
    if (weighted && !IsAllocation(type)) continue;
    tags[tag] = {static_cast<uint8_t>(census_delta ? 3 : full ? 1 : 2), type, full, weighted,
                 census_delta};
  }
  return tags;
}();

}  // namespace sinks_internal

class BinaryDecoder {
 public:
  enum class Result : uint8_t { kRecord, kNeedMore, kError };

  // `version`: the encoding version of the capture's magic (BinaryCaptureVersion()).
  // Version 1 has no short records, and versions 1 and 2 no census changes: their tags
  // are errors there.
  explicit BinaryDecoder(int version = kBinaryVersion) : version_(version) {}
  void set_version(int version) { version_ = version; }

  // Decodes the record at the start of `in` (after the magic). kRecord: `*out` holds it
  // and `*used` is its length. kNeedMore: `in` ends inside the record (at the end of the
  // file, the capture was cut off); the decoder's state did not change, `*out` may have.
  // kError: `*error` says what is wrong.
  Result Next(std::string_view in, size_t* used, BinaryRecord* out, std::string* error) {
    out->event = CaptureEvent{};
    return Next(in, used, out, &out->event, error);
  }

  // The same, with an event's fields written to `*event` instead of out->event, so that a
  // reader decodes an event straight into its own record. `Event` has CaptureEvent's
  // fields, by their names; ResetDecodedEvent(Event&) sets every one of them to
  // CaptureEvent's default and SetDecodedType(Event&, CaptureEventType) sets the type
  // (both found by argument-dependent lookup). `*event` is written only when the record
  // is an event, and may be left half written when the result is not kRecord.
  // Defined below, in the header, so that a reader's loop inlines it: a capture is read a
  // record of a few bytes at a time, and a call with its spills costs as much as a field.
  template <typename Event>
  __attribute__((always_inline)) Result Next(std::string_view in, size_t* used,
                                             BinaryRecord* out, Event* event,
                                             std::string* error) {
    return Decode<false>(in, used, out, event, error);
  }
  // Next(), for `in` of at least kBinaryMaxFieldBytes: the same records and errors, its
  // fields read with no check against the end of `in` (BinaryFieldReader<true>). Never
  // kNeedMore but for a JSON payload that goes on past `in`.
  template <typename Event>
  __attribute__((always_inline)) Result NextRoomy(std::string_view in, size_t* used,
                                                  BinaryRecord* out, Event* event,
                                                  std::string* error) {
    return Decode<true>(in, used, out, event, error);
  }

 private:
  template <bool kRoomy, typename Event>
  __attribute__((always_inline)) Result Decode(std::string_view in, size_t* used,
                                               BinaryRecord* out, Event* event,
                                               std::string* error);

  // The messages of the errors Next() finds, out of its way.
  __attribute__((noinline, cold)) static std::string PayloadError(uint64_t length);
  __attribute__((noinline, cold)) std::string TagError(uint8_t tag) const;
  __attribute__((noinline, cold)) static std::string ShortFirstError(CaptureEventType type,
                                                                     uint8_t tag);

  int version_;
  int64_t t_ = 0;
  uint32_t epoch_ = 0;
  BinaryThreadStates threads_;
  BinaryEventContext context_;
};

// BinaryDecoder::Next()'s way into a CaptureEvent.
inline void ResetDecodedEvent(CaptureEvent& e) { e = CaptureEvent{}; }
inline void SetDecodedType(CaptureEvent& e, CaptureEventType type) { e.type = type; }

template <bool kRoomy, typename Event>
inline BinaryDecoder::Result BinaryDecoder::Decode(std::string_view in, size_t* used,
                                                   BinaryRecord* out, Event* event,
                                                   std::string* error) {
  const auto* begin = reinterpret_cast<const uint8_t*>(in.data());
  const uint8_t* const end = begin + in.size();
  if (begin == end) return Result::kNeedMore;
  const uint8_t tag = *begin;
  sinks_internal::BinaryFieldReader<kRoomy> r(begin + 1, end, error);
  // Each branch commits the decoder's state only once the record is whole (an event's
  // fields go straight to `*event`, which a record cut short may leave half written).
  auto finish = [&](bool ok) {
    if (ok) {
      *used = static_cast<size_t>(r.position() - begin);
      return Result::kRecord;
    }
    return r.failed() ? Result::kError : Result::kNeedMore;
  };
  out->json = std::string_view();
  const sinks_internal::BinaryEventTag kind = sinks_internal::kBinaryEventTags[tag];
  // Events first: all but a few records are.
  if (__builtin_expect(kind.since == 0, 0)) {
    if (tag == kBinaryTagJson ||
        (tag >= kBinarySkippableFirst && tag <= kBinarySkippableLast)) {
      uint64_t length = 0;
      if (!r.Varint(&length)) return finish(false);
      if (length > kBinaryMaxPayload) {
        *error = PayloadError(length);
        return Result::kError;
      }
      const auto available = static_cast<uint64_t>(end - r.position());
      if (length > available) return Result::kNeedMore;
      out->kind =
          tag == kBinaryTagJson ? BinaryRecord::Kind::kJson : BinaryRecord::Kind::kSkipped;
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
    *error = TagError(tag);
    return Result::kError;
  }
  if (__builtin_expect(kind.since > version_, 0)) {
    *error = TagError(tag);
    return Result::kError;
  }
  const CaptureEventType type = kind.type;
  const bool full = kind.full;
  const bool weighted = kind.weighted;
  const bool census_delta = kind.census_delta;
  const bool release = type == CaptureEventType::kFree || type == CaptureEventType::kRemap;
  if (!full && !(IsAllocation(type) ? context_.scope_valid : context_.valid)) {
    *error = ShortFirstError(type, tag);
    return Result::kError;
  }
  Event& e = *event;
  ResetDecodedEvent(e);
  SetDecodedType(e, type);
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
      (census_delta ? e.delta : e.bytes) =
          static_cast<int64_t>(sinks_internal::BinaryFieldReaderBase::UnZigZag(bytes));
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

#endif  // MEMTRACE_SINKS_BINARY_ENCODING_H_
