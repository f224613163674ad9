// Copyright 2026 The memtrace Authors.

#include "tests/preload_test_support.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "analysis/capture_reader.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

bool IsMarker(uint64_t size) { return size >= 50001 && size <= 59999 && size % 2 == 1; }

}  // namespace

const std::string& Cli() {
  static const std::string path = Runfile("cli/memtrace");
  return path;
}

const std::string& Preload() {
  static const std::string path = Runfile("preload/libmemtrace_preload.so");
  return path;
}

const std::string& Target() {
  static const std::string path = Runfile("tests/preload_target");
  return path;
}

const std::string& EarlyAllocations() {
  static const std::string path = Runfile("tests/early_allocations");
  return path;
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> files;
  const Result ls = RunProgram({"/bin/ls", dir}, {});
  for (absl::string_view name : absl::StrSplit(ls.out, '\n', absl::SkipEmpty())) {
    files.emplace_back(name);
  }
  return files;
}

Counts ParseCounts(const std::string& out) {
  Counts c;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (line.substr(0, 7) != "allocs=" || c.allocs >= 0) continue;  // the first line
    for (absl::string_view field : absl::StrSplit(line, ' ')) {
      const std::pair<std::string, std::string> kv = absl::StrSplit(field, '=');
      int64_t v = 0;
      if (!absl::SimpleAtoi(kv.second, &v)) continue;
      if (kv.first == "allocs") c.allocs = v;
      if (kv.first == "frees") c.frees = v;
      if (kv.first == "live_count") c.live_count = v;
      if (kv.first == "live_bytes") c.live_bytes = v;
      if (kv.first == "in_place") c.in_place = v;
      if (kv.first == "moved") c.moved = v;
      if (kv.first == "calls") c.calls = v;
    }
  }
  return c;
}

Replay ReplayCapture(const std::string& path, absl::Status* status) {
  Replay r;
  struct LiveBlock {
    uint64_t addr;
    uint64_t size;
  };
  std::map<uint64_t, LiveBlock> live;                    // ticket -> block
  std::map<uint64_t, std::vector<uint64_t>> by_address;  // address -> tickets, oldest first
  auto add = [&](uint64_t ticket, uint64_t addr, uint64_t size) {
    live[ticket] = LiveBlock{addr, size};
    by_address[addr].push_back(ticket);
    r.live_bytes += static_cast<int64_t>(size);
    r.high_water_bytes = std::max(r.high_water_bytes, r.live_bytes);
  };
  // Removes the block `of` names (or the oldest at `addr`); its size, or -1 if none.
  auto take = [&](uint64_t of, uint64_t addr) -> int64_t {
    auto it = live.find(of);
    if (it == live.end() || it->second.addr != addr) {
      auto at = by_address.find(addr);
      if (at == by_address.end() || at->second.empty()) return -1;
      it = live.find(at->second.front());
    }
    const LiveBlock block = it->second;
    const uint64_t ticket = it->first;
    live.erase(it);
    std::vector<uint64_t>& tickets = by_address[block.addr];
    tickets.erase(std::find(tickets.begin(), tickets.end(), ticket));
    if (tickets.empty()) by_address.erase(block.addr);
    r.live_bytes -= static_cast<int64_t>(block.size);
    return static_cast<int64_t>(block.size);
  };
  auto adjust = [&](int64_t size, int sign) {
    if (size < 0 || !IsMarker(static_cast<uint64_t>(size))) return;
    r.markers.live_bytes += sign * size;
  };
  // Per thread: the size of the block its last remap released. A move's two halves may
  // be applied in different epochs, with other threads' records between them.
  std::map<uint32_t, int64_t> moving;
  *status = ReadCapture(path, [&](const CaptureRecord& rec) {
    switch (rec.type) {
      case LineType::kHeader:
        r.source = rec.source;
        r.header = rec.raw;
        break;
      case LineType::kSite: r.sites[rec.id] = rec; break;
      case LineType::kAlloc:
        add(rec.ticket, rec.addr, rec.size);
        if (IsMarker(rec.size)) {
          ++r.markers.allocs;
          ++r.markers.live_count;
          r.markers.live_bytes += static_cast<int64_t>(rec.size);
          r.marker_allocs.push_back(rec);
        }
        break;
      case LineType::kFree: {
        const int64_t size = take(rec.of, rec.addr);
        if (size < 0) {
          ++r.unknown_releases;
        } else if (IsMarker(static_cast<uint64_t>(size))) {
          ++r.markers.frees;
          --r.markers.live_count;
          r.markers.live_bytes -= size;
        }
        break;
      }
      case LineType::kResize: {
        // The block keeps its identity; a marker resized to a marker changes bytes only.
        const int64_t size = take(rec.of, rec.addr);
        if (size < 0) {
          ++r.unknown_releases;
          break;
        }
        if (IsMarker(static_cast<uint64_t>(size))) ++r.markers.in_place;
        adjust(size, -1);
        adjust(static_cast<int64_t>(rec.size), +1);
        add(rec.ticket, rec.addr, rec.size);
        break;
      }
      case LineType::kRemap:
        moving[rec.thread] = take(rec.of, rec.addr);
        if (moving[rec.thread] < 0) ++r.unknown_releases;
        if (moving[rec.thread] > 0 && IsMarker(static_cast<uint64_t>(moving[rec.thread]))) {
          ++r.markers.moved;
        }
        break;
      case LineType::kRemapTarget:
        add(rec.ticket, rec.addr, rec.size);
        adjust(moving[rec.thread], -1);
        adjust(static_cast<int64_t>(rec.size), +1);
        break;
      case LineType::kTrailer:
        r.has_trailer = true;
        r.trailer = rec.raw;
        break;
      default: break;
    }
    return absl::OkStatus();
  });
  return r;
}

