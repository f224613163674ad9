// Copyright 2026 The memtrace Authors.

#include "analysis/exports.h"

#include <zlib.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/internal/proto_writer.h"
#include "sinks/json_text.h"

namespace memtrace {
namespace {

using analysis_internal::ProtoWriter;

// Innermost first, as captured: the site's stack, or its return address alone.
std::vector<uint64_t> SiteFrames(const CaptureSummary& s, uint32_t site, uint64_t addr) {
  auto it = s.site_frames.find(site);
  if (it != s.site_frames.end() && !it->second.empty()) return it->second;
  return {addr};
}

std::string ScopePath(const CaptureSummary& s, uint32_t id) {
  auto it = s.scope_paths.find(id);
  return it != s.scope_paths.end() ? it->second : absl::StrCat("scope ", id);
}

// ---- Perfetto -------------------------------------------------------------------------------

// Microseconds with nanosecond precision, as trace-event "ts" wants.
std::string Micros(int64_t ns) { return absl::StrFormat("%.3f", static_cast<double>(ns) / 1e3); }

class TraceBuilder {
 public:
  explicit TraceBuilder(uint64_t pid) : pid_(pid) {}
  void Add(const std::string& event) {
    absl::StrAppend(&out_, count_++ == 0 ? "\n" : ",\n", event);
  }
  std::string Common(const char* ph, const std::string& name, int64_t tid, int64_t ts_ns) {
    return absl::StrCat("{\"ph\":\"", ph, "\",\"name\":", JsonQuote(name), ",\"pid\":", pid_,
                        ",\"tid\":", tid, ",\"ts\":", Micros(ts_ns));
  }
  std::string Finish(const std::string& metadata) {
    return absl::StrCat("{\"displayTimeUnit\":\"ns\",\"otherData\":", metadata,
                        ",\"traceEvents\":[", out_, "\n]}\n");
  }

