// Copyright 2026 The memtrace Authors.

#include "sinks/snapshot_capture.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/internal/module_map.h"
#include "runtime/internal/site_table.h"
#include "runtime/layer_table.h"
#include "runtime/scope_table.h"
#include "sinks/binary_encoding.h"
#include "sinks/capture_ends.h"
#include "sinks/jsonl_encoding.h"

namespace memtrace {
namespace {

// The table lines of a snapshot capture, each written once, before the first event that
// names it.
class Tables {
 public:
  Tables(const LiveCapture& capture, BinaryEncoder* out) : capture_(capture), out_(out) {}

  void Layer(LayerId layer) {
    if (layers_[layer]) return;
    layers_[layer] = true;
    out_->Json(JsonLayerLine(layer, LayerTable::Global().Name(layer)));
  }

  void Scope(uint32_t path) {
    if (path < scopes_.size() && scopes_[path]) return;
    ScopeTable& table = ScopeTable::Global();
    const uint32_t parent = table.Parent(path);
    if (path != ScopeTable::kRootPath) Scope(parent);
    if (path >= scopes_.size()) scopes_.resize(path + 1, false);
    scopes_[path] = true;
    out_->Json(JsonScopeLine(path, parent, table.Name(path), table.PathString(path)));
  }

  // The capture's dense id for the site word `site`.
  uint32_t Site(uint64_t site) {
    const auto [it, inserted] = sites_.try_emplace(site, static_cast<uint32_t>(sites_.size()));
    if (!inserted) return it->second;
    if (site == SiteTable::kOtherSitesValue) {
      out_->Json(JsonSiteLine(it->second, site, {}, /*other=*/true));
      return it->second;
    }
    const auto frames = capture_.frames.find(site);
    if (frames != capture_.frames.end() && !frames->second.empty()) {
      out_->Json(JsonSiteLine(it->second, frames->second[0], frames->second, /*other=*/false));
    } else {
      out_->Json(JsonSiteLine(it->second, site, {}, /*other=*/false));
    }
    return it->second;
  }

 private:
  const LiveCapture& capture_;
  BinaryEncoder* const out_;
  bool layers_[256] = {};
  std::vector<bool> scopes_;
  absl::flat_hash_map<uint64_t, uint32_t> sites_;
};

}  // namespace

bool WriteSnapshotCapture(const LiveCapture& capture, pid_t pid,
                          const Config::CaptureDescription& description,
                          absl::FunctionRef<bool(std::string_view)> write) {
  const Snapshot& snap = capture.snapshot;
  std::string buffer;
  BinaryEncoder out(&buffer);
  // Hands over what is written so far: a piece's worth, or at the end the rest.
  auto pass = [&] {
    out.Flush();
    const bool ok = buffer.empty() || write(buffer);
    buffer.clear();
    return ok;
  };
  out.Magic();
  out.Json(JsonHeaderLine(
      pid, snap.taken_unix_ns, description.source,
      absl::StrCat(description.header_fields, description.header_fields.empty() ? "" : ",",
                   "\"snapshot\":{\"taken_unix_ns\":", snap.taken_unix_ns,
                   ",\"blocks\":", capture.blocks.size(), ",\"bytes\":", snap.totals.live_bytes,
                   "}")));
  for (const ModuleInfo& m : LoadedModules()) {
    out.Json(JsonModuleLine(m.path, m.start, m.end, m.offset, m.build_id));
  }
  Tables tables(capture, &out);
  // Every layer and scope the trailer counts has its line, also those that hold nothing
  // now, so the trailer's ids all have names.
  for (const LayerUsage& l : snap.layers) tables.Layer(l.layer);
  for (const ScopeUsage& s : snap.scopes) tables.Scope(s.scope);
  // One epoch: the moment of the cut. The epoch's number is the drainer's epoch count,
  // which no reader needs but for ordering, and a capture of one epoch has one order.
  out.Epoch(snap.taken_unix_ns, static_cast<uint32_t>(snap.integrity.epochs));
  uint64_t ticket = 0;
  for (const AllocationRecord& b : capture.blocks) {
    tables.Layer(b.layer);
    tables.Scope(b.scope);
    const uint32_t site = tables.Site(b.site);
    if (description.sample_interval_bytes == 0) {
      out.Alloc(/*thread=*/0, b.address, b.size, b.layer, b.scope, site, ++ticket);
    } else {
      // As the sink weighs a sampled allocation (jsonl_sink.cc), to the value a reader of
      // the JSONL line would get.
      const double weight =
          RoundedWeight(SampleWeight(b.size, description.sample_interval_bytes));
      out.Alloc(/*thread=*/0, b.address, b.size, b.layer, b.scope, site, ++ticket,
                CaptureEventType::kAlloc, &weight);
    }
    if (out.size() >= kSnapshotPieceBytes && !pass()) return false;
  }
  CaptureSinkCounts counts;
  counts.events_written = capture.blocks.size();
  counts.event_lines = capture.blocks.size();
  out.Json(JsonTrailerLine(snap, snap.integrity.complete(), counts, {}, {}));
  return pass();
}

}  // namespace memtrace
