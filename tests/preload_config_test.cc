// Copyright 2026 The memtrace Authors.
//
// The interposer's settings: every knob parsed, every bad value warned about with the
// variable, the value, what is accepted and what is used instead.

#include "preload/preload_config.h"

#include <fnmatch.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace memtrace {
namespace {

PreloadConfig Parse(const std::map<std::string, std::string>& env,
                    std::vector<std::string>* warnings) {
  return ParsePreloadConfig(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      warnings);
}

TEST(PreloadConfigTest, DefaultsMirrorTheSeed) {
  std::vector<std::string> warnings;
  const PreloadConfig c = Parse({}, &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(c.output, "memtrace-%p.mtb") << "the binary encoding by default";
  EXPECT_EQ(c.min_size, 0u);
  EXPECT_EQ(c.stack_depth, 16u);
  EXPECT_EQ(c.unwind, UnwindMethod::kDwarf);
  EXPECT_FALSE(c.trace_children);
  EXPECT_FALSE(c.trace_forks) << "a forked child runs untraced by default";
  EXPECT_EQ(c.ring_capacity_log2, 15u);
  EXPECT_FALSE(c.mmap) << "mappings are opt-in";
  EXPECT_TRUE(c.tracer_cpus.empty()) << "memtrace's threads go where the kernel puts them";
  EXPECT_EQ(c.tracer_threads, 0u) << "chosen from the CPU count";
  EXPECT_EQ(c.fence, FenceMode::kMembarrier);
  EXPECT_EQ(c.max_bytes, 0u) << "no size limit";
  EXPECT_EQ(c.site_capacity, kDefaultSiteCapacity);
  EXPECT_FALSE(c.exact_order) << "a stamp every 32 records by default";
  EXPECT_FALSE(c.live) << "no socket unless asked";
}

TEST(PreloadConfigTest, GoodValuesAreTaken) {
  std::vector<std::string> warnings;
  const PreloadConfig c = Parse({{"MEMTRACE_OUTPUT", "/tmp/x-%p.jsonl.zst"},
                                 {"MEMTRACE_MIN_SIZE", "4096"},
                                 {"MEMTRACE_STACK_DEPTH", "0"},
                                 {"MEMTRACE_UNWIND", "fp"},
                                 {"MEMTRACE_TRACE_CHILDREN", "yes"},
                                 {"MEMTRACE_TRACE_FORKS", "1"},
                                 {"MEMTRACE_RING_LOG2", "12"},
                                 {"MEMTRACE_SAMPLE_BYTES", "524288"},
                                 {"MEMTRACE_MMAP", "1"},
                                 {"MEMTRACE_TRACER_CPUS", AllowedCpus().ToString()},
                                 {"MEMTRACE_TRACER_THREADS", "3"},
                                 {"MEMTRACE_FENCE", "seq_cst"},
                                 {"MEMTRACE_MAX_BYTES", "3G"},
                                 {"MEMTRACE_SITE_CAPACITY", "1000000"},
                                 {"MEMTRACE_EXACT_ORDER", "1"},
                                 {"MEMTRACE_LIVE", "1"}},
                                &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(c.output, "/tmp/x-%p.jsonl.zst");
  EXPECT_EQ(c.min_size, 4096u);
  EXPECT_EQ(c.stack_depth, 0u);
  EXPECT_EQ(c.unwind, UnwindMethod::kFramePointers);
  EXPECT_TRUE(c.trace_children);
  EXPECT_TRUE(c.trace_forks);
  EXPECT_EQ(c.ring_capacity_log2, 12u);
  EXPECT_EQ(c.sample_bytes, 524288u);
  EXPECT_TRUE(c.mmap);
  EXPECT_EQ(c.tracer_cpus, AllowedCpus());
  EXPECT_EQ(c.tracer_threads, 3u);
  EXPECT_EQ(c.fence, FenceMode::kSeqCst);
  EXPECT_EQ(c.max_bytes, uint64_t{3} << 30);
  EXPECT_EQ(c.site_capacity, 1000000u);
  EXPECT_TRUE(c.exact_order);
  EXPECT_TRUE(c.live);
  EXPECT_EQ(Parse({{"MEMTRACE_FENCE", "membarrier"}}, &warnings).fence, FenceMode::kMembarrier);
  EXPECT_EQ(Parse({{"MEMTRACE_TRACER_THREADS", "16"}}, &warnings).tracer_threads, 16u);
  EXPECT_TRUE(warnings.empty());
}

TEST(PreloadConfigTest, ATracerCpuListThatCannotBeUsedWarnsAndPinsNothing) {
  // The first CPU that is not online.
  const CpuList online = OnlineCpus();
  uint32_t forbidden = 0;
  while (std::find(online.cpus.begin(), online.cpus.end(), forbidden) != online.cpus.end()) {
    ++forbidden;
  }
  const std::string forbidden_text = std::to_string(forbidden);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"2-x", "MEMTRACE_TRACER_CPUS=\"2-x\": CPU list \"2-x\": expected a CPU number at "
              "position 3"},
      {"3-1", "the range 3-1 runs backwards"},
      {forbidden_text, "CPU " + forbidden_text + " of the list " + forbidden_text +
                           " is not online on this machine"},
  };
  for (const auto& [value, warning] : cases) {
    std::vector<std::string> warnings;
    const PreloadConfig parsed = Parse({{"MEMTRACE_TRACER_CPUS", value}}, &warnings);
    ASSERT_EQ(warnings.size(), 1u) << value;
    EXPECT_NE(warnings[0].find(warning), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("memtrace's threads run wherever the kernel puts them"),
              std::string::npos)
        << warnings[0];
    EXPECT_TRUE(parsed.tracer_cpus.empty());
  }
}

// Sizes take K, M, G and T (powers of 1024), as --max-size does.
TEST(PreloadConfigTest, SizesTakeUnits) {
  std::vector<std::string> warnings;
  const PreloadConfig c = Parse({{"MEMTRACE_MIN_SIZE", "1K"},
                                 {"MEMTRACE_SAMPLE_BYTES", "512KiB"}},
                                &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(c.min_size, 1024u);
  EXPECT_EQ(c.sample_bytes, 512u * 1024);
}

TEST(PreloadConfigTest, BadValuesWarnAndKeepTheDefault) {
  struct Case {
    const char* name;
    const char* value;
    const char* warning;
  };
  const std::vector<Case> cases = {
      {"MEMTRACE_STACK_DEPTH", "65",
       "memtrace: MEMTRACE_STACK_DEPTH=\"65\" is not a whole number from 0 to 64; using 16"},
      {"MEMTRACE_STACK_DEPTH", "-1", "MEMTRACE_STACK_DEPTH=\"-1\" is not a whole number"},
      {"MEMTRACE_STACK_DEPTH", "8x", "MEMTRACE_STACK_DEPTH=\"8x\" is not a whole number"},
      {"MEMTRACE_MIN_SIZE", "big",
       "MEMTRACE_MIN_SIZE=\"big\" is not a size in bytes from 0 to 140737488355328 (a whole "
       "number, or with K, M, G or T); using 0"},
      {"MEMTRACE_MIN_SIZE", "1P", "MEMTRACE_MIN_SIZE=\"1P\" is not a size in bytes"},
      {"MEMTRACE_SAMPLE_BYTES", "1e6", "MEMTRACE_SAMPLE_BYTES=\"1e6\" is not a size in bytes"},
      {"MEMTRACE_SAMPLE_BYTES", "2T", "MEMTRACE_SAMPLE_BYTES=\"2T\" is not a size in bytes"},
      {"MEMTRACE_UNWIND", "guess",
       "MEMTRACE_UNWIND=\"guess\" is not \"fp\" or \"dwarf\"; using dwarf"},
      {"MEMTRACE_TRACE_CHILDREN", "maybe",
       "MEMTRACE_TRACE_CHILDREN=\"maybe\" is not one of 1, 0, true, false, yes, no; using 0"},
      {"MEMTRACE_TRACE_FORKS", "sometimes",
       "MEMTRACE_TRACE_FORKS=\"sometimes\" is not one of 1, 0, true, false, yes, no; using 0"},
      {"MEMTRACE_MMAP", "on",
       "MEMTRACE_MMAP=\"on\" is not one of 1, 0, true, false, yes, no; using 0"},
      {"MEMTRACE_RING_LOG2", "30", "MEMTRACE_RING_LOG2=\"30\" is not a whole number from 10 to 22"},
      {"MEMTRACE_OUTPUT", "", "MEMTRACE_OUTPUT=\"\" is not a file path; using memtrace-%p.mtb"},
      {"MEMTRACE_FENCE", "mfence",
       "MEMTRACE_FENCE=\"mfence\" is not \"membarrier\" or \"seq_cst\"; using membarrier"},
      {"MEMTRACE_MAX_BYTES", "2 GB",
       "MEMTRACE_MAX_BYTES=\"2 GB\" is not a size in bytes (a whole number, or with K, M, G or "
       "T); using no limit"},
      {"MEMTRACE_SITE_CAPACITY", "0",
       "MEMTRACE_SITE_CAPACITY=\"0\" is not a whole number from 1 to 16777216; using 65536"},
      {"MEMTRACE_SITE_CAPACITY", "33554432",
       "MEMTRACE_SITE_CAPACITY=\"33554432\" is not a whole number from 1 to 16777216; using "
       "65536"},
      {"MEMTRACE_TRACER_THREADS", "17",
       "MEMTRACE_TRACER_THREADS=\"17\" is not a whole number from 0 to 16; using 0"},
      {"MEMTRACE_TRACER_THREADS", "4x",
       "MEMTRACE_TRACER_THREADS=\"4x\" is not a whole number from 0 to 16; using 0"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> warnings;
    const PreloadConfig parsed = Parse({{c.name, c.value}}, &warnings);
    ASSERT_EQ(warnings.size(), 1u) << c.name << "=" << c.value;
    EXPECT_NE(warnings[0].find(c.warning), std::string::npos) << warnings[0];
    EXPECT_EQ(parsed.stack_depth, 16u);
    EXPECT_EQ(parsed.output, "memtrace-%p.mtb");
    EXPECT_EQ(parsed.fence, FenceMode::kMembarrier);
    EXPECT_EQ(parsed.tracer_threads, 0u);
  }
}

// kPreloadSettingNames, which WarnUnknownSettings() checks names against, is exactly what
// ParsePreloadConfig() reads: a setting added to one and not the other would be warned
// about as unknown, or a misspelling of it would go unnamed.
TEST(PreloadConfigTest, TheListOfSettingsIsWhatTheParserReads) {
  std::vector<std::string> asked;
  std::vector<std::string> warnings;
  ParsePreloadConfig(
      [&](const char* name) -> const char* {
        asked.emplace_back(name);
        return nullptr;
      },
      &warnings);
  std::vector<std::string> listed(std::begin(kPreloadSettingNames),
                                  std::end(kPreloadSettingNames));
  std::sort(asked.begin(), asked.end());
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(asked, listed);
  EXPECT_TRUE(warnings.empty());
}

// A MEMTRACE_ variable that is no setting would be ignored without a word: each is named,
// with the setting it most likely meant, or the list of settings when none is close.
TEST(PreloadConfigTest, VariablesThatAreNoSettingAreNamed) {
  const char* env[] = {"HOME=/root",
                       "MEMTRACE_OUTPUT=/tmp/a.mtb",       // settings: nothing to say
                       "MEMTRACE_RING_LOG2=12",
                       "MEMTRACE_ROOT_PID=42",             // the tools' own: nothing
                       "MEMTRACE_PRELOAD=/lib/x.so",
                       "MEMTRACE_STRESS_THREADS=16",
                       "MEMTRACE_OUPUT=/tmp/b.mtb",        // a typo
                       "MEMTRACE_DEPTH=8",                 // part of a setting's name
                       "MEMTRACE_VERBOSE=1",               // nothing like a setting
                       "MEMTRACE_",                        // no name, no value
                       "XMEMTRACE_OUTPUT=1",               // not ours
                       nullptr};
  std::vector<std::string> warnings;
  WarnUnknownSettings(env, &warnings);
  ASSERT_EQ(warnings.size(), 4u);
  EXPECT_EQ(warnings[0],
            "memtrace: MEMTRACE_OUPUT is not a memtrace setting and is ignored (did you mean "
            "MEMTRACE_OUTPUT?)");
  EXPECT_EQ(warnings[1],
            "memtrace: MEMTRACE_DEPTH is not a memtrace setting and is ignored (did you mean "
            "MEMTRACE_STACK_DEPTH?)");
  EXPECT_EQ(warnings[2].rfind("memtrace: MEMTRACE_VERBOSE is not a memtrace setting and is "
                              "ignored; the settings are MEMTRACE_OUTPUT ",
                              0),
            0u)
      << warnings[2];
  for (const std::string_view name : kPreloadSettingNames) {
    EXPECT_NE(warnings[2].find(std::string(name)), std::string::npos) << name;
  }
  EXPECT_EQ(warnings[3].rfind("memtrace: MEMTRACE_ is not a memtrace setting", 0), 0u)
      << warnings[3];

  warnings.clear();
  WarnUnknownSettings(nullptr, &warnings);
  EXPECT_TRUE(warnings.empty());
}

TEST(PreloadConfigTest, CapturePathsNeverCollide) {
  EXPECT_EQ(CapturePath("cap-%p.jsonl", 42, 0), "cap-42.jsonl");
  EXPECT_EQ(CapturePath("/d/cap.jsonl", 42, 0), "/d/cap.jsonl");
  // Traced children without %p: the first process keeps the name, the others get theirs.
  EXPECT_EQ(CapturePath("/d/cap.jsonl", 42, 42), "/d/cap.jsonl");
  EXPECT_EQ(CapturePath("/d/cap.jsonl", 43, 42), "/d/cap.43.jsonl");
  EXPECT_EQ(CapturePath("/d.x/cap", 43, 42), "/d.x/cap.43");
  EXPECT_EQ(CapturePath("/d/cap.jsonl.zst", 43, 42), "/d/cap.43.jsonl.zst");
  EXPECT_EQ(CapturePath("/d/cap.mtb", 43, 42), "/d/cap.43.mtb");
  // A later process that got pid 43 again, while the first one's capture is there.
  EXPECT_EQ(CapturePath("/d/cap.mtb", 43, 42, 2), "/d/cap.43.2.mtb");
  EXPECT_EQ(CapturePath("/d/cap.jsonl.zst", 43, 42, 3), "/d/cap.43.3.jsonl.zst");
  EXPECT_EQ(CapturePath("cap-%p.jsonl", 43, 42, 2), "cap-43.2.jsonl");
  EXPECT_EQ(CapturePath("/d/cap.mtb", 43, 42, 1), "/d/cap.43.mtb");
  // ... and the glob below still finds it.
  EXPECT_EQ(fnmatch(OtherCapturesGlob("/d/cap.mtb").c_str(), "/d/cap.43.2.mtb", 0), 0);
  // The name a process writes when another holds its path (the interposer's fallback).
  EXPECT_EQ(PidTaggedPath("/d/cap.mtb", 7), "/d/cap.7.mtb");
  EXPECT_EQ(PidTaggedPath("cap", 7), "cap.7");
  EXPECT_EQ(PidTaggedPath("/d.x/.cap.mtb.zst", 7), "/d.x/.cap.7.mtb.zst");
  // What `memtrace run` lists after the summary: the other processes' captures, with
  // their ".execN" continuations.
  EXPECT_EQ(OtherCapturesGlob("/d/cap.mtb"), "/d/cap.[0-9]*.mtb*");
  EXPECT_EQ(OtherCapturesGlob("/d.x/cap"), "/d.x/cap.[0-9]**");
  EXPECT_EQ(OtherCapturesGlob("/d/cap-%p.jsonl.zst"), "/d/cap-[0-9]*.jsonl.zst*");
}

// An environment array as the kernel hands it over: writable strings, null-terminated.
TEST(PreloadConfigTest, ByteSizesTakeBinarySuffixes) {
  const std::vector<std::pair<std::string, uint64_t>> good = {
      {"0", 0},          {"4096", 4096},     {"64K", 65536},   {"64k", 65536},
      {"64KiB", 65536},  {"64KB", 65536},    {"500M", 500ull << 20},
      {"2G", 2ull << 30}, {"1T", 1ull << 40}, {"8388608T", 1ull << 63}};
  for (const auto& [text, want] : good) {
    uint64_t got = 1;
    EXPECT_TRUE(ParseByteSize(text, &got)) << text;
    EXPECT_EQ(got, want) << text;
  }
  for (const char* bad : {"", "K", "-1", "1.5G", "2 G", "2GB2", "2X", "2Gi", "8388609T",
                          "99999999999999999999"}) {
    uint64_t got = 7;
    EXPECT_FALSE(ParseByteSize(bad, &got)) << bad;
    EXPECT_EQ(got, 7u) << "untouched: " << bad;
  }
}

class Environment {
 public:
  explicit Environment(std::vector<std::string> entries) : strings_(std::move(entries)) {
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  char** get() { return pointers_.data(); }
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    for (char* const* e = pointers_.data(); *e != nullptr; ++e) out.emplace_back(*e);
    return out;
  }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

TEST(PreloadConfigTest, DropFromPreloadRewritesTheEnvironmentInPlace) {
  using V = std::vector<std::string>;
  // Alone: the variable goes, the others keep their order.
  Environment alone({"A=1", "LD_PRELOAD=/x/libmemtrace_preload.so", "B=2"});
  DropFromPreload(alone.get(), "libmemtrace_preload");
  EXPECT_EQ(alone.Entries(), (V{"A=1", "B=2"}));
  // Last in the array.
  Environment last({"A=1", "LD_PRELOAD=libmemtrace_preload.so"});
  DropFromPreload(last.get(), "libmemtrace_preload");
  EXPECT_EQ(last.Entries(), (V{"A=1"}));
  // Among others, separated by colons or spaces (ld.so takes both): the others stay.
  Environment among({"LD_PRELOAD=/a/liba.so:/x/libmemtrace_preload.so  /b/libb.so:", "C=3"});
  DropFromPreload(among.get(), "libmemtrace_preload");
  EXPECT_EQ(among.Entries(), (V{"LD_PRELOAD=/a/liba.so /b/libb.so", "C=3"}));
  // Not there: nothing changes; a similar name is not ours.
  Environment other({"LD_PRELOAD=/a/liba.so", "LD_PRELOADX=/x/libmemtrace_preload.so"});
  DropFromPreload(other.get(), "libmemtrace_preload");
  EXPECT_EQ(other.Entries(), (V{"LD_PRELOAD=/a/liba.so", "LD_PRELOADX=/x/libmemtrace_preload.so"}));
  // Twice (a hand-made environment), and empty.
  Environment twice({"LD_PRELOAD=libmemtrace_preload.so", "LD_PRELOAD=libmemtrace_preload.so:z.so",
                     "LD_PRELOAD="});
  DropFromPreload(twice.get(), "libmemtrace_preload");
  EXPECT_EQ(twice.Entries(), (V{"LD_PRELOAD=z.so"}));
  DropFromPreload(nullptr, "libmemtrace_preload");  // no environment at all
}

// A copy of the library under another name is found by the path the loader has for it:
// the same path, or, for an entry the loader searched for (no '/'), the same file name.
// Another library of the same file name elsewhere, given by its path, is not this one.
TEST(PreloadConfigTest, DropFromPreloadFindsACopyUnderAnotherName) {
  using V = std::vector<std::string>;
  Environment by_path({"LD_PRELOAD=/a/liba.so:/opt/mt.so", "B=2"});
  DropFromPreload(by_path.get(), "libmemtrace_preload", "/opt/mt.so");
  EXPECT_EQ(by_path.Entries(), (V{"LD_PRELOAD=/a/liba.so", "B=2"}));
  Environment searched({"LD_PRELOAD=mt.so", "B=2"});
  DropFromPreload(searched.get(), "libmemtrace_preload", "/usr/lib/x86_64-linux-gnu/mt.so");
  EXPECT_EQ(searched.Entries(), (V{"B=2"}));
  Environment elsewhere({"LD_PRELOAD=/other/mt.so", "B=2"});
  DropFromPreload(elsewhere.get(), "libmemtrace_preload", "/opt/mt.so");
  EXPECT_EQ(elsewhere.Entries(), (V{"LD_PRELOAD=/other/mt.so", "B=2"}));
  // Without its own path only the marker counts, as before.
  Environment unknown({"LD_PRELOAD=/opt/mt.so"});
  DropFromPreload(unknown.get(), "libmemtrace_preload");
  EXPECT_EQ(unknown.Entries(), (V{"LD_PRELOAD=/opt/mt.so"}));
}

// BuildTracingEnvironment() into memory sized by MeasureTracingEnvironment() alone, with
// guard bytes after each part: a build that wrote past what the measure said fails.
std::vector<std::string> KeepTracing(Environment& env, const std::vector<const char*>& tracing,
                                     bool* changes) {
  constexpr std::string_view kLibrary = "/opt/m/libmemtrace_preload.so";
  std::vector<const char*> t = tracing;
  t.push_back(nullptr);
  const TracingEnvironmentSize size =
      MeasureTracingEnvironment(env.get(), kLibrary, "libmemtrace_preload", t.data());
  *changes = size.changes;
  std::vector<const char*> entries(size.entries + 1, "guard");
  std::string bytes(size.bytes + 1, '#');
  BuildTracingEnvironment(env.get(), kLibrary, "libmemtrace_preload", t.data(), entries.data(),
                          bytes.data());
  EXPECT_STREQ(entries[size.entries], "guard") << "more pointers than measured";
  EXPECT_EQ(bytes.back(), '#') << "more bytes than measured";
  EXPECT_EQ(entries[size.entries - 1], nullptr) << "fewer pointers than measured";
  std::vector<std::string> out;
  for (size_t i = 0; entries[i] != nullptr; ++i) out.emplace_back(entries[i]);
  return out;
}

TEST(PreloadConfigTest, TracingIsKeptInTheEnvironmentOfATracedProgramsChildren) {
  using V = std::vector<std::string>;
  const std::vector<const char*> tracing = {"MEMTRACE_OUTPUT=/tmp/c.mtb",
                                            "MEMTRACE_TRACE_CHILDREN=1", "MEMTRACE_ROOT_PID=42"};
  bool changes = false;
  // `env -i`: everything is added.
  Environment empty({});
  EXPECT_EQ(KeepTracing(empty, tracing, &changes),
            (V{"LD_PRELOAD=/opt/m/libmemtrace_preload.so", "MEMTRACE_OUTPUT=/tmp/c.mtb",
               "MEMTRACE_TRACE_CHILDREN=1", "MEMTRACE_ROOT_PID=42"}));
  EXPECT_TRUE(changes);
  // LD_PRELOAD replaced by the program's own library: the interposer goes first (its
  // malloc then calls that library's); a missing setting is added, a present one kept.
  Environment other({"A=1", "LD_PRELOAD=libjemalloc.so.2", "MEMTRACE_OUTPUT=/elsewhere.mtb"});
  EXPECT_EQ(KeepTracing(other, tracing, &changes),
            (V{"A=1", "LD_PRELOAD=/opt/m/libmemtrace_preload.so:libjemalloc.so.2",
               "MEMTRACE_OUTPUT=/elsewhere.mtb", "MEMTRACE_TRACE_CHILDREN=1",
               "MEMTRACE_ROOT_PID=42"}));
  EXPECT_TRUE(changes);
  // An empty LD_PRELOAD, twice (each is rewritten: ld.so's choice among them is its own).
  Environment twice({"LD_PRELOAD=", "LD_PRELOAD=a.so b.so"});
  EXPECT_EQ(KeepTracing(twice, {}, &changes),
            (V{"LD_PRELOAD=/opt/m/libmemtrace_preload.so",
               "LD_PRELOAD=/opt/m/libmemtrace_preload.so:a.so b.so"}));
  // Already tracing (the usual case): nothing changes, the array is the same.
  Environment kept({"LD_PRELOAD=x.so /usr/lib/libmemtrace_preload.so", "B=2",
                    "MEMTRACE_OUTPUT=/tmp/c.mtb", "MEMTRACE_TRACE_CHILDREN=1",
                    "MEMTRACE_ROOT_PID=7"});
  EXPECT_EQ(KeepTracing(kept, tracing, &changes), kept.Entries());
  EXPECT_FALSE(changes);
  // A name that merely starts like a setting's is not that setting.
  Environment similar({"LD_PRELOAD=libmemtrace_preload.so", "MEMTRACE_OUTPUTX=1"});
  EXPECT_EQ(KeepTracing(similar, {"MEMTRACE_OUTPUT=/o.mtb"}, &changes),
            (V{"LD_PRELOAD=libmemtrace_preload.so", "MEMTRACE_OUTPUTX=1",
               "MEMTRACE_OUTPUT=/o.mtb"}));
  EXPECT_TRUE(changes);
  // No environment at all (a null envp, which Linux takes as empty).
  EXPECT_EQ(MeasureTracingEnvironment(nullptr, "/l.so", "libmemtrace_preload", nullptr).entries,
            2u);
  // A copy under another name, at its own path: already tracing, not put in again.
  Environment renamed({"LD_PRELOAD=/opt/mt.so", "MEMTRACE_OUTPUT=/o.mtb"});
  EXPECT_FALSE(MeasureTracingEnvironment(renamed.get(), "/opt/mt.so", "libmemtrace_preload",
                                         nullptr)
                   .changes);
}

}  // namespace
}  // namespace memtrace
