// Copyright 2026 The memtrace Authors.

#include "cli/internal/live_view.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/allocator_frames.h"
#include "simdjson.h"
#include "sinks/summary_table.h"
#include "transport/event.h"

namespace memtrace::cli_internal {
namespace {

constexpr int kNameWidth = 56;
constexpr size_t kMinSiteWidth = 24;  // a site's name beside a long scope path

// "+9.8 KiB", "-1.0 KiB", "0 B".
std::string FormatGrowth(int64_t bytes) {
  if (bytes == 0) return "0 B";
  const uint64_t magnitude = bytes < 0 ? uint64_t(0) - static_cast<uint64_t>(bytes)
                                       : static_cast<uint64_t>(bytes);
  return absl::StrCat(bytes < 0 ? "-" : "+", FormatBytes(magnitude));
}

// `name` cut to `width` characters, "..." marking the cut.
std::string Fit(std::string name, size_t width) {
  if (name.size() > width) name = name.substr(0, width - 3) + "...";
  return name;
}

// `usage`: an element or the result of looking one up.
template <typename Element>
bool Usage(Element usage, uint64_t* bytes, uint64_t* count) {
  return usage["live_bytes"].get_uint64().get(*bytes) == simdjson::SUCCESS &&
         usage["live_count"].get_uint64().get(*count) == simdjson::SUCCESS;
}

// A hex string from the reply ("0x5100"); false when it is not one.
bool Address(std::string_view text, uint64_t* out) {
  if (text.size() < 3 || text.substr(0, 2) != "0x") return false;
  return absl::SimpleHexAtoi(std::string(text.substr(2)), out);
}

}  // namespace

LiveView::LiveView(std::string target, pid_t pid) : target_(std::move(target)), pid_(pid) {}
LiveView::~LiveView() = default;

bool LiveView::Keys(const char* keys, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (keys[i] == 'q') return true;
    if (keys[i] == 'g') sort_ = Sort::kGrowth;
    if (keys[i] == 'l') sort_ = Sort::kLiveBytes;
  }
  return false;
}

void LiveView::LoadModules() {
  if (pid_ <= 0) return;
  std::ifstream in(absl::StrCat("/proc/", pid_, "/maps"));
  std::string exec_lines, line;
  std::vector<CaptureRecord> modules;
  while (std::getline(in, line)) {
    // start-end perms offset dev inode path
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode, path;
    fields >> range >> perms >> offset >> dev >> inode;
    std::getline(fields >> std::ws, path);
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] != '/') continue;
    CaptureRecord m;
    m.type = LineType::kModule;
    m.path = path;
    const size_t dash = range.find('-');
    if (dash == std::string::npos || !absl::SimpleHexAtoi(range.substr(0, dash), &m.start) ||
        !absl::SimpleHexAtoi(range.substr(dash + 1), &m.end) ||
        !absl::SimpleHexAtoi(offset, &m.offset)) {
      continue;
    }
    absl::StrAppend(&exec_lines, line, "\n");
    modules.push_back(std::move(m));
  }
  if (exec_lines == maps_ && symbolizer_ != nullptr) return;
  maps_ = std::move(exec_lines);
  symbolizer_.reset();
  if (modules.empty()) return;
  symbolizer_ = std::make_unique<Symbolizer>();
  for (const CaptureRecord& m : modules) symbolizer_->AddModule(m);
}

std::string LiveView::SiteName(uint64_t addr, const std::vector<uint64_t>& frames) {
  if (addr == 0) return "(no call site)";
  if (addr == kOtherSitesAddress) return "(other sites)";
  if (symbolizer_ != nullptr && !frames.empty()) return SiteLabel(*symbolizer_, frames);
  if (symbolizer_ != nullptr && (addr & kStackHashBit) == 0) {
    return SiteLabel(*symbolizer_, {addr});
  }
  // A stack whose frames the server did not keep is its hash; an address outside every
  // module, or with no modules known, is itself.
  return absl::StrCat(frames.empty() && (addr & kStackHashBit) != 0 ? "stack " : "", "0x",
                      absl::Hex(frames.empty() ? addr : frames.front()));
}

void LiveView::Finish(const char* table, Table* t) {
  for (Row& r : t->rows) {
    const std::string key = absl::StrCat(table, "\t", r.key);
    const int64_t now = static_cast<int64_t>(r.live_bytes);
    if (!first_taken_) first_[key] = now;
    if (auto it = first_.find(key); it != first_.end()) r.growth = now - it->second;
  }
  auto weight = [&](const Row& r) {
    if (sort_ == Sort::kLiveBytes) return static_cast<int64_t>(r.live_bytes);
    return r.growth.value_or(static_cast<int64_t>(r.live_bytes));
  };
  std::stable_sort(t->rows.begin(), t->rows.end(),
                   [&](const Row& a, const Row& b) { return weight(a) > weight(b); });
}