 private:
  uint64_t pid_;
  std::string out_;
  uint64_t count_ = 0;
};

}  // namespace

std::string FrameName(Symbolizer& symbolizer, uint64_t pc) {
  const SymbolizedFrame& f = symbolizer.Resolve(pc);
  return f.function != "??" ? f.function : symbolizer.Describe(pc);
}

absl::StatusOr<std::string> PerfettoTrace(const std::string& path, const CaptureSummary& summary,
                                          Symbolizer& symbolizer,
                                          const AllocatorFunctions& allocators) {
  TraceBuilder trace(summary.pid);
  // Time zero: the capture's start (or its first event). Event times `t` are unix ns at the
  // start of the drainer epoch, never after the event; scope slices use the steady clock
  // (mono_ns, one clock for all threads), placed on the same axis by the largest
  // t - mono_ns over the scope events (a first pass): the closest estimate from below of
  // the clocks' real offset, exact to one epoch.
  int64_t base = summary.started_unix_ns;
  bool have_base = base != 0;
  bool have_offset = false;
  int64_t mono_offset = 0;
  absl::Status scan = ReadCapture(path, [&](const CaptureRecord& rec) {
    if (rec.type == LineType::kScopeEnter || rec.type == LineType::kScopeExit) {
      const int64_t offset = rec.t - rec.mono_ns;
      if (!have_offset || offset > mono_offset) mono_offset = offset;
      have_offset = true;
    }
    return absl::OkStatus();
  });
  if (!scan.ok()) return scan;
  int64_t last_ts = 0;
  // Each track's open scopes, innermost last. By track, not by ring: a thread's records
  // after its exit hook come from another ring of its own (a scope it entered on one may
  // end on the other).
  absl::flat_hash_map<int64_t, std::vector<uint32_t>> open;
  // Each capture thread's track: the kernel thread that has its ring now (the capture's
  // "thread" lines), or, before any such line (an older capture), the thread number.
  struct Track {
    int64_t tid;
    std::string name;
  };
  absl::flat_hash_map<uint32_t, Track> track_of;
  std::map<int64_t, std::string> track_names;  // every track slices went on
  auto track = [&](uint32_t thread) -> const Track& {
    auto [it, added] = track_of.try_emplace(thread);
    if (added) it->second = Track{thread, absl::StrCat("memtrace thread ", thread)};
    return it->second;
  };
  // Ends the slices still open on a track at `ts`, so that B/E stay balanced.
  auto close_all = [&](int64_t tid, int64_t ts) {
    std::vector<uint32_t>& stack = open[tid];
    while (!stack.empty()) {
      trace.Add(trace.Common("E", ScopePath(summary, stack.back()), tid, ts) + "}");
      stack.pop_back();
    }
  };
  int64_t epoch_t = 0;
  bool in_epoch = false;
  Analyzer replay;
  // Counters of live bytes: the total, each layer and each scope. Events carry their
  // epoch's start and no finer time, so each counter shows, from an epoch's start, the
  // most it held during that epoch (a block allocated and freed within one is seen), and
  // where it ended lower, that end from the next epoch's start (or just after the last).
  struct Counter {
    std::string name;
    uint64_t high = 0;  // the most during the current epoch
    uint64_t end = 0;   // now
    uint64_t shown = 0;  // what the trace shows now
    bool touched = false, ever = false;
  };
  // "live bytes [...]" for the process and its layers, "live bytes: PATH" for scopes: no
  // scope path makes the one from the other.
  Counter total{"live bytes [total]"};
  std::map<uint32_t, Counter> layer_counters, scope_counters;
  auto touch = [](Counter& c, uint64_t now) {
    c.high = c.touched ? std::max(c.high, now) : std::max(c.end, now);
    c.end = now;
    c.touched = true;
  };
  replay.SetLiveChangeHook([&](uint32_t scope, uint32_t layer) {
    const CaptureSummary& st = replay.state();
    touch(total, st.totals.live_bytes);
    Counter& l = layer_counters[layer];
    if (l.name.empty()) {
      auto name = summary.layer_names.find(layer);
      l.name = absl::StrCat("live bytes [layer ",
                            name != summary.layer_names.end() ? name->second
                                                              : absl::StrCat(layer),
                            "]");
    }
    touch(l, st.layers.at(layer).live_bytes);
    Counter& s = scope_counters[scope];
    if (s.name.empty()) s.name = "live bytes: " + ScopePath(summary, scope);
    touch(s, st.scopes.at(scope).live_bytes);
  });
  auto emit = [&](Counter& c, uint64_t value, int64_t t) {
    if (c.ever && c.shown == value) return;
    c.shown = value;
    c.ever = true;
    trace.Add(absl::StrCat(trace.Common("C", c.name, 0, t - base), ",\"args\":{\"bytes\":",
                           value, "}}"));
  };
  // At `t`, the start of the epoch just ended: its highs; the ends of the epoch before
  // that drew a high above them.
  auto flush_counters = [&](int64_t t) {
    auto flush = [&](Counter& c) {
      if (c.touched) {
        emit(c, c.high, t);
        c.touched = false;
      } else {
        emit(c, c.end, t);
      }
    };
    flush(total);
    for (auto& [id, c] : layer_counters) flush(c);
    for (auto& [id, c] : scope_counters) flush(c);
  };
  CaptureReadStats stats;
  absl::Status read = ReadCapture(
      path,
      [&](const CaptureRecord& rec) {
        const bool is_event = rec.type >= LineType::kAlloc && rec.type <= LineType::kIntervalEnd;
        if (is_event) {
          if (!have_base) {
            base = rec.t;
            have_base = true;
          }
          // Counters once per epoch: the state at the end of the previous one.
          if (in_epoch && rec.t != epoch_t) flush_counters(epoch_t);
          epoch_t = rec.t;
          in_epoch = true;
          last_ts = std::max(last_ts, rec.t - base);
        }
        if (rec.type == LineType::kThread) {
          // Another thread has the ring from here: the last one, gone, ends its slices.
          if (const int64_t before = track(rec.thread).tid; before != rec.tid) {
            close_all(before, last_ts);
          }
          Track& t = track_of[rec.thread];
          t = Track{rec.tid, rec.name.empty() ? absl::StrCat("tid ", rec.tid)
                                              : absl::StrCat(rec.name, " (tid ", rec.tid, ")")};
          // The line again for the same thread is its new name, which its track takes.
          if (auto named = track_names.find(rec.tid); named != track_names.end()) {
            named->second = t.name;
          }
        }
        if (rec.type == LineType::kScopeEnter || rec.type == LineType::kScopeExit) {
          // Not before time zero (a scope entered before the sink opened).
          const int64_t ts = std::max<int64_t>(0, rec.mono_ns + mono_offset - base);
          last_ts = std::max(last_ts, ts);
          const Track& on = track(rec.thread);
          std::vector<uint32_t>& stack = open[on.tid];
          if (rec.type == LineType::kScopeEnter) {
            stack.push_back(rec.scope);
            track_names[on.tid] = on.name;
            trace.Add(trace.Common("B", ScopePath(summary, rec.scope), on.tid, ts) + "}");
          } else if (std::find(stack.begin(), stack.end(), rec.scope) != stack.end()) {
            // Close up to and including the scope (exits are innermost first).
            while (!stack.empty()) {
              const uint32_t top = stack.back();
              stack.pop_back();
              trace.Add(trace.Common("E", ScopePath(summary, top), on.tid, ts) + "}");
              if (top == rec.scope) break;
            }
          }  // an exit whose enter precedes the capture: no slice
        }
        return replay.Apply(rec);
      },
      &stats);
  if (!read.ok()) return read;
  if (in_epoch) {
    flush_counters(epoch_t);
    flush_counters(epoch_t + 1);  // the last epoch's ends, just after its highs
    last_ts = std::max(last_ts, epoch_t + 1 - base);
  }
  // Slices still open at the end of the capture end there, so B/E stay balanced.
  for (auto& [tid, stack] : open) close_all(tid, last_ts);
  if (summary.peak_event_index > 0) {
    trace.Add(absl::StrCat(trace.Common("i", "global peak", 0, summary.peak_t - base),
                           ",\"s\":\"g\",\"args\":{\"live_bytes\":",
                           summary.totals.high_water_bytes, ",\"event_index\":",
                           summary.peak_event_index, "}}"));
  }
  for (const AllocationAttribution& a : summary.attribution) {
    if (a.usage.live_bytes == 0) continue;
    const std::string site = SiteLabel(symbolizer, SiteFrames(summary, a.site, a.site_addr),
                                       allocators);
    trace.Add(absl::StrCat(trace.Common("i", "leak: " + ScopePath(summary, a.scope), 0, last_ts),
                           ",\"s\":\"g\",\"args\":{\"site\":", JsonQuote(site),
                           ",\"site_addr\":\"0x", absl::Hex(a.site_addr),
                           "\",\"live_bytes\":", a.usage.live_bytes,
                           ",\"live_blocks\":", a.usage.live_count, "}}"));
  }
  // Each track named after its thread: "NAME (tid T)", or for a capture without thread
  // lines "memtrace thread N" (the capture's number). In tid order: the same every run.
  for (const auto& [tid, name] : track_names) {
    trace.Add(absl::StrCat("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":", summary.pid,
                           ",\"tid\":", tid, ",\"ts\":0,\"args\":{\"name\":", JsonQuote(name),
                           "}}"));
  }
  // The process named after its program where the interposer's header says which.
  std::string process_name = "memtrace capture";
  if (!summary.process.argv.empty() && !summary.process.argv[0].empty()) {
    const std::string& program = summary.process.argv[0];
    process_name = program.substr(program.rfind('/') + 1);
  }
  trace.Add(absl::StrCat("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":", summary.pid,
                         ",\"tid\":0,\"ts\":0,\"args\":{\"name\":", JsonQuote(process_name),
                         "}}"));
  return trace.Finish(absl::StrCat("{\"capture\":", JsonQuote(path), ",\"sampled\":",
                                   summary.sampled ? "true" : "false", ",\"complete\":",
                                   summary.has_trailer && summary.trailer_complete &&
                                           !summary.checksum_differs
                                       ? "true"
                                       : "false",
                                   "}"));
}

// ---- folded ---------------------------------------------------------------------------------

std::string FoldedStacks(const CaptureSummary& summary, Symbolizer& symbolizer,
                         FoldedWeight weight) {
  std::map<std::string, uint64_t> stacks;
  for (const AllocationAttribution& a : summary.attribution) {
    const uint64_t w = weight == FoldedWeight::kBytes ? a.usage.allocated_bytes
                                                      : a.usage.allocation_calls;
    if (w == 0) continue;
    const std::vector<uint64_t> frames = SiteFrames(summary, a.site, a.site_addr);
    std::string line;
    auto add = [&](std::string name) {
      std::replace(name.begin(), name.end(), ';', ':');
      std::replace(name.begin(), name.end(), '\n', ' ');
      absl::StrAppend(&line, line.empty() ? "" : ";", name);
    };
    if (summary.StackMayBeCut(frames.size(),
                              [&] { return FrameName(symbolizer, frames.back()); })) {
      add(summary.CutStackFrame());
    }
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      add(FrameName(symbolizer, *it));
      // The functions inlined into it, outermost first: callers before callees.
      const std::vector<InlinedFrame>& inlined = symbolizer.Resolve(*it).inlined;
      for (auto in = inlined.rbegin(); in != inlined.rend(); ++in) add(in->function);
    }
    stacks[line] += w;
  }
  std::string out;
  for (const auto& [stack, w] : stacks) absl::StrAppend(&out, stack, " ", w, "\n");
  return out;
}

