// Copyright 2026 The memtrace Authors.
//
// json_text.h: the few JSON fragments memtrace writes in more than one place (the capture
// trailer, `memtrace summary --json`), so they are spelled once.
//
// Thread safety: pure functions.

#ifndef MEMTRACE_SINKS_JSON_TEXT_H_
#define MEMTRACE_SINKS_JSON_TEXT_H_

#include <string>

#include <vector>

#include "runtime/snapshot.h"
#include "runtime/usage_counters.h"

namespace memtrace {

// A JSON string literal for `s`, quoted and escaped. JSON text is UTF-8, and a reader
// (simdjson) rejects a line with any other bytes in it, so a byte that does not begin a
// valid UTF-8 sequence (a path or argument in Latin-1, say) is written as U+FFFD, the
// replacement character. Everything else is kept as it is.
std::string JsonQuote(const std::string& s);

// {"live_bytes":..,"live_count":..,"high_water_bytes":..,"high_water_low_bytes":..,
//  "high_water_high_bytes":..,"allocated_bytes":..,"allocated_count":..,
//  "allocation_calls":..,"freed_bytes":..,"freed_count":..}
// The three high-water fields are null where `peak_known` is false (counts added up from
// rows that peaked at different moments), and the interval's ends where it has none.
std::string JsonUsage(const UsageCounters& u, bool peak_known = true);

// [{"id":..,"path":"a/b","usage":{...}},...] and [{"id":..,"name":"cpu","usage":{...}},...]
std::string JsonScopes(const std::vector<ScopeUsage>& scopes);
std::string JsonLayers(const std::vector<LayerUsage>& layers);

}  // namespace memtrace

#endif  // MEMTRACE_SINKS_JSON_TEXT_H_
