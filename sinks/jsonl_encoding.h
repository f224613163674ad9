// Copyright 2026 The memtrace Authors.
//
// jsonl_encoding.h: the lines of a JSONL capture (docs/capture-format.md), spelled once.
//
// The sink (jsonl_sink.h) writes every table and event line through these functions, and
// `memtrace convert` writes a binary capture back as JSONL through the same ones, so a
// converted capture has exactly the lines the sink would have written. The binary encoding
// (binary_encoding.h) stores table lines as this same text. Lines are returned or appended
// without their newline.
//
// Thread safety: pure functions.
//
// Example:
//   std::string out;
//   const std::string time = JsonTimeFields(start_unix_ns, epoch);  // once per epoch
//   AppendJsonEvent(event, time, &out);
//   out += '\n';

#ifndef MEMTRACE_SINKS_JSONL_ENCODING_H_
#define MEMTRACE_SINKS_JSONL_ENCODING_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "sinks/capture_event.h"

namespace memtrace {

// `,"t":T,"epoch":E`: the fields every event of one drainer epoch shares.
std::string JsonTimeFields(int64_t t, uint32_t epoch);

// Appends the event's line: `{"type":"alloc","t":..,"epoch":..,"thread":..,...}`, with the
// fields of its type in the order the sink has always written them.
void AppendJsonEvent(const CaptureEvent& e, std::string_view time_fields, std::string* out);

// Table lines.
std::string JsonLayerLine(uint32_t id, const std::string& name);
// A thread that took ring `thread` (the capture's "thread" of its later events): its
// kernel thread id and its name then.
std::string JsonThreadLine(uint32_t thread, int64_t tid, const std::string& name);
std::string JsonScopeLine(uint32_t id, uint32_t parent, const std::string& name,
                          const std::string& path);
// A site with a call stack (frames[0] is its address), without one (`frames` empty), or
// the bucket shared by sites beyond the table's capacity (`other`, with the bucket's
// address, SiteTable::kOtherSitesValue).
std::string JsonSiteLine(uint32_t id, uint64_t addr, std::span<const uint64_t> frames,
                         bool other);
std::string JsonModuleLine(const std::string& path, uint64_t start, uint64_t end,
                           uint64_t offset, const std::string& build_id);

// "0x1f": lower-case hex with 0x, quoted.
std::string JsonHex(uint64_t v);

// The bytes a block of `size` requested bytes counts for in the interposer's sampling
// draw (preload/byte_sampler.h): a request for nothing as one byte, so that it has a
// chance to be recorded and a finite weight.
constexpr uint64_t SampledBytes(uint64_t size) { return size == 0 ? 1 : size; }

// A sampled block's weight, 1/p with p = 1 - exp(-SampledBytes(size) / interval) the
// probability that the interposer recorded it (preload/byte_sampler.h), kept within
// [1, 1e15].
double SampleWeight(uint64_t size, uint64_t interval_bytes);
// The weight as a reader of its JSON text gets it: the JSONL line writes six significant
// digits, so the binary encoding stores this value to make both readers agree exactly.
double RoundedWeight(double weight);

}  // namespace memtrace

#endif  // MEMTRACE_SINKS_JSONL_ENCODING_H_