std::string RowOf(const std::string& out, const std::string& label) {
  const size_t at = out.find(label);
  if (at == std::string::npos) return "";
  const size_t begin = out.rfind('\n', at) + 1;  // npos + 1 is 0: the first line
  return out.substr(begin, out.find('\n', at) - begin);
}

std::string Field(const std::string& json, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const size_t at = json.find(key);
  if (at == std::string::npos) return "";
  size_t end = at + key.size();
  if (json[end] == '"') return json.substr(end + 1, json.find('"', end + 1) - end - 1);
  while (end < json.size() && json[end] != ',' && json[end] != '}') ++end;
  return json.substr(at + key.size(), end - at - key.size());
}

void ExpectMarkersMatch(const Replay& r, const Counts& program) {
  ASSERT_GE(program.allocs, 0) << "the program printed no counts";
  EXPECT_EQ(r.markers.allocs, program.allocs);
  EXPECT_EQ(r.markers.frees, program.frees);
  EXPECT_EQ(r.markers.live_count, program.live_count);
  EXPECT_EQ(r.markers.live_bytes, program.live_bytes);
  // Every realloc of a marker, as the program saw it: in place or moved.
  if (program.in_place >= 0) {
    EXPECT_EQ(r.markers.in_place, program.in_place);
  }
  if (program.moved >= 0) {
    EXPECT_EQ(r.markers.moved, program.moved);
  }
}

void ExpectCompleteAndMatching(const std::string& capture, const std::string& program_out) {
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  ExpectMarkersMatch(r, ParseCounts(program_out));
}

pid_t SpawnTraced(const std::vector<std::string>& argv, const std::string& capture,
                  const std::string& out, const std::vector<std::string>& env) {
  std::vector<std::string> all = {"LD_PRELOAD=" + Preload(), "MEMTRACE_OUTPUT=" + capture};
  all.insert(all.end(), env.begin(), env.end());
  return Spawn(argv, all, out, "");
}

bool WaitForOutput(const std::string& out, const std::string& text) {
  for (int i = 0; i < 30000 && ReadFile(out).find(text) == std::string::npos; ++i) usleep(1000);
  return ReadFile(out).find(text) != std::string::npos;
}

SizeCounts CountAllocsOfSize(const std::string& capture, uint64_t size) {
  SizeCounts c;
  std::set<uint64_t> live;  // addresses of live blocks of `size`
  const absl::Status s = ReadCapture(capture, [&](const CaptureRecord& r) {
    if (r.type == LineType::kAlloc && r.size == size) {
      ++c.allocs;
      live.insert(r.addr);
    } else if (r.type == LineType::kFree && live.erase(r.addr) != 0) {
      ++c.frees;
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return c;
}

}  // namespace memtrace
