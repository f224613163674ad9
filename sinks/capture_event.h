// Copyright 2026 The memtrace Authors.
//
// capture_event.h: one event of a capture, as the capture format has it
// (docs/capture-format.md, "Events"), independent of its encoding.
//
// The capture is written in one of two encodings: JSONL text (sinks/jsonl_encoding.h) or
// the compact binary form (sinks/binary_encoding.h). Both encoders take a CaptureEvent, so
// the sink, which fills one from each recorded event, and `memtrace convert`, which fills
// one from each record it reads, write the same bytes for the same event. Fields a type
// does not carry stay zero; `t` and `epoch` are not here: events share them per drainer
// epoch, and each encoding writes them its own way.
//
// Thread safety: a plain value.
//
// Example:
//   CaptureEvent e;
//   e.type = CaptureEventType::kFree;
//   e.thread = 1; e.addr = 0x7f0010; e.layer = 0; e.of = ticket_of_alloc; e.ticket = t;
//   AppendJsonEvent(e, start_unix_ns, epoch, &line);   // or BinaryEncoder::Event(e)

#ifndef MEMTRACE_SINKS_CAPTURE_EVENT_H_
#define MEMTRACE_SINKS_CAPTURE_EVENT_H_

#include <cstdint>

namespace memtrace {

// The event line types, in the order of docs/capture-format.md. The binary encoding's
// event tags are kBinaryEventTagBase + these values (binary_encoding.h): never reorder.
enum class CaptureEventType : uint8_t {
  kAlloc = 0,
  kFree = 1,
  kResize = 2,
  kRemap = 3,
  kRemapTarget = 4,
  kArenaReset = 5,
  kScopeEnter = 6,
  kScopeExit = 7,
  kCensus = 8,
  kIntervalBegin = 9,
  kIntervalEnd = 10,
};
inline constexpr uint8_t kCaptureEventTypes = 11;

// The line's "type" ("alloc", "remap_target", "census", ...).
constexpr const char* CaptureEventTypeName(CaptureEventType type) noexcept {
  constexpr const char* kNames[kCaptureEventTypes] = {
      "alloc",       "free",        "resize",     "remap",  "remap_target",  "arena_reset",
      "scope_enter", "scope_exit",  "census",     "interval_begin", "interval_end"};
  const auto i = static_cast<uint8_t>(type);
  return i < kCaptureEventTypes ? kNames[i] : "invalid";
}

// True for the types that carry a call site, a scope and, in sampled captures, a weight.
constexpr bool IsAllocation(CaptureEventType type) noexcept {
  return type == CaptureEventType::kAlloc || type == CaptureEventType::kRemapTarget;
}

struct CaptureEvent {
  CaptureEventType type = CaptureEventType::kAlloc;
  uint32_t thread = 0;
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t ticket = 0;
  uint64_t of = 0;
  uint32_t layer = 0;
  uint32_t scope = 0;     // alloc, remap_target: charged scope; scope events: the scope
  uint32_t outer = 0;     // scope events
  uint32_t site = 0;      // the site table id (not the address)
  uint32_t label = 0;     // census
  uint32_t category = 0;  // interval events
  // Census: the entry's signed change when has_delta (what memtrace writes); otherwise
  // `bytes`, the entry's new value (captures written before census changes were deltas,
  // which `memtrace convert` carries over as they are).
  bool has_delta = false;
  int64_t delta = 0;
  int64_t bytes = 0;
  int64_t mono_ns = 0;    // scope and interval events
  // Sampled captures' allocations: `weight` is written when has_weight is set. It is the
  // value a reader of the JSONL line gets (six significant digits; see RoundedWeight()).
  bool has_weight = false;
  double weight = 1.0;
};

}  // namespace memtrace

#endif  // MEMTRACE_SINKS_CAPTURE_EVENT_H_
