// Copyright 2026 The memtrace Authors.

#include "report/html_report.h"

#include "analysis/allocator_frames.h"
#include "analysis/symbolizer.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/analyzer.h"
#include "analysis/capture_filters.h"
#include "analysis/capture_reader.h"
#include "analysis/difference.h"
#include "analysis/output_file.h"
#include "analysis/site_groups.h"
#include "analysis/timeline.h"
#include "analysis/trailer.h"
#include "report/report_assets.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

namespace memtrace {
namespace {

// What the first pass keeps beside the Analyzer's summary: the header, call stacks and
// modules, for naming frames.
struct CaptureTables {
  std::string header = "{}";
  absl::flat_hash_map<uint32_t, std::vector<uint64_t>> site_frames;  // only sites with frames
  std::set<uint32_t> other_sites;  // the bucket for sites beyond the site table
  struct Module {
    uint64_t start, end, offset;
    std::string path;
  };
  std::vector<Module> modules;
  std::vector<CaptureRecord> module_records;  // for the symbolizer
  std::map<uint32_t, uint64_t> thread_bytes;  // thread -> bytes its allocations asked for
  CaptureReadStats stats;
};

// Names frames through the caller's describer, or the symbolizer (function (file:line)
// from the capture's module map, analysis/symbolizer.h), or "module+0xoffset", or
// "0x<hex>"; each address once.
class FrameNames {
 public:
  FrameNames(const ReportOptions& options, const CaptureTables& tables)
      : describe_(options.describe_frame), allocators_(options.allocators), tables_(tables) {
    if (!describe_ && options.symbolize && !tables.module_records.empty()) {
      for (const CaptureRecord& m : tables.module_records) symbolizer_.AddModule(m);
      symbolizer_.set_progress(options.progress);
      use_symbolizer_ = true;
    }
  }

  std::string Describe(uint64_t pc) {
    auto it = cache_.find(pc);
    if (it != cache_.end()) return it->second;
    std::string name = describe_         ? describe_(pc)
                       : use_symbolizer_ ? symbolizer_.Describe(pc)
                                         : Default(pc);
    cache_.emplace(pc, name);
    return name;
  }

  // A call site's name from its stack (innermost first): after its first frame outside
  // the allocator when the symbolizer names functions (analysis/allocator_frames.h).
  std::string Site(const std::vector<uint64_t>& frames) {
    if (frames.empty()) return {};
    if (describe_ || !use_symbolizer_) return Describe(frames[0]);
    return SiteLabel(symbolizer_, frames, allocators_);
  }

  // A frame's name in the flame graph: its function, so that the lines of one function
  // are one box; Describe() where the function is unknown or a describer names frames.
  std::string Function(uint64_t pc) {
    if (describe_ || !use_symbolizer_) return Describe(pc);
    const SymbolizedFrame& f = symbolizer_.Resolve(pc);
    return f.function != "??" ? f.function : Describe(pc);  // "??": Symbolizer::Resolve's unknown
  }

  // An index into names() for `name`, which the flame graph uses.
  uint32_t Index(const std::string& name) {
    auto [it, added] = index_.emplace(name, static_cast<uint32_t>(names_.size()));
    if (added) names_.push_back(name);
    return it->second;
  }
  const std::vector<std::string>& names() const { return names_; }

  // The functions inlined into the function at pc, innermost first: none unless the
  // symbolizer names frames.
  const std::vector<InlinedFrame>& Inlined(uint64_t pc) {
    static const std::vector<InlinedFrame> kNone;
    return use_symbolizer_ && !describe_ ? symbolizer_.Resolve(pc).inlined : kNone;
  }

  // The modules whose frames the symbolizer named "??" so far (Symbolizer::Unresolved()).
  std::vector<UnresolvedModule> Unresolved() const {
    return use_symbolizer_ ? symbolizer_.Unresolved() : std::vector<UnresolvedModule>{};
  }

 private:
  std::string Default(uint64_t pc) const {
    // The last module line that covers pc: where an address range was reused, the later
    // line wins (docs/capture-format.md), as in the symbolizer.
    for (auto it = tables_.modules.rbegin(); it != tables_.modules.rend(); ++it) {
      const auto& m = *it;
      if (pc >= m.start && pc < m.end) {
        const size_t slash = m.path.rfind('/');
        return absl::StrCat(slash == std::string::npos ? m.path : m.path.substr(slash + 1),
                            "+0x", absl::Hex(pc - m.start + m.offset));
      }
    }
    return absl::StrCat("0x", absl::Hex(pc));
  }