// ---- pprof ----------------------------------------------------------------------------------

namespace {

class StringTable {
 public:
  StringTable() { Index(""); }
  int64_t Index(const std::string& s) {
    auto [it, added] = index_.emplace(s, strings_.size());
    if (added) strings_.push_back(s);
    return static_cast<int64_t>(it->second);
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  absl::flat_hash_map<std::string, size_t> index_;
  std::vector<std::string> strings_;
};

absl::StatusOr<std::string> Gzip(const std::string& data) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("zlib: deflateInit2 failed");
  }
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return absl::InternalError(absl::StrCat("zlib: deflate returned ", rc));
  return out;
}

}  // namespace

absl::StatusOr<std::string> PprofProfile(const CaptureSummary& summary, Symbolizer& symbolizer,
                                         const AllocatorFunctions& allocators) {
  // profile.proto (github.com/google/pprof/proto/profile.proto) field numbers.
  enum : uint32_t {
    kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5,
    kStringTable = 6, kTimeNanos = 9, kPeriodType = 11, kPeriod = 12, kDefaultSampleType = 14,
  };
  StringTable strings;
  ProtoWriter profile;
  const char* kTypes[][2] = {{"alloc_objects", "count"}, {"alloc_space", "bytes"},
                             {"inuse_objects", "count"}, {"inuse_space", "bytes"}};
  for (const auto& [type, unit] : kTypes) {
    ProtoWriter vt;
    vt.Int64(1, strings.Index(type));
    vt.Int64(2, strings.Index(unit));
    profile.Message(kSampleType, vt);
  }
  // Mappings: one per module line, ids from 1.
  std::vector<const CaptureRecord*> modules;
  for (const CaptureRecord& m : summary.modules) {
    modules.push_back(&m);
    ProtoWriter mapping;
    mapping.Varint(1, modules.size());
    mapping.Varint(2, m.start);
    mapping.Varint(3, m.end);
    mapping.Varint(4, m.offset);
    mapping.Int64(5, strings.Index(m.path));
    mapping.Int64(6, strings.Index(m.build_id));
    mapping.Varint(7, 1);  // has_functions: names come with the profile
    profile.Message(kMapping, mapping);
  }
  // The last module line that covers pc: where an address range was reused, the later
  // line wins (docs/capture-format.md), as in the symbolizer.
  auto mapping_of = [&](uint64_t pc) -> uint64_t {
    for (size_t i = modules.size(); i-- > 0;) {
      if (pc >= modules[i]->start && pc < modules[i]->end) return i + 1;
    }
    return 0;
  };
  // A location is a pc and how many of the functions inlined there it leaves out: a
  // stack's innermost location starts at the function its site is named after (FindCaller),
  // which may be inlined, with the allocator's and the library's inlined functions left out.
  // pprof tells locations of one address apart by their lines.
  absl::flat_hash_map<std::pair<uint64_t, size_t>, uint64_t> location_ids;  // -> id
  absl::flat_hash_map<std::string, uint64_t> function_ids;  // name + file -> id
  // A line of `loc` in function `name` of `file`, the function made the first time.
  auto add_line = [&](ProtoWriter& loc, const std::string& name, const std::string& file,
                      uint32_t at) {
    auto [fn, new_function] = function_ids.emplace(name + '\0' + file, function_ids.size() + 1);
    if (new_function) {
      ProtoWriter function;
      function.Varint(1, fn->second);
      function.Int64(2, strings.Index(name));
      function.Int64(3, strings.Index(name));
      function.Int64(4, strings.Index(file));
      profile.Message(kFunction, function);
    }
    ProtoWriter line;
    line.Varint(1, fn->second);
    line.Int64(2, at);
    loc.Message(4, line);
  };
  auto location = [&](uint64_t pc, size_t inlined_left_out) {
    auto [it, added] =
        location_ids.emplace(std::make_pair(pc, inlined_left_out), location_ids.size() + 1);
    if (!added) return it->second;
    const SymbolizedFrame& f = symbolizer.Resolve(pc);
    ProtoWriter loc;
    loc.Varint(1, it->second);
    if (const uint64_t mapping = mapping_of(pc); mapping != 0) loc.Varint(2, mapping);
    loc.Varint(3, pc);
    // One line per function at pc: the inlined ones innermost first, then the frame's own
    // function, the caller they were all inlined into (pprof's order).
    for (size_t k = inlined_left_out; k < f.inlined.size(); ++k) {
      add_line(loc, f.inlined[k].function, f.inlined[k].file, f.inlined[k].line);
    }
    add_line(loc, FrameName(symbolizer, pc), f.file, f.line);
    profile.Message(kLocation, loc);
    return it->second;
  };
  // The root of a stack that may have lost its outermost callers: a location of its own,
  // made once, with no address.
  uint64_t cut_location = 0;
  auto cut = [&] {
    if (cut_location != 0) return cut_location;
    cut_location = location_ids.size() + 1;
    location_ids.emplace(std::make_pair(uint64_t{0}, ~size_t{0}), cut_location);
    ProtoWriter loc;
    loc.Varint(1, cut_location);
    add_line(loc, summary.CutStackFrame(), "", 0);
    profile.Message(kLocation, loc);
    return cut_location;
  };
  const int64_t scope_key = strings.Index("scope");
  const int64_t layer_key = strings.Index("layer");
  for (const AllocationAttribution& a : summary.attribution) {
    ProtoWriter sample;
    std::vector<uint64_t> ids;
    const std::vector<uint64_t> frames = SiteFrames(summary, a.site, a.site_addr);
    // Left out: the frames `top` passes over to name the site (allocator functions, then
    // the container library's), inlined ones included, so that the leaf is the function
    // the site is named after.
    const StackCaller caller = FindCaller(symbolizer, frames, allocators);
    for (size_t i = caller.frame; i < frames.size(); ++i) {
      ids.push_back(location(frames[i], i == caller.frame ? caller.inlined : 0));
    }
    if (summary.StackMayBeCut(frames.size(),
                              [&] { return FrameName(symbolizer, frames.back()); })) {
      ids.push_back(cut());  // the root, last
    }
    sample.Packed(1, ids);
    sample.Packed(2, {a.usage.allocated_count, a.usage.allocated_bytes, a.usage.live_count,
                      a.usage.live_bytes});
    auto label = [&](int64_t key, const std::string& value) {
      ProtoWriter l;
      l.Int64(1, key);
      l.Int64(2, strings.Index(value));
      sample.Message(3, l);
    };
    label(scope_key, ScopePath(summary, a.scope));
    auto layer = summary.layer_names.find(a.layer);
    label(layer_key, layer != summary.layer_names.end() ? layer->second : absl::StrCat(a.layer));
    profile.Message(kSample, sample);
  }
  ProtoWriter period_type;
  period_type.Int64(1, strings.Index("space"));
  period_type.Int64(2, strings.Index("bytes"));
  profile.Message(kPeriodType, period_type);
  profile.Int64(kPeriod, static_cast<int64_t>(summary.sample_interval_bytes));
  profile.Int64(kTimeNanos, summary.started_unix_ns);
  profile.Int64(kDefaultSampleType, strings.Index("inuse_space"));
  for (const std::string& s : strings.strings()) profile.Bytes(kStringTable, s);
  return Gzip(profile.data());
}

}  // namespace memtrace