void LiveView::AppendTable(std::string& out, const char* what, Table t) {
  absl::StrAppendFormat(
      &out, "\n%-*s %12s %10s %11s\n", kNameWidth + 2,
      absl::StrCat(what, sort_ == Sort::kGrowth ? " by growth" : " by live bytes"), "live",
      "blocks", "growth");
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const Row& r = t.rows[i];
    if (i >= kTopRows) {
      ++t.more;
      t.more_bytes += r.live_bytes;
      t.more_count += r.live_count;
      continue;
    }
    absl::StrAppendFormat(&out, "  %-*s %12s %10d %11s\n", kNameWidth, Fit(r.name, kNameWidth),
                          FormatBytes(r.live_bytes), r.live_count,
                          r.growth.has_value() ? FormatGrowth(*r.growth) : "new");
  }
  if (t.more > 0) {
    absl::StrAppend(&out, "  (", t.more, " more ", what, ": ", FormatBytes(t.more_bytes),
                    " in ", t.more_count, " blocks)\n");
  }
}

absl::StatusOr<std::string> LiveView::Render(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(simdjson::padded_string(json)).get(root) != simdjson::SUCCESS) {
    return absl::DataLossError("the reply is not JSON");
  }
  uint64_t live = 0, count = 0, high = 0;
  std::string_view verdict;
  simdjson::dom::array scopes, layers, sites;
  if (!Usage(root["totals"], &live, &count) ||
      root["totals"]["high_water_bytes"].get_uint64().get(high) != simdjson::SUCCESS ||
      root["verdict"].get_string().get(verdict) != simdjson::SUCCESS ||
      root["scopes"].get_array().get(scopes) != simdjson::SUCCESS ||
      root["layers"].get_array().get(layers) != simdjson::SUCCESS) {
    return absl::DataLossError("the reply is not a memtrace snapshot");
  }
  // A server without sites (an older memtrace) still shows its scopes and layers.
  const bool has_sites = root["sites"].get_array().get(sites) == simdjson::SUCCESS;

  Table site_table, scope_table, layer_table;
  if (has_sites) {
    LoadModules();
    for (simdjson::dom::element e : sites) {
      Row r;
      std::string_view addr_text, path;
      uint64_t addr = 0;
      if (e["addr"].get_string().get(addr_text) != simdjson::SUCCESS ||
          !Address(addr_text, &addr) || e["path"].get_string().get(path) != simdjson::SUCCESS ||
          !Usage(e, &r.live_bytes, &r.live_count)) {
        return absl::DataLossError("the reply's sites are not a memtrace snapshot's");
      }
      std::vector<uint64_t> frames;
      simdjson::dom::array frame_array;
      if (e["frames"].get_array().get(frame_array) == simdjson::SUCCESS) {
        for (simdjson::dom::element f : frame_array) {
          std::string_view text;
          uint64_t pc = 0;
          if (f.get_string().get(text) == simdjson::SUCCESS && Address(text, &pc)) {
            frames.push_back(pc);
          }
        }
      }
      r.key = absl::StrCat(std::string(addr_text), "\t", std::string(path));
      // The scope stays whole; the site's name is cut to fit beside it. A program without
      // scopes has all its sites in (unscoped): they go without saying.
      const std::string in_scope =
          path == "(unscoped)" ? std::string() : absl::StrCat(" in ", std::string(path));
      const size_t room = std::max<size_t>(kMinSiteWidth, kNameWidth - in_scope.size());
      r.name = Fit(SiteName(addr, frames), room) + in_scope;
      site_table.rows.push_back(std::move(r));
    }
    auto omitted = root["sites_omitted"];
    if (omitted["pairs"].get_uint64().get(site_table.more) != simdjson::SUCCESS ||
        !Usage(omitted, &site_table.more_bytes, &site_table.more_count)) {
      return absl::DataLossError("the reply's sites are not a memtrace snapshot's");
    }
  }
  auto read = [](simdjson::dom::array array, const char* name_field, Table* t) {
    for (simdjson::dom::element e : array) {
      Row r;
      std::string_view name;
      if (e[name_field].get_string().get(name) != simdjson::SUCCESS ||
          !Usage(e["usage"], &r.live_bytes, &r.live_count)) {
        continue;
      }
      r.key = r.name = std::string(name);
      t->rows.push_back(std::move(r));
    }
  };
  read(scopes, "path", &scope_table);
  read(layers, "name", &layer_table);
  Finish("sites", &site_table);
  Finish("scopes", &scope_table);
  Finish("layers", &layer_table);
  if (!first_taken_) first_total_ = static_cast<int64_t>(live);
  first_taken_ = true;

  std::string out = absl::StrCat(
      "memtrace live ", target_, ": capture ", std::string(verdict), "\nlive ",
      FormatBytes(live), " in ", count, " blocks (",
      FormatGrowth(static_cast<int64_t>(live) - first_total_),
      " since the view started); high-water ", FormatBytes(high), "\nsorted by ",
      sort_ == Sort::kGrowth ? "growth" : "live bytes",
      "; keys: g growth, l live bytes, q quit\n");
  if (has_sites) AppendTable(out, "sites", std::move(site_table));
  AppendTable(out, "scopes", std::move(scope_table));
  AppendTable(out, "layers", std::move(layer_table));
  return out;
}

}  // namespace memtrace::cli_internal