  std::function<std::string(uint64_t)> describe_;
  const AllocatorFunctions& allocators_;
  const CaptureTables& tables_;
  Symbolizer symbolizer_;
  bool use_symbolizer_ = false;
  absl::flat_hash_map<uint64_t, std::string> cache_;
  absl::flat_hash_map<std::string, uint32_t> index_;
  std::vector<std::string> names_;
};

// A JSON array of the values `fn` gives for each element.
template <typename T, typename F>
std::string JsonArray(const std::vector<T>& items, F fn) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    absl::StrAppend(&out, fn(items[i]));
  }
  out += ']';
  return out;
}

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// JSON text safe inside a <script> element: '<' can only occur inside JSON strings, where
// \u003c means the same, so "</script>" and "<!--" never appear.
std::string ScriptSafe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Path(const CaptureSummary& s, uint32_t scope) {
  auto it = s.scope_paths.find(scope);
  return it != s.scope_paths.end() ? it->second : absl::StrCat("scope ", scope);
}

std::string LayerName(const CaptureSummary& s, uint32_t layer) {
  auto it = s.layer_names.find(layer);
  return it != s.layer_names.end() ? it->second : absl::StrCat("layer ", layer);
}

std::string SiteName(const CaptureSummary& s, const CaptureTables& tables, FrameNames& names,
                     uint32_t site) {
  if (tables.other_sites.count(site) > 0) return std::string(kOtherSites);
  auto it = s.site_addrs.find(site);
  if (it == s.site_addrs.end()) return absl::StrCat("site ", site);
  auto frames = s.site_frames.find(site);
  return frames != s.site_frames.end() ? names.Site(frames->second) : names.Describe(it->second);
}

// {"shown":N,"total":M,"rows":[...]} for the first `top` rows.
template <typename T, typename F>
std::string JsonTable(const std::vector<T>& rows, uint64_t top, F row) {
  std::vector<T> shown(rows.begin(), rows.begin() + std::min<size_t>(rows.size(), top));
  return absl::StrCat("{\"shown\":", shown.size(), ",\"total\":", rows.size(),
                      ",\"rows\":", JsonArray(shown, row), "}");
}

// The series as the page's data; with `scopes_only`, only the total and the scope series
// (a thread view's: its layers are the whole page's, and census and the recorder's
// samples belong to the process).
std::string JsonTimeline(const Timeline& timeline, bool scopes_only = false) {
  auto kind = [](TimelineSeries::Kind k) {
    switch (k) {
      case TimelineSeries::Kind::kTotal: return "total";
      case TimelineSeries::Kind::kLayer: return "layer";
      case TimelineSeries::Kind::kScope: return "scope";
      case TimelineSeries::Kind::kOtherScopes: return "other";
      case TimelineSeries::Kind::kCensus: return "census";
      case TimelineSeries::Kind::kResident: return "resident";
      case TimelineSeries::Kind::kSampledLive: return "sampled";
    }
    return "";
  };
  auto point = [](const TimelinePoint& p) {
    return absl::StrCat("[", p.event, ",", p.t, ",", p.value, "]");
  };
  std::vector<const TimelineSeries*> kept;
  std::vector<size_t> position(timeline.series.size());  // index in `kept`
  for (size_t i = 0; i < timeline.series.size(); ++i) {
    const TimelineSeries::Kind k = timeline.series[i].kind;
    if (scopes_only && k != TimelineSeries::Kind::kTotal && k != TimelineSeries::Kind::kScope &&
        k != TimelineSeries::Kind::kOtherScopes) {
      continue;
    }
    position[i] = kept.size();
    kept.push_back(&timeline.series[i]);
  }
  std::string series = JsonArray(kept, [&](const TimelineSeries* one) {
    const TimelineSeries& s = *one;
    return absl::StrCat(
        "{\"name\":", JsonQuote(s.name), ",\"kind\":\"", kind(s.kind), "\",\"id\":", s.id,
        ",\"hw\":", point(s.high_water),
        ",\"e\":", JsonArray(s.points, [](const TimelinePoint& p) { return p.event; }),
        ",\"t\":", JsonArray(s.points, [](const TimelinePoint& p) { return p.t; }),
        ",\"v\":", JsonArray(s.points, [](const TimelinePoint& p) { return p.value; }), "}");
  });
  std::string stack = absl::StrCat(
      "{\"series\":", JsonArray(timeline.stack_series, [&](size_t i) { return position[i]; }),
      ",\"e\":", JsonArray(timeline.stack_moments, [](const TimelinePoint& p) { return p.event; }),
      ",\"t\":", JsonArray(timeline.stack_moments, [](const TimelinePoint& p) { return p.t; }),
      ",\"v\":", JsonArray(timeline.stack_values, [](const std::vector<int64_t>& v) {
        return JsonArray(v, [](int64_t x) { return x; });
      }),
      "}");
  return absl::StrCat("{\"events\":", timeline.events,
                      ",\"events_per_bucket\":", timeline.events_per_bucket,
                      ",\"first_t\":\"", timeline.first_t, "\",\"duration_ns\":",
                      timeline.last_t - timeline.first_t,
                      ",\"scopes_total\":", timeline.scopes_total,
                      ",\"scopes_drawn\":", timeline.scopes_drawn,
                      ",\"census_total\":", timeline.census_total,
                      ",\"census_drawn\":", timeline.census_drawn, ",\"series\":", series,
                      ",\"stack\":", stack, "}");
}

