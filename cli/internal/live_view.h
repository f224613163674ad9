// Copyright 2026 The memtrace Authors.
//
// live_view.h: what `memtrace live` shows of the snapshots a running process serves.
//
// A LiveView is given each reply of the live endpoint in turn (runtime/internal/
// live_server.h: the object `summary --json` prints, with "sites") and renders one screen:
//
//   memtrace live 4242: capture complete
//   live 1.2 MiB in 800 blocks (+9.8 KiB since the view started); high-water 2.0 MiB
//   sorted by live bytes; keys: g growth, l live bytes, q quit
//
//   sites by live bytes                                        live     blocks     growth
//     Parser::Grow() (parser.cc:88) via operator new in req  12.0 KiB         50   +9.8 KiB
//     (34 more sites: 1.2 MiB in 300 blocks)
//   scopes by live bytes
//     ...
//   layers by live bytes
//     ...
//
// A site's row names its scope ("in req"), unless that is "(unscoped)".
//
// Growth is a row's live bytes now less its live bytes in the first reply the view was
// given. A site is a (call site, scope) pair; one that was not among the first reply's
// top sites (the server lists the largest only) has no first value, and its growth reads
// "new" and sorts as its live bytes.
//
// Call sites are named as `memtrace top` names them (analysis/allocator_frames.h), after
// the first frame outside the allocator, symbolized from the files /proc/PID/maps lists
// for the target (read again on every render; the symbols are read once per file). When
// the pid is unknown or its maps cannot be read, a site is its address.
//
// Private to cli/: only live_command.cc includes it.
//
// Thread safety: one thread (the Symbolizer caches what it resolved).
//
// Example:
//
//   cli_internal::LiveView view("4242", 4242);
//   absl::StatusOr<std::string> screen = view.Render(reply);
//   view.set_sort(cli_internal::LiveView::Sort::kGrowth);

#ifndef MEMTRACE_CLI_INTERNAL_LIVE_VIEW_H_
#define MEMTRACE_CLI_INTERNAL_LIVE_VIEW_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/symbolizer.h"

namespace memtrace::cli_internal {

class LiveView {
 public:
  enum class Sort { kLiveBytes, kGrowth };
  // Rows shown per table; the rest are summed into one "(N more ...)" row.
  static constexpr size_t kTopRows = 10;

  // `target` as the user named it (a pid or a socket path), for the first line; `pid`:
  // the process serving, 0 when unknown.
  LiveView(std::string target, pid_t pid);
  ~LiveView();

  // One screen for `json`, a reply of the live endpoint; an error when `json` is not one
  // (not JSON, or without the fields the view shows). The first reply given is the one
  // growth is measured from.
  absl::StatusOr<std::string> Render(const std::string& json);

  // Applies the keys typed: g sorts by growth, l by live bytes. True when one was q.
  bool Keys(const char* keys, size_t n);

  void set_sort(Sort sort) { sort_ = sort; }
  Sort sort() const { return sort_; }

 private:
  struct Row {
    std::string key;   // what growth is matched by: a scope's path, a layer's name, a site
    std::string name;  // what is shown
    uint64_t live_bytes = 0;
    uint64_t live_count = 0;
    std::optional<int64_t> growth;  // none: not in the first reply
  };
  struct Table {
    std::vector<Row> rows;
    uint64_t more = 0, more_bytes = 0, more_count = 0;  // left out by the server
  };
  // Sets each row's growth from first_ (the first reply's live bytes by key, which the
  // first call records), and sorts the rows.
  void Finish(const char* table, Table* t);
  void AppendTable(std::string& out, const char* what, Table t);
  std::string SiteName(uint64_t addr, const std::vector<uint64_t>& frames);
  // Reads the target's executable mappings again; a new Symbolizer when they changed.
  void LoadModules();

  const std::string target_;
  const pid_t pid_;
  Sort sort_ = Sort::kLiveBytes;
  bool first_taken_ = false;
  int64_t first_total_ = 0;
  std::map<std::string, int64_t> first_;  // "<table>\t<key>" -> live bytes
  std::string maps_;                      // the executable lines of /proc/PID/maps
  std::unique_ptr<Symbolizer> symbolizer_;  // null: no modules known
};

}  // namespace memtrace::cli_internal

#endif  // MEMTRACE_CLI_INTERNAL_LIVE_VIEW_H_
