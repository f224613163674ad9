// Copyright 2026 The memtrace Authors.
//
// The timeline (analysis/timeline.h) and the HTML report (report/html_report.h) on
// synthetic captures: series values at known events, downsampling that keeps every
// bucket's extremes (checked against values computed here, independently of the replay),
// caps that say what they cut, and a page that refers to nothing outside itself and whose
// data cannot end its <script> element.

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "analysis/capture_reader.h"
#include "analysis/timeline.h"
#include "report/html_report.h"
#include "tests/self_modules.h"

namespace memtrace_report_test {
__attribute__((noinline)) uint64_t Here() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}
// Two return addresses in one function, on two lines.
__attribute__((noinline)) std::pair<uint64_t, uint64_t> TwoLines() {
  const uint64_t first = Here();
  asm volatile("" ::: "memory");
  const uint64_t second = Here();
  return {first, second};
}
}  // namespace memtrace_report_test

namespace memtrace {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

constexpr const char* kHeader =
    "{\"type\":\"header\",\"format\":\"memtrace-jsonl\",\"schema_version\":1,\"pid\":77,"
    "\"source\":\"runtime\"}\n"
    "{\"type\":\"layer\",\"id\":0,\"name\":\"cpu\"}\n"
    "{\"type\":\"layer\",\"id\":2,\"name\":\"gpu\"}\n"
    "{\"type\":\"scope\",\"id\":1,\"parent\":0,\"name\":\"a\",\"path\":\"a\"}\n"
    "{\"type\":\"scope\",\"id\":2,\"parent\":0,\"name\":\"b\",\"path\":\"b\"}\n"
    "{\"type\":\"scope\",\"id\":3,\"parent\":0,\"name\":\"c\",\"path\":\"c\"}\n"
    "{\"type\":\"site\",\"id\":0,\"addr\":\"0x401000\"}\n";
constexpr const char* kTrailer = "{\"type\":\"trailer\",\"complete\":true}\n";

std::string Alloc(int64_t t, uint64_t size, uint32_t scope, uint32_t layer, uint64_t ticket,
                  uint32_t site = 0) {
  return absl::StrCat("{\"type\":\"alloc\",\"t\":", t, ",\"thread\":1,\"addr\":\"0x",
                      absl::Hex(0x10000 + ticket * 16), "\",\"size\":", size,
                      ",\"layer\":", layer, ",\"scope\":", scope, ",\"site\":", site,
                      ",\"ticket\":", ticket, "}\n");
}

std::string Free(int64_t t, uint32_t layer, uint64_t of, uint64_t ticket) {
  return absl::StrCat("{\"type\":\"free\",\"t\":", t, ",\"thread\":1,\"addr\":\"0x",
                      absl::Hex(0x10000 + of * 16), "\",\"layer\":", layer, ",\"of\":", of,
                      ",\"ticket\":", ticket, "}\n");
}

std::string Census(int64_t t, uint32_t label, int64_t bytes) {
  return absl::StrCat("{\"type\":\"census\",\"t\":", t, ",\"thread\":1,\"label\":", label,
                      ",\"bytes\":", bytes, "}\n");
}

// Both passes over `text`, as WriteHtmlReport runs them.
Timeline BuildTimeline(const std::string& text, const TimelineOptions& options) {
  auto summary = Analyzer::SummarizeText(text, "t.jsonl");
  EXPECT_TRUE(summary.ok()) << summary.status();
  TimelineBuilder builder(options, *summary);
  const absl::Status s = ReadCaptureText(
      text, "t.jsonl", [&](const CaptureRecord& r) { return builder.Apply(r); });
  EXPECT_TRUE(s.ok()) << s;
  return builder.Finish();
}

const TimelineSeries& Named(const Timeline& t, const std::string& name) {
  for (const TimelineSeries& s : t.series) {
    if (s.name == name) return s;
  }
  ADD_FAILURE() << "no series " << name;
  static const TimelineSeries none;
  return none;
}

using Points = std::vector<std::tuple<uint64_t, int64_t, int64_t>>;  // (event, t, value)
Points Flat(const std::vector<TimelinePoint>& points) {
  Points out;
  for (const TimelinePoint& p : points) out.emplace_back(p.event, p.t, p.value);
  return out;
}

TEST(TimelineTest, SeriesHoldTheLiveBytesAfterEachEvent) {
  const std::string text = absl::StrCat(
      kHeader, Alloc(1000, 100, 1, 0, 1),  // e1: a 100 on cpu
      Alloc(2000, 200, 2, 2, 2),           // e2: b 200 on gpu
      Census(2000, 0, 500),                // e3
      Free(3000, 0, 1, 3),                 // e4: a back to 0
      Alloc(4000, 50, 3, 0, 4),            // e5: c 50 on cpu
      kTrailer);
  TimelineOptions options;
  options.scope_series = 2;  // a and b (largest high-water first); c goes to "other scopes"
  const Timeline t = BuildTimeline(text, options);
  EXPECT_EQ(t.events, 5u);
  EXPECT_EQ(t.events_per_bucket, 1u);
  EXPECT_EQ(t.first_t, 1000);
  EXPECT_EQ(t.scopes_total, 3u);
  EXPECT_EQ(t.scopes_drawn, 2u);
  ASSERT_EQ(t.series.size(), 1u + 2u + 2u + 1u + 1u);  // total, 2 layers, a, b, other, census

  EXPECT_EQ(Flat(Named(t, "total").points),
            (Points{{1, 0, 100}, {2, 1000, 300}, {4, 2000, 200}, {5, 3000, 250}}));
  EXPECT_EQ(Flat(Named(t, "cpu").points), (Points{{1, 0, 100}, {4, 2000, 0}, {5, 3000, 50}}));
  EXPECT_EQ(Flat(Named(t, "gpu").points), (Points{{2, 1000, 200}}));
  EXPECT_EQ(Flat(Named(t, "a").points), (Points{{1, 0, 100}, {4, 2000, 0}}));
  EXPECT_EQ(Flat(Named(t, "b").points), (Points{{2, 1000, 200}}));
  EXPECT_EQ(Flat(Named(t, "other scopes").points), (Points{{5, 3000, 50}}));
  EXPECT_EQ(Flat(Named(t, "census #0").points), (Points{{3, 1000, 500}}));

  const TimelineSeries& total = Named(t, "total");
  EXPECT_EQ(total.high_water.value, 300);
  EXPECT_EQ(total.high_water.event, 2u);
  EXPECT_EQ(Named(t, "cpu").high_water.value, 100);
  EXPECT_EQ(Named(t, "cpu").high_water.event, 1u);

  // The stack: b, a (largest high-water first), other at every moment the total changed;
  // it sums to the total.
  ASSERT_EQ(t.stack_series.size(), 3u);
  EXPECT_EQ(t.series[t.stack_series[0]].name, "b");
  EXPECT_EQ(t.series[t.stack_series[1]].name, "a");
  EXPECT_EQ(t.series[t.stack_series[2]].name, "other scopes");
  ASSERT_EQ(t.stack_moments.size(), 4u);
  EXPECT_EQ(t.stack_values[0], (std::vector<int64_t>{0, 200, 200, 200}));
  EXPECT_EQ(t.stack_values[1], (std::vector<int64_t>{100, 100, 0, 0}));
  EXPECT_EQ(t.stack_values[2], (std::vector<int64_t>{0, 0, 0, 50}));
  for (size_t m = 0; m < t.stack_moments.size(); ++m) {
    EXPECT_EQ(t.stack_values[0][m] + t.stack_values[1][m] + t.stack_values[2][m],
              t.stack_moments[m].value);
  }
}

// The recorder's samples of the resident set (the trailer's timeline) become a series:
// each at the last event of the epoch it sampled (the last event whose time is not later),
// at its own time; a sample before any event at event 0.
TEST(TimelineTest, TheResidentSetIsASeriesAtTheEpochsTheRecorderSampled) {
  const std::string text = absl::StrCat(
      kHeader, Alloc(1000, 100, 1, 0, 1),  // e1
      Alloc(1000, 200, 2, 2, 2),           // e2: the epoch at 1000 ends here
      Alloc(3000, 50, 3, 0, 3),            // e3
      Free(3000, 0, 1, 4),                 // e4: the epoch at 3000 ends here
      "{\"type\":\"trailer\",\"complete\":true,\"timeline\":{\"columns\":[\"t\",\"rss_bytes\","
      "\"live_bytes\",\"live_count\"],\"every\":1,\"rows\":[[500,7000,0,0],[1000,8000,300,2],"
      "[3000,9500,250,2],[3000,9000,250,2]]}}\n");
  const Timeline t = BuildTimeline(text, TimelineOptions{});
  const TimelineSeries& rss = Named(t, "resident set (RSS)");
  EXPECT_EQ(rss.kind, TimelineSeries::Kind::kResident);
  // Times since the first event (at 1000); the sample before it clamps to 0.
  EXPECT_EQ(Flat(rss.points),
            (Points{{0, 0, 7000}, {2, 0, 8000}, {4, 2000, 9500}, {4, 2000, 9000}}));
  EXPECT_EQ(rss.high_water.value, 9500);
  EXPECT_EQ(rss.high_water.event, 4u);
  // Events not cut by a size limit: the samples' live bytes are not drawn (the total is).
  for (const TimelineSeries& s : t.series) EXPECT_NE(s.kind, TimelineSeries::Kind::kSampledLive);
  // Cut by one: they are, at the same places.
  const std::string cut = absl::StrCat(
      kHeader, Alloc(1000, 100, 1, 0, 1), Alloc(1000, 200, 2, 2, 2),
      "{\"type\":\"trailer\",\"complete\":false,\"sink\":{\"events_past_limit\":5},"
      "\"timeline\":{\"columns\":[\"t\",\"rss_bytes\",\"live_bytes\",\"live_count\"],"
      "\"every\":1,\"rows\":[[1000,8000,300,2],[6000,9000,900,7]]}}\n");
  const Timeline limited = BuildTimeline(cut, TimelineOptions{});
  const TimelineSeries& sampled = Named(limited, "live bytes (sampled)");
  EXPECT_EQ(sampled.kind, TimelineSeries::Kind::kSampledLive);
  EXPECT_EQ(Flat(sampled.points), (Points{{2, 0, 300}, {2, 5000, 900}}));
  EXPECT_EQ(sampled.high_water.value, 900);
  // Without samples, no such series.
  const Timeline plain = BuildTimeline(absl::StrCat(kHeader, Alloc(1000, 1, 1, 0, 1), kTrailer),
                                       TimelineOptions{});
  for (const TimelineSeries& s : plain.series) EXPECT_NE(s.kind, TimelineSeries::Kind::kResident);
}

TEST(TimelineTest, DownsamplingKeepsEveryBucketsExtremesAndBoundsThePoints) {
  // 20,000 events: a block allocated then freed, sizes varying; one spike in the middle.
  // `truth[e]` is the total after event e, computed here from the same sizes.
  std::string text = kHeader;
  std::vector<int64_t> truth(1, 0);
  uint64_t ticket = 1;
  int64_t held = 0;  // a slowly growing set of blocks that stay live
  for (int i = 0; i < 10000; ++i) {
    const uint64_t size = i == 6143 ? 1000000 : (uint64_t{static_cast<uint32_t>(i)} * 7919) % 1000 + 1;
    const uint32_t scope = 1 + i % 3;
    const uint64_t a = ticket++;
    text += Alloc(1000 + i, size, scope, 0, a);
    truth.push_back(held + static_cast<int64_t>(size));
    if (i % 10 == 0) {
      held += static_cast<int64_t>(size);  // kept: no free
      text += Census(1000 + i, 0, held);
      truth.push_back(held);
    } else {
      text += Free(1000 + i, 0, a, ticket++);
      truth.push_back(held);
    }
  }
  text += kTrailer;
  TimelineOptions options;
  options.max_points = 60;
  const Timeline t = BuildTimeline(text, options);
  ASSERT_EQ(t.events, truth.size() - 1);
  EXPECT_GT(t.events_per_bucket, 1u);

  const TimelineSeries& total = Named(t, "total");
  EXPECT_LE(total.points.size(), 60u);
  EXPECT_GE(total.points.size(), 20u);
  for (const TimelinePoint& p : total.points) {
    ASSERT_LT(p.event, truth.size());
    EXPECT_EQ(p.value, truth[p.event]) << "a point is the true value after its event " << p.event;
  }
  // Every bucket's maximum and minimum survive: for each bucket of events_per_bucket
  // events, the points inside it include the true max and min over the bucket's events
  // at which the total changed.
  const uint64_t w = t.events_per_bucket;
  for (uint64_t first = 1; first < truth.size(); first += w) {
    int64_t max = INT64_MIN, min = INT64_MAX;
    bool changed = false;
    for (uint64_t e = first; e < first + w && e < truth.size(); ++e) {
      if (truth[e] != truth[e - 1]) {
        changed = true;
        max = std::max(max, truth[e]);
        min = std::min(min, truth[e]);
      }
    }
    if (!changed) continue;
    int64_t got_max = INT64_MIN, got_min = INT64_MAX;
    for (const TimelinePoint& p : total.points) {
      if (p.event >= first && p.event < first + w) {
        got_max = std::max(got_max, p.value);
        got_min = std::min(got_min, p.value);
      }
    }
    EXPECT_EQ(got_max, max) << "bucket starting at event " << first;
    EXPECT_EQ(got_min, min) << "bucket starting at event " << first;
  }
  const auto peak = std::max_element(truth.begin(), truth.end());
  EXPECT_EQ(total.high_water.value, *peak);
  EXPECT_EQ(total.high_water.event, static_cast<uint64_t>(peak - truth.begin()));
  EXPECT_EQ(total.points.back().value, truth.back()) << "the last value is kept";

  // The stack reaches the same peak, and sums to the total at every moment it shows.
  int64_t stack_max = 0;
  for (size_t m = 0; m < t.stack_moments.size(); ++m) {
    int64_t sum = 0;
    for (const auto& values : t.stack_values) sum += values[m];
    EXPECT_EQ(sum, truth[t.stack_moments[m].event]);
    stack_max = std::max(stack_max, sum);
  }
  EXPECT_EQ(stack_max, *peak);
  EXPECT_LE(t.stack_moments.size(), 60u);
  // The census series is bounded too, and ends at its last value.
  const TimelineSeries& census = Named(t, "census #0");
  EXPECT_LE(census.points.size(), 60u);
  EXPECT_EQ(census.points.back().value, held);
  EXPECT_EQ(census.high_water.value, held);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// 60 sites, a scope whose path tries to end the data's <script>, call stacks in a module.
std::string RichCapture(bool with_trailer) {
  std::string text = absl::StrCat(
      kHeader,
      "{\"type\":\"scope\",\"id\":9,\"parent\":0,\"name\":\"x\","
      "\"path\":\"evil</script><script>alert(1)</script><!--\"}\n",
      "{\"type\":\"module\",\"path\":\"/opt/app/bin/prog\",\"start\":\"0x400000\","
      "\"end\":\"0x500000\",\"offset\":\"0x1000\",\"build_id\":\"\"}\n");
  for (uint32_t site = 1; site <= 60; ++site) {
    absl::StrAppend(&text, "{\"type\":\"site\",\"id\":", site, ",\"addr\":\"0x",
                    absl::Hex(0x400000 + site * 0x10), "\",\"frames\":[\"0x",
                    absl::Hex(0x400000 + site * 0x10), "\",\"0x400800\"]}\n");
  }
  uint64_t ticket = 1;
  for (uint32_t site = 1; site <= 60; ++site) {
    text += Alloc(1000 + site, 100 * site, site % 2 == 0 ? 9 : 1, 0, ticket++, site);
  }
  text += Free(2000, 0, 60, ticket++);  // the largest is freed; 59 leak
  if (with_trailer) text += kTrailer;
  return text;
}

TEST(HtmlReportTest, PageIsSelfContainedAndItsDataCannotEndTheScript) {
  const std::string capture = TempPath("rich.jsonl");
  std::ofstream(capture) << RichCapture(/*with_trailer=*/true);
  ReportOptions options;
  options.top = 50;
  options.symbolize = false;  // the made-up module has no file: name frames by offset
  const std::string out = TempPath("rich.html");
  const absl::Status s = WriteHtmlReport(capture, out, options);
  ASSERT_TRUE(s.ok()) << s;
  const std::string html = Slurp(out);
  ASSERT_FALSE(html.empty());
  const std::string lower = absl::AsciiStrToLower(html);
  EXPECT_EQ(lower.find("http://"), std::string::npos);
  EXPECT_EQ(lower.find("https://"), std::string::npos);
  EXPECT_EQ(lower.find("src=\"//"), std::string::npos);
  EXPECT_EQ(lower.find("src="), std::string::npos) << "nothing is loaded by reference";
  EXPECT_EQ(lower.find("<link"), std::string::npos);
  EXPECT_EQ(lower.find("@import"), std::string::npos);
  EXPECT_EQ(lower.find("url("), std::string::npos);
  // Exactly our two scripts close; the scope path's "</script>" and "<!--" are escaped.
  EXPECT_EQ(Count(lower, "</script"), 2u);
  EXPECT_EQ(Count(lower, "<script"), 2u);
  EXPECT_EQ(html.find("<!--"), std::string::npos);
  EXPECT_NE(html.find("evil\\u003c/script>\\u003cscript>alert(1)\\u003c/script>\\u003c!--"),
            std::string::npos);
  // The script and the style sheet are inlined.
  EXPECT_NE(html.find("writeSelftest"), std::string::npos);
  EXPECT_NE(html.find("--panel"), std::string::npos);
  EXPECT_NE(html.find("<body class=\"verdict-complete\">"), std::string::npos);

  // Caps say what they cut: 60 (site, scope, layer) rows, 59 still live, top 50 shown.
  EXPECT_NE(html.find("\"sites\":{\"shown\":50,\"total\":60,"), std::string::npos);
  EXPECT_NE(html.find("\"leaks\":{\"shown\":50,\"total\":59,"), std::string::npos);
  // The peak (all 60 live, before the free) by site, also capped.
  EXPECT_NE(html.find("\"by_site\":{\"shown\":50,\"total\":60,"), std::string::npos);
  EXPECT_NE(html.find("\"live\":183000"), std::string::npos) << "100 * (1 + ... + 60)";
  // Frames are named by module and file offset: 0x400800 - 0x400000 + 0x1000.
  EXPECT_NE(html.find("\"prog+0x1800\""), std::string::npos);
  EXPECT_NE(html.find("\"has_stacks\":true"), std::string::npos);

  // With the symbolizer (the default) a module whose file is missing still names the
  // frame by module and offset, marked unknown.
  const std::string symbolized = TempPath("rich_symbolized.html");
  options.symbolize = true;
  ASSERT_TRUE(WriteHtmlReport(capture, symbolized, options).ok());
  EXPECT_NE(Slurp(symbolized).find("?? (/opt/app/bin/prog+0x1800)"), std::string::npos);
  // ... and the page says which module lacks its file, for the note under the call sites.
  EXPECT_NE(Slurp(symbolized).find("\"unresolved\":[{\"path\":\"/opt/app/bin/prog\","
                                   "\"why\":\"no_file\""),
            std::string::npos);
  EXPECT_NE(html.find("\"unresolved\":[]"), std::string::npos)
      << "without the symbolizer no frame was looked up";
}

// Where a capture lists two modules at one address range (a library unloaded and another
// loaded there), the later line names the frames, with or without the symbolizer.
TEST(HtmlReportTest, TheLaterOfTwoModuleLinesAtOneRangeNamesFrames) {
  std::string text = RichCapture(/*with_trailer=*/true);
  const std::string first_module = "\"offset\":\"0x1000\",\"build_id\":\"\"}\n";
  const size_t after = text.find(first_module) + first_module.size();
  text.insert(after,
              "{\"type\":\"module\",\"path\":\"/opt/app/lib/later.so\",\"start\":\"0x400000\","
              "\"end\":\"0x500000\",\"offset\":\"0x2000\",\"build_id\":\"\"}\n");
  const std::string capture = TempPath("reused.jsonl");
  std::ofstream(capture) << text;
  ReportOptions options;
  options.symbolize = false;
  auto html = RenderHtmlReport(capture, options);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_NE(html->find("\"later.so+0x2800\""), std::string::npos);  // 0x400800 - 0x400000 + 0x2000
  EXPECT_EQ(html->find("prog+0x1800"), std::string::npos);
  options.symbolize = true;
  html = RenderHtmlReport(capture, options);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_NE(html->find("?? (/opt/app/lib/later.so+0x2800)"), std::string::npos);
  EXPECT_EQ(html->find("prog+0x1800"), std::string::npos);
}

// The flame graph's part of a page: its names array.
std::string FlameNames(const std::string& html) {
  const size_t flame = html.find("\"flame\":{");
  const size_t names = html.find("\"names\":[", flame);
  return flame == std::string::npos || names == std::string::npos
             ? ""
             : html.substr(names, html.find("]}", names) - names + 1);  // the flame's last member
}

// Flame boxes are functions: two lines of one function (two sites) are one box. A stack as
// deep as the capture's --depth has a frame at its root saying outer callers may be lost;
// a shorter one does not.
TEST(HtmlReportTest, FlameFramesAreFunctionsAndStacksAtTheDepthLimitAreMarked) {
  const auto [first, second] = memtrace_report_test::TwoLines();
  const uint64_t outer = reinterpret_cast<uint64_t>(&memtrace_report_test::Here) + 1;
  std::string text =
      "{\"type\":\"header\",\"format\":\"memtrace-jsonl\",\"schema_version\":1,\"pid\":77,"
      "\"source\":\"preload\",\"interposer\":{\"stack_depth\":2}}\n"
      "{\"type\":\"layer\",\"id\":0,\"name\":\"cpu\"}\n";
  for (const CaptureRecord& m : SelfExecutableModules()) {
    absl::StrAppend(&text, "{\"type\":\"module\",\"path\":\"", m.path, "\",\"start\":\"0x",
                    absl::Hex(m.start), "\",\"end\":\"0x", absl::Hex(m.end), "\",\"offset\":\"0x",
                    absl::Hex(m.offset), "\",\"build_id\":\"", m.build_id, "\"}\n");
  }
  // Sites 1 and 2: two frames (the depth limit); site 3: one frame.
  absl::StrAppend(&text, "{\"type\":\"site\",\"id\":1,\"addr\":\"0x", absl::Hex(first),
                  "\",\"frames\":[\"0x", absl::Hex(first), "\",\"0x", absl::Hex(outer), "\"]}\n");
  absl::StrAppend(&text, "{\"type\":\"site\",\"id\":2,\"addr\":\"0x", absl::Hex(second),
                  "\",\"frames\":[\"0x", absl::Hex(second), "\",\"0x", absl::Hex(outer), "\"]}\n");
  absl::StrAppend(&text, "{\"type\":\"site\",\"id\":3,\"addr\":\"0x", absl::Hex(second),
                  "\",\"frames\":[\"0x", absl::Hex(second), "\"]}\n");
  text += Alloc(1000, 100, 0, 0, 1, 1);
  text += Alloc(1001, 200, 0, 0, 2, 2);
  text += Alloc(1002, 300, 0, 0, 3, 3);
  text += kTrailer;
  const std::string capture = TempPath("lines.jsonl");
  std::ofstream(capture) << text;
  ReportOptions options;
  options.symbolize = true;
  const auto html = RenderHtmlReport(capture, options);
  ASSERT_TRUE(html.ok()) << html.status();
  const std::string names = FlameNames(*html);
  ASSERT_FALSE(names.empty()) << "no flame graph in the page";
  EXPECT_EQ(Count(names, "\"memtrace_report_test::TwoLines()\""), 1u) << names;
  EXPECT_EQ(Count(names, "TwoLines() ("), 0u) << "a box per line: " << names;
  EXPECT_EQ(Count(names, "\"[stack cut at 2 frames: outer callers not recorded]\""), 1u) << names;
  // Without the header's depth nothing is marked.
  std::string no_depth = text;
  no_depth.replace(no_depth.find(",\"interposer\":{\"stack_depth\":2}"),
                   std::string(",\"interposer\":{\"stack_depth\":2}").size(), "");
  std::ofstream(capture) << no_depth;
  const auto plain = RenderHtmlReport(capture, options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(Count(FlameNames(*plain), "stack cut"), 0u);
}

TEST(HtmlReportTest, CapsAndTheFrameDescriberAreHonoured) {
  const std::string capture = TempPath("rich2.jsonl");
  std::ofstream(capture) << RichCapture(/*with_trailer=*/true);
  ReportOptions options;
  options.top = 5;
  options.flame_sites = 10;
  options.describe_frame = [](uint64_t pc) { return absl::StrCat("fn_", absl::Hex(pc)); };
  const auto html = RenderHtmlReport(capture, options);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_NE(html->find("\"sites\":{\"shown\":5,\"total\":60,"), std::string::npos);
  EXPECT_NE(html->find("\"scopes\":{\"shown\":2,\"total\":2,"), std::string::npos);
  EXPECT_NE(html->find("\"sites_total\":60,\"sites_shown\":10,"), std::string::npos);
  EXPECT_NE(html->find("\"(other call stacks)\""), std::string::npos);
  EXPECT_NE(html->find("\"fn_400800\""), std::string::npos);
  EXPECT_EQ(html->find("prog+0x"), std::string::npos) << "the describer replaces the default";
}

TEST(HtmlReportTest, TruncatedCaptureIsMarkedAndNeverComplete) {
  const std::string capture = TempPath("cut.jsonl");
  std::ofstream(capture) << RichCapture(/*with_trailer=*/false);
  const auto html = RenderHtmlReport(capture, ReportOptions{});
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_NE(html->find("<body class=\"verdict-truncated\">"), std::string::npos);
  EXPECT_NE(html->find("\"verdict\":\"truncated\""), std::string::npos);
  EXPECT_NE(html->find("\"trailer\":null"), std::string::npos);
  EXPECT_EQ(html->find("verdict-complete"), std::string::npos);
  // A capture without a trailer has no peak intervals: its peaks are never shown exact.
  EXPECT_NE(html->find("\"high_water_high_bytes\":null"), std::string::npos);
  EXPECT_NE(html->find(",\"none\","), std::string::npos) << "the scopes' peak bound column";
  EXPECT_EQ(html->find(",\"exact\","), std::string::npos);

  const std::string partial = TempPath("partial.jsonl");
  std::string text = RichCapture(/*with_trailer=*/false);
  text += "{\"type\":\"trailer\",\"complete\":false,\"sink\":{\"events_lost\":3}}\n";
  std::ofstream(partial) << text;
  const auto page = RenderHtmlReport(partial, ReportOptions{});
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_NE(page->find("<body class=\"verdict-partial\">"), std::string::npos);
  EXPECT_NE(page->find("\"events_lost\":3"), std::string::npos) << "the trailer is embedded";
}

// A capture the interposer's --min-size thinned: the page's data names the filter and what
// it left out (the banner shows them), and says what "exact" holds for; an unfiltered
// capture has none.
TEST(HtmlReportTest, RecordingFiltersAreStatedBesideTheVerdict) {
  const std::string capture = TempPath("filtered.jsonl");
  std::ofstream(capture)
      << "{\"type\":\"header\",\"format\":\"memtrace-jsonl\",\"schema_version\":1,"
         "\"source\":\"preload\",\"interposer\":{\"min_size\":1000,"
         "\"sample_interval_bytes\":0}}\n"
      << Alloc(10, 2000, 0, 0, 1)
      << "{\"type\":\"trailer\",\"complete\":true,\"filtered\":{\"min_size\":"
         "{\"allocations\":12,\"bytes\":3400},\"sample\":{\"allocations\":0,\"bytes\":0}}}\n";
  const auto html = RenderHtmlReport(capture, ReportOptions{});
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_NE(html->find("\"filters\":[{\"filter\":\"min_size\",\"flag\":\"--min-size=1000\","),
            std::string::npos);
  EXPECT_NE(html->find("\"left_out\":{\"allocations\":12,\"bytes\":3400}"), std::string::npos);
  EXPECT_NE(html->find("\"filter_statements\":[\"--min-size=1000 left out 12 allocations "
                       "(3.3 KiB) of blocks smaller than 1000 bytes\"]"),
            std::string::npos);
  EXPECT_NE(html->find("\"exact_for\":\"for blocks of at least 1000 bytes\""), std::string::npos);

  const std::string plain = TempPath("plain.jsonl");
  std::ofstream(plain) << RichCapture(/*with_trailer=*/true);
  const auto page = RenderHtmlReport(plain, ReportOptions{});
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_NE(page->find("\"filters\":[],\"filter_statements\":[],\"exact_for\":\"\""),
            std::string::npos);
}

// Five stacks that read the same (one innermost frame, five callers) are one row, which
// lists its largest stacks, each with its own numbers, within the caps, and counts the
// rest.
TEST(HtmlReportTest, ARowOfSeveralStacksListsThemWithinItsCaps) {
  std::string text = kHeader;
  for (uint32_t site = 1; site <= 5; ++site) {
    absl::StrAppend(&text, "{\"type\":\"site\",\"id\":", site,
                    ",\"addr\":\"0x401000\",\"frames\":[\"0x401000\",\"0x40", site, "000\"]}\n");
  }
  uint64_t ticket = 1;
  for (uint32_t site = 1; site <= 5; ++site) {
    for (uint32_t k = 0; k < site; ++k, ++ticket) {
      text += Alloc(1000 + ticket, 100 * site, 1, 0, ticket, site);
    }
  }
  text += kTrailer;
  const std::string capture = TempPath("stacks.jsonl");
  std::ofstream(capture) << text;
  ReportOptions options;
  options.row_stacks = 2;
  options.listed_stacks = 3;  // the sites' row takes 2, the leaks' row the last one
  options.describe_frame = [](uint64_t pc) { return absl::StrCat("fn_", absl::Hex(pc)); };
  const auto html = RenderHtmlReport(capture, options);
  ASSERT_TRUE(html.ok()) << html.status();
  // Site s allocated s blocks of 100 * s bytes, all live: the largest two are sites 5, 4.
  auto stack = [](uint32_t site) {
    return absl::StrCat(100 * site * site, ",", site, ",", 100 * site * site, ",", site, ",0]");
  };
  uint64_t all = 0;
  for (uint32_t site = 1; site <= 5; ++site) all += 100 * site * site;
  const std::string row = absl::StrCat("[\"fn_401000 [5 stacks]\",\"a\",\"cpu\",", all, ",15,",
                                       all, ",15,0,{\"total\":5,\"rows\":[[");
  ASSERT_EQ(Count(*html, row), 2u) << "the sites' row and the leaks'";
  const size_t sites = html->find(row);
  const size_t leaks = html->find(row, sites + 1);
  const std::string listed = html->substr(sites, leaks - sites);
  EXPECT_EQ(Count(listed, stack(5)), 1u) << listed;
  EXPECT_EQ(Count(listed, stack(4)), 1u) << listed;
  EXPECT_EQ(Count(listed, stack(3)), 0u) << listed;
  EXPECT_EQ(Count(html->substr(leaks, html->find("]}", leaks) - leaks + 2), stack(5)), 1u)
      << "the leaks' row lists what the page's cap leaves it";
  EXPECT_EQ(Count(html->substr(leaks, html->find("}]", leaks) - leaks), stack(4)), 0u);
  // Frames are named for the page, innermost first, each once.
  EXPECT_NE(html->find("\"stack_frames\":[\"fn_401000\",\"fn_405000\",\"fn_404000\"]"),
            std::string::npos);
  // One thread: no thread views; no baseline: no comparison.
  EXPECT_NE(html->find("\"threads\":null"), std::string::npos);
  EXPECT_NE(html->find("\"baseline\":null"), std::string::npos);
}

// Thread views: one per thread, most bytes first, the rest as "other threads"; each with
// the call sites and the series of its own blocks.
TEST(HtmlReportTest, ThreadViewsCountTheirThreadsBlocks) {
  std::string text = kHeader;
  std::map<uint32_t, uint64_t> bytes;
  uint64_t ticket = 1;
  for (uint32_t i = 0; i < 12; ++i) {
    const uint32_t thread = 1 + i % 4;
    const uint64_t size = 10 * thread + i;
    std::string rec = Alloc(1000 + i, size, 1 + i % 3, 0, ticket++);
    rec.replace(rec.find("\"thread\":1"), 10, absl::StrCat("\"thread\":", thread));
    text += rec;
    bytes[thread] += size;
  }
  text += Free(2000, 0, 1, ticket++);  // thread 1's first block, on thread 1
  text += kTrailer;
  const std::string capture = TempPath("threads.jsonl");
  std::ofstream(capture) << text;
  ReportOptions options;
  options.thread_views = 2;
  const auto html = RenderHtmlReport(capture, options);
  ASSERT_TRUE(html.ok()) << html.status();
  // Threads 4 and 3 allocated the most; 1 and 2 are "other threads".
  EXPECT_NE(html->find(absl::StrCat("\"threads\":{\"total\":4,\"views\":[{\"name\":\"thread 4\","
                                    "\"thread\":4,\"allocated\":", bytes[4], ",")),
            std::string::npos);
  EXPECT_NE(html->find(absl::StrCat("{\"name\":\"thread 3\",\"thread\":3,\"allocated\":",
                                    bytes[3], ",")),
            std::string::npos);
  EXPECT_NE(html->find(absl::StrCat("{\"name\":\"other threads (2)\",\"thread\":null,"
                                    "\"allocated\":", bytes[1] + bytes[2], ",")),
            std::string::npos);
  options.thread_views = 0;
  const auto none = RenderHtmlReport(capture, options);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_NE(none->find("\"threads\":null"), std::string::npos);
}

// --baseline: the page compares the capture with another, by scope and by call site; an
// unreadable baseline is an error that names it.
TEST(HtmlReportTest, ABaselineAddsTheGrowthByScopeAndCallSite) {
  const std::string before = TempPath("before.jsonl");
  std::ofstream(before) << kHeader << Alloc(1000, 300, 1, 0, 1) << Alloc(1001, 50, 2, 0, 2)
                        << kTrailer;
  const std::string after = TempPath("after.jsonl");
  std::ofstream(after) << kHeader << Alloc(1000, 1000, 1, 0, 1) << Alloc(1001, 20, 2, 0, 2)
                       << kTrailer;
  ReportOptions options;
  options.baseline = before;
  const auto html = RenderHtmlReport(after, options);
  ASSERT_TRUE(html.ok()) << html.status();
  // Scope rows: path, live before, after, change, high-water x3, allocated x3.
  EXPECT_NE(html->find("[\"TOTAL\",350,1020,670,350,1020,670,350,1020,670]"), std::string::npos);
  EXPECT_NE(html->find("[\"a\",300,1000,700,300,1000,700,300,1000,700]"), std::string::npos);
  EXPECT_NE(html->find("[\"b\",50,20,-30,50,20,-30,50,20,-30]"), std::string::npos);
  // Site 0 (0x401000) in both: live before, after, change; allocated x3; allocations.
  EXPECT_NE(html->find("\"sites\":{\"shown\":1,\"total\":1,\"rows\":[[\"0x401000\",350,1020,"
                       "670,350,1020,670,0]]}"),
            std::string::npos);
  options.baseline = TempPath("no-such-baseline.jsonl");
  const auto missing = RenderHtmlReport(after, options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no-such-baseline.jsonl"), std::string::npos)
      << missing.status();
}

TEST(HtmlReportTest, BadInputAndUnwritableOutputGetClearErrors) {
  const std::string bad = TempPath("bad.jsonl");
  std::ofstream(bad) << kHeader << "{\"type\":\"alloc\"}\n";
  const std::string earlier = TempPath("bad.html");
  std::ofstream(earlier) << "the earlier page";
  const absl::Status s = WriteHtmlReport(bad, earlier, ReportOptions{});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bad.jsonl:8"), std::string::npos) << s;
  std::ifstream kept(earlier);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "the earlier page")
      << "a failed report leaves the file at its path as it was";

  const std::string good = TempPath("good.jsonl");
  std::ofstream(good) << RichCapture(true);
  const absl::Status w = WriteHtmlReport(good, "/nonexistent-dir/r.html", ReportOptions{});
  EXPECT_FALSE(w.ok());
  EXPECT_NE(w.message().find("/nonexistent-dir/r.html"), std::string::npos) << w;
}

}  // namespace
}  // namespace memtrace