// The flame graph's stacks: the sites with the largest share of live-at-peak or allocated
// bytes, each as frame-name indices from the outermost caller in; the rest as one stack.
std::string JsonFlame(const CaptureSummary& s, const CaptureTables& tables,
                      const PeakComposition& peak, uint64_t max_sites, FrameNames& names) {
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> by_site;  // site -> (live, allocated)
  for (const auto& [site, bytes] : peak.by_site) by_site[site].first += bytes;
  for (const AllocationAttribution& a : s.attribution) {
    by_site[a.site].second += a.usage.allocated_bytes;
  }
  uint64_t live_total = 0, alloc_total = 0;
  for (const auto& [site, v] : by_site) {
    live_total += v.first;
    alloc_total += v.second;
  }
  auto share = [](uint64_t part, uint64_t whole) {
    return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
  };
  std::vector<std::pair<double, uint32_t>> ranked;
  for (const auto& [site, v] : by_site) {
    ranked.emplace_back(std::max(share(v.first, live_total), share(v.second, alloc_total)),
                        site);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  struct Stack {
    std::vector<uint32_t> frames;
    uint64_t live, alloc;
  };
  std::vector<Stack> stacks;
  Stack rest{{names.Index("(other call stacks)")}, 0, 0};
  for (size_t i = 0; i < ranked.size(); ++i) {
    const uint32_t site = ranked[i].second;
    const auto [live, alloc] = by_site[site];
    if (i >= max_sites) {
      rest.live += live;
      rest.alloc += alloc;
      continue;
    }
    Stack st{{}, live, alloc};
    auto frames = tables.site_frames.find(site);
    if (frames != tables.site_frames.end() && tables.other_sites.count(site) == 0) {
      // A stack as deep as the capture keeps may have lost its outermost callers: said by a
      // frame of its own at its root, so that it does not read as the program's entry.
      if (s.StackMayBeCut(frames->second.size(),
                          [&] { return names.Function(frames->second.back()); })) {
        st.frames.push_back(names.Index(s.CutStackFrame()));
      }
      for (auto f = frames->second.rbegin(); f != frames->second.rend(); ++f) {
        st.frames.push_back(names.Index(names.Function(*f)));
        // The functions inlined into it, outermost first, as frames of their own.
        const std::vector<InlinedFrame>& inlined = names.Inlined(*f);
        for (auto in = inlined.rbegin(); in != inlined.rend(); ++in) {
          st.frames.push_back(names.Index(in->function));
        }
      }
    } else {
      st.frames.push_back(names.Index(SiteName(s, tables, names, site)));
    }
    stacks.push_back(std::move(st));
  }
  if (ranked.size() > max_sites) stacks.push_back(rest);
  std::string json_stacks = JsonArray(stacks, [](const Stack& st) {
    return absl::StrCat("{\"f\":", JsonArray(st.frames, [](uint32_t f) { return f; }),
                        ",\"live\":", st.live, ",\"alloc\":", st.alloc, "}");
  });
  return absl::StrCat("{\"sites_total\":", ranked.size(),
                      ",\"sites_shown\":", std::min<uint64_t>(ranked.size(), max_sites),
                      ",\"has_stacks\":", tables.site_frames.empty() ? "false" : "true",
                      ",\"stacks\":", json_stacks,
                      ",\"names\":", JsonArray(names.names(), JsonQuote), "}");
}

// The stacks under a call-site row that adds up several (SiteGroup::stacks), for the page
// to unfold: each stack's frames, innermost first, as indices into one table of frame
// names (function (file:line)), and its own counts. At most `row_stacks` per row and
// `listed_stacks` per page; the rest are counted, not listed.
class StackLists {
 public:
  StackLists(const ReportOptions& options, const CaptureSummary& s, const CaptureTables& tables,
             FrameNames& names)
      : per_row_(options.row_stacks), budget_(options.listed_stacks), summary_(s),
        tables_(tables), names_(names) {}

  // "null" for a row of one stack, else {"total":N,"rows":[[frames, allocated bytes,
  // allocations, live bytes, live blocks, temporaries], ...]} for its largest stacks.
  std::string Json(const SiteGroup& g) {
    if (g.stacks.size() < 2) return "null";
    const size_t listed = std::min<uint64_t>({g.stacks.size(), per_row_, budget_});
    budget_ -= listed;
    std::vector<AllocationAttribution> shown(g.stacks.begin(), g.stacks.begin() + listed);
    return absl::StrCat(
        "{\"total\":", g.stacks.size(), ",\"rows\":",
        JsonArray(shown,
                  [&](const AllocationAttribution& a) {
                    const UsageCounters& u = a.usage;
                    return absl::StrCat("[", JsonArray(Frames(a.site), [](uint32_t f) { return f; }),
                                        ",", u.allocated_bytes, ",", u.allocated_count, ",",
                                        u.live_bytes, ",", u.live_count, ",", a.temporaries, "]");
                  }),
        "}");
  }
  const std::vector<std::string>& names() const { return frame_names_; }

 private:
  std::vector<uint32_t> Frames(uint32_t site) {
    if (tables_.other_sites.count(site) > 0) return {Index(std::string(kOtherSites))};
    std::vector<uint32_t> out;
    if (auto f = summary_.site_frames.find(site); f != summary_.site_frames.end()) {
      for (uint64_t pc : f->second) out.push_back(Index(names_.Describe(pc)));
    } else if (auto a = summary_.site_addrs.find(site); a != summary_.site_addrs.end()) {
      out.push_back(Index(names_.Describe(a->second)));
    } else {
      out.push_back(Index(absl::StrCat("site ", site)));
    }
    return out;
  }
  uint32_t Index(const std::string& name) {
    auto [it, added] = index_.emplace(name, static_cast<uint32_t>(frame_names_.size()));
    if (added) frame_names_.push_back(name);
    return it->second;
  }

  const uint64_t per_row_;
  uint64_t budget_;
  const CaptureSummary& summary_;
  const CaptureTables& tables_;
  FrameNames& names_;
  absl::flat_hash_map<std::string, uint32_t> index_;
  std::vector<std::string> frame_names_;
};

// Call sites grouped by name, scope and layer (analysis/site_groups.h), largest allocated
// first: the rows of the call-site tables.
std::vector<SiteGroup> SiteRows(const CaptureSummary& s,
                                const std::function<std::string(uint32_t)>& site_name) {
  return GroupSitesByName(
      s.attribution, site_name,
      [](const UsageCounters& u, uint64_t, uint64_t) { return u.allocated_bytes; });
}

// One view of the page for some threads' blocks (Analyzer::SetThreadViews()): one thread
// among those that allocated the most bytes, or all the others together.
struct ThreadView {
  std::string name;
  std::optional<uint32_t> thread;  // none: "other threads"
  uint64_t allocated = 0;          // the bytes its allocations asked for (first pass)
};

// The views as the replay dispatches the blocks to them, by their allocating thread.
Analyzer::ThreadViews DispatchOf(const std::vector<ThreadView>& views) {
  Analyzer::ThreadViews out;
  out.count = static_cast<uint32_t>(views.size());
  for (uint32_t i = 0; i < views.size(); ++i) {
    if (views[i].thread) {
      out.view_of[*views[i].thread] = i;
    } else {
      out.others = i;
    }
  }
  return out;
}

// A thread view's name: "thread N", with the kernel threads that had its ring where the
// capture names them ("thread 2 (worker tid 4711, worker tid 4720)"; the first three).
std::string ThreadViewName(uint32_t thread,
                           const std::vector<CaptureSummary::KernelThread>& kernel) {
  std::vector<std::string> held;
  for (const CaptureSummary::KernelThread& k : kernel) {
    if (k.thread != thread) continue;
    held.push_back(k.name.empty() ? absl::StrCat("tid ", k.tid)
                                  : absl::StrCat(k.name, " tid ", k.tid));
  }
  if (held.empty()) return absl::StrCat("thread ", thread);
  constexpr size_t kListed = 3;
  const size_t more = held.size() > kListed ? held.size() - kListed : 0;
  held.resize(std::min(held.size(), kListed));
  return absl::StrCat("thread ", thread, " (", absl::StrJoin(held, ", "),
                      more != 0 ? absl::StrCat(" and ", more, " more") : "", ")");
}

// The views: none unless two threads or more allocated; else the `thread_views` threads
// that allocated the most bytes (ties: the lower id), and one for the rest, if any.
std::vector<ThreadView> ChooseThreadViews(const CaptureTables& tables,
                                          const std::vector<CaptureSummary::KernelThread>& kernel,
                                          const ReportOptions& options) {
  std::vector<ThreadView> views;
  if (tables.thread_bytes.size() < 2 || options.thread_views == 0) return views;
  std::vector<std::pair<uint64_t, uint32_t>> ranked;  // (bytes, thread)
  for (const auto& [thread, bytes] : tables.thread_bytes) ranked.emplace_back(bytes, thread);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  const size_t own = std::min<uint64_t>(ranked.size(), options.thread_views);
  for (size_t i = 0; i < own; ++i) {
    const uint32_t thread = ranked[i].second;
    views.push_back(ThreadView{ThreadViewName(thread, kernel), thread, ranked[i].first});
  }
  if (own < ranked.size()) {
    ThreadView rest{absl::StrCat("other threads (", ranked.size() - own, ")"), std::nullopt, 0};
    for (size_t i = own; i < ranked.size(); ++i) rest.allocated += ranked[i].first;
    views.push_back(std::move(rest));
  }
  return views;
}

// What the page shows of one thread view: its summary (the counters of its blocks) and
// its series.
struct ThreadViewData {
  CaptureSummary summary;
  Timeline timeline;
};

// The baseline capture ("Compared with"): its first pass, as the report's own.
struct Baseline {
  std::string path;
  CaptureSummary summary;
  CaptureTables tables;
};

// The differences from the baseline, by scope (Compare()) and by call site
// (CompareSites(), each capture's sites named as the page names them).
std::string BaselineJson(const Baseline& base, const CaptureSummary& s,
                         const std::function<std::string(uint32_t)>& site_name,
                         const ReportOptions& options) {
  FrameNames base_names(options, base.tables);
  const std::vector<Difference> scopes = Compare(base.summary, s);
  const std::vector<Difference> sites = CompareSites(
      base.summary,
      [&](uint32_t site) { return SiteName(base.summary, base.tables, base_names, site); }, s,
      site_name);
  auto delta = [](uint64_t before, uint64_t after) {
    return static_cast<int64_t>(after) - static_cast<int64_t>(before);
  };
  return absl::StrCat(
      "{\"path\":", JsonQuote(base.path), ",\"verdict\":\"", VerdictWord(base.summary),
      "\",\"events\":", base.summary.events, ",\"scopes\":",
      JsonTable(scopes, options.top,
                [&](const Difference& d) {
                  return absl::StrCat("[", JsonQuote(d.path), ",", d.before.live_bytes, ",",
                                      d.after.live_bytes, ",", d.live_delta(), ",",
                                      d.before.high_water_bytes, ",", d.after.high_water_bytes,
                                      ",", d.high_water_delta(), ",", d.before.allocated_bytes,
                                      ",", d.after.allocated_bytes, ",", d.allocated_delta(),
                                      "]");
                }),
      ",\"sites\":",
      JsonTable(sites, options.top,
                [&](const Difference& d) {
                  return absl::StrCat(
                      "[", JsonQuote(d.path), ",", d.before.live_bytes, ",", d.after.live_bytes,
                      ",", d.live_delta(), ",", d.before.allocated_bytes, ",",
                      d.after.allocated_bytes, ",", d.allocated_delta(), ",",
                      delta(d.before.allocated_count, d.after.allocated_count), "]");
                }),
      "}");
}

// The capture's recording filters (analysis/capture_filters.h), as members of its object:
// "filters" (the array `memtrace summary --json` gives), "filter_statements" (what each
// left out, in words) and "exact_for" (what "exact" holds for; "" with none).
std::string FiltersJson(const CaptureSummary& s) {
  std::optional<TrailerBlocks> trailer;
  if (s.has_trailer) {
    if (absl::StatusOr<TrailerBlocks> t = ParseTrailer(s.trailer); t.ok()) trailer = *std::move(t);
  }
  const CaptureFilters filters = CaptureFilters::Of(s, trailer ? &*trailer : nullptr);
  return absl::StrCat(",\"filters\":", filters.Json(), ",\"filter_statements\":",
                      JsonArray(filters.Statements(), JsonQuote),
                      ",\"exact_for\":", JsonQuote(filters.ExactFor()));
}

// The thread views' part of the data: null without views.
std::string ThreadsJson(const CaptureTables& tables, const std::vector<ThreadView>& views,
                        const std::vector<ThreadViewData>& data,
                        const std::function<std::string(uint32_t)>& site_name,
                        const std::function<std::string(const SiteGroup&)>& site_row,
                        const ReportOptions& options) {
  if (views.empty()) return "null";
  std::string out;
  for (size_t i = 0; i < views.size(); ++i) {
    const ThreadView& v = views[i];
    absl::StrAppend(&out, i > 0 ? "," : "", "{\"name\":", JsonQuote(v.name), ",\"thread\":",
                    v.thread ? absl::StrCat(*v.thread) : "null", ",\"allocated\":",
                    data[i].summary.totals.allocated_bytes, ",\"sites\":",
                    JsonTable(SiteRows(data[i].summary, site_name), options.thread_top, site_row),
                    ",\"timeline\":", JsonTimeline(data[i].timeline, /*scopes_only=*/true), "}");
  }
  return absl::StrCat("{\"total\":", tables.thread_bytes.size(), ",\"views\":[", out, "]}");
}

std::string JsonData(const std::string& capture_path, const CaptureSummary& s,
                     const CaptureTables& tables, const Timeline& timeline,
                     const PeakComposition& peak, const std::vector<ThreadView>& views,
                     const std::vector<ThreadViewData>& view_data, const Baseline* baseline,
                     const ReportOptions& options) {
  FrameNames names(options, tables);
  const auto site_name = [&](uint32_t site) { return SiteName(s, tables, names, site); };
  const std::string verdict = VerdictWord(s);
  std::string capture = absl::StrCat(
      "{\"path\":", JsonQuote(capture_path), ",\"pid\":", s.pid, ",\"verdict\":\"", verdict,
      "\",\"events\":", s.events, ",\"lines\":", tables.stats.lines,
      ",\"bytes\":", tables.stats.bytes, ",\"live_blocks\":", s.live_blocks,
      ",\"unmatched_releases\":", s.unmatched_releases, ",\"temporaries\":", s.temporaries,
      ",\"temporary_bytes\":", s.temporary_bytes, ",\"short_lived\":", s.short_lived,
      ",\"short_lived_bytes\":", s.short_lived_bytes, ",\"totals\":", JsonUsage(s.totals),
      FiltersJson(s), "}");

  // Peak composition.
  std::string peak_json = absl::StrCat(
      "{\"event\":", peak.event_index, ",\"t\":", peak.t - timeline.first_t,
      ",\"live\":", peak.live_bytes, ",\"by_scope\":",
      JsonTable(peak.by_scope, options.peak_bars,
                [&](const std::pair<uint32_t, uint64_t>& p) {
                  return absl::StrCat("[", JsonQuote(Path(s, p.first)), ",", p.second, "]");
                }),
      ",\"by_site\":",
      JsonTable(GroupSiteBytesByName(peak.by_site, site_name), options.peak_bars,
                [&](const NamedSiteBytes& g) {
                  return absl::StrCat("[", JsonQuote(g.name + StacksNote(g.sites.size())), ",",
                                      g.bytes, "]");
                }),
      "}");

  // Tables. Stacks that read the same are one row (analysis/site_groups.h), which lists
  // them after its columns.
  const std::vector<SiteGroup> sites = SiteRows(s, site_name);
  StackLists stacks(options, s, tables, names);
  const std::function<std::string(const SiteGroup&)> site_row = [&](const SiteGroup& g) {
    return absl::StrCat("[", JsonQuote(g.name + StacksNote(g.stacks.size())), ",",
                        JsonQuote(Path(s, g.scope)), ",", JsonQuote(LayerName(s, g.layer)), ",",
                        g.usage.allocated_bytes, ",", g.usage.allocated_count, ",",
                        g.usage.live_bytes, ",", g.usage.live_count, ",", g.temporaries, ",",
                        stacks.Json(g), "]");
  };
  std::vector<SiteGroup> leaks;
  for (const SiteGroup& g : sites) {
    if (g.usage.live_bytes > 0 || g.usage.live_count > 0) leaks.push_back(g);
  }
  std::stable_sort(leaks.begin(), leaks.end(), [](const SiteGroup& a, const SiteGroup& b) {
    return a.usage.live_bytes > b.usage.live_bytes;
  });
  std::vector<std::pair<uint32_t, UsageCounters>> scopes(s.scopes.begin(), s.scopes.end());
  std::sort(scopes.begin(), scopes.end(), [](const auto& a, const auto& b) {
    if (a.second.high_water_bytes != b.second.high_water_bytes) {
      return a.second.high_water_bytes > b.second.high_water_bytes;
    }
    return a.first < b.first;
  });
  auto usage_row = [&s](const std::string& name, const UsageCounters& u) {
    return absl::StrCat("[", JsonQuote(name), ",", u.live_bytes, ",", u.live_count, ",",
                        u.high_water_bytes, ",", JsonQuote(FormatPeakBound(u, s.sampled)), ",",
                        u.allocated_bytes, ",", u.allocated_count, ",", u.freed_bytes, ",",
                        u.freed_count, "]");
  };
  std::vector<Retention> retention = s.retention;
  std::sort(retention.begin(), retention.end(), [](const auto& a, const auto& b) {
    return a.retained_bytes != b.retained_bytes ? a.retained_bytes > b.retained_bytes
                                                : a.scope < b.scope;
  });
  std::vector<std::pair<uint32_t, UsageCounters>> layers(s.layers.begin(), s.layers.end());
  // In this order: the call sites' rows list their stacks before the leaks' (StackLists'
  // budget), and StrCat's arguments may be evaluated in any order.
  const std::string sites_json = JsonTable(sites, options.top, site_row);
  const std::string leaks_json = JsonTable(leaks, options.top, site_row);
  std::string tables_json = absl::StrCat(
      "{\"sites\":", sites_json, ",\"leaks\":", leaks_json,
      ",\"scopes\":",
      JsonTable(scopes, options.top,
                [&](const auto& p) { return usage_row(Path(s, p.first), p.second); }),
      ",\"layers\":",
      JsonTable(layers, ~uint64_t{0},
                [&](const auto& p) { return usage_row(LayerName(s, p.first), p.second); }),
      ",\"retention\":", JsonTable(retention, options.top, [&](const Retention& r) {
        return absl::StrCat("[", JsonQuote(Path(s, r.scope)), ",", r.exits, ",",
                            r.exits_retaining, ",", r.retained_blocks, ",", r.retained_bytes,
                            "]");
      }),
      "}");

  const std::string threads =
      ThreadsJson(tables, views, view_data, site_name, site_row, options);
  const std::string compared =
      baseline != nullptr ? BaselineJson(*baseline, s, site_name, options) : "null";
  const std::string flame = JsonFlame(s, tables, peak, options.flame_sites, names);
  // Last: every frame above has been named by now.
  const std::string unresolved = UnresolvedJson(names.Unresolved());
  return absl::StrCat("{\"format\":\"memtrace-report\",\"version\":1,\"capture\":", capture,
                      ",\"header\":", tables.header,
                      ",\"trailer\":", s.has_trailer ? s.trailer : std::string("null"),
                      ",\"timeline\":", JsonTimeline(timeline), ",\"peak\":", peak_json,
                      ",\"tables\":", tables_json,
                      ",\"stack_frames\":", JsonArray(stacks.names(), JsonQuote),
                      ",\"threads\":", threads, ",\"baseline\":", compared,
                      ",\"flame\":", flame, ",\"unresolved\":", unresolved, "}");
}

absl::StatusOr<CaptureSummary> FirstPass(const std::string& capture_path,
                                         CaptureTables* tables) {
  Analyzer first;
  // The tables the report needs beside the summary.
  auto note_tables = [&](const CaptureRecord& rec) {
    switch (rec.type) {
      case LineType::kHeader:
        tables->header = rec.raw.empty() ? "{}" : rec.raw;
        break;
      case LineType::kSite:
        if (rec.other) tables->other_sites.insert(rec.id);
        if (!rec.frames.empty()) tables->site_frames[rec.id] = rec.frames;
        break;
      case LineType::kModule:
        tables->modules.push_back({rec.start, rec.end, rec.offset, rec.path});
        tables->module_records.push_back(rec);
        break;
      case LineType::kAlloc:
        // As the Analyzer counts a sampled block: its size times its weight.
        tables->thread_bytes[rec.thread] += static_cast<uint64_t>(
            std::llround(static_cast<double>(rec.size) * rec.weight));
        break;
      default:
        break;
    }
    return absl::OkStatus();
  };
  // The state is read only at the end.
  if (absl::Status s = first.ApplyFile(capture_path, &tables->stats, {}, note_tables);
      !s.ok()) {
    return s;
  }
  return first.FinishFile(capture_path, tables->stats);
}

}  // namespace

absl::StatusOr<std::string> RenderHtmlReport(const std::string& capture_path,
                                             const ReportOptions& options) {
  // First pass: totals, tables, the global high-water moment, call stacks and modules.
  // The Analyzer goes out of scope before the second pass, so only one live set is held.
  CaptureTables tables;
  absl::StatusOr<CaptureSummary> first = FirstPass(capture_path, &tables);
  if (!first.ok()) return first.status();
  const CaptureSummary& summary = *first;

  // The threads with views of their own, and the baseline's first pass.
  const std::vector<ThreadView> views =
      ChooseThreadViews(tables, summary.kernel_threads, options);
  std::unique_ptr<Baseline> baseline;
  if (!options.baseline.empty()) {
    baseline = std::make_unique<Baseline>();
    baseline->path = options.baseline;
    absl::StatusOr<CaptureSummary> base = FirstPass(options.baseline, &baseline->tables);
    if (!base.ok()) {
      return absl::Status(base.status().code(),
                          absl::StrCat("the baseline (--baseline): ", base.status().message()));
    }
    baseline->summary = *std::move(base);
  }

  // Second pass, with thread views only: the counters of each view's blocks, which choose
  // the scopes its series draw. One replay for all the views: its ledger matches each
  // release once, and the counting goes to the view of the block's allocating thread.
  std::vector<ThreadViewData> view_data(views.size());
  std::vector<CaptureSummary> view_summaries;
  TimelineOptions timeline_options;
  timeline_options.max_points = options.max_points;
  timeline_options.scope_series = options.scope_series;
  if (!views.empty()) {
    timeline_options.views = DispatchOf(views);
    Analyzer counters;
    counters.SkipFileChecksum();  // the first pass checked the file
    counters.SetThreadViews(timeline_options.views);
    CaptureReadStats stats;
    if (absl::Status s = counters.ApplyFile(capture_path, &stats); !s.ok()) return s;
    counters.Finish(stats, &view_summaries);
  }

  // Last pass: the series, of all threads and of each view, and the composition at the
  // global high-water moment.
  TimelineBuilder builder(timeline_options, summary, view_summaries);
  PeakComposition peak;
  bool peak_taken = summary.peak_event_index == 0;
  absl::Status read = builder.ApplyFile(capture_path, [&](const CaptureRecord&) {
    if (!peak_taken && builder.analyzer().events_seen() == summary.peak_event_index) {
      peak = builder.analyzer().Composition();
      peak_taken = true;
    }
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  std::vector<Timeline> view_timelines;
  const Timeline timeline = builder.Finish(&view_timelines);
  for (size_t i = 0; i < views.size(); ++i) {
    view_data[i].summary = std::move(view_summaries[i]);
    view_data[i].timeline = std::move(view_timelines[i]);
  }

  std::string name = capture_path;
  if (const size_t slash = name.rfind('/'); slash != std::string::npos) {
    name = name.substr(slash + 1);
  }
  const std::string title =
      options.title.empty() ? absl::StrCat("memtrace report: ", name) : options.title;
  const std::string verdict = VerdictWord(summary);
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // Nothing outside the page may load, even if a name in the data looked like markup.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"memtrace report\">\n<title>",
      HtmlEscape(title), "</title>\n<style>\n", report_internal::kReportCss,
      "</style>\n</head>\n<body class=\"verdict-", verdict, "\">\n<noscript>This report draws "
      "its charts and tables with JavaScript; allow scripts for this file to see them."
      "</noscript>\n<div id=\"app\"></div>\n"
      "<script type=\"application/json\" id=\"memtrace-data\">",
      ScriptSafe(JsonData(capture_path, summary, tables, timeline, peak, views, view_data,
                          baseline.get(), options)),
      "</script>\n<script>\n", report_internal::kReportJs, "</script>\n</body>\n</html>\n");
}

absl::Status WriteHtmlReport(const std::string& capture_path, const std::string& out_path,
                             const ReportOptions& options) {
  // Opened first: an unwritable path is said before the capture is read.
  absl::StatusOr<OutputFile> out = OutputFile::Create(
      out_path, options.baseline.empty()
                    ? std::vector<std::string>{capture_path}
                    : std::vector<std::string>{capture_path, options.baseline});
  if (!out.ok()) return out.status();
  absl::StatusOr<std::string> page = RenderHtmlReport(capture_path, options);
  if (!page.ok()) return page.status();
  if (absl::Status s = out->Write(*page); !s.ok()) return s;
  return out->Commit();
}

}  // namespace memtrace
