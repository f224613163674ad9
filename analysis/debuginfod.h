// Copyright 2026 The memtrace Authors.
//
// debuginfod.h: a module's executable or debug information, fetched by GNU build id from
// the debuginfod servers that DEBUGINFOD_URLS names, for the symbolizer.
//
// A capture names its modules by path and build id. When the file at that path is gone,
// is another build, or has no symbols, the build id is enough for a debuginfod server
// (Debian's is https://debuginfod.debian.net) to hand back the file that ran and its debug
// information. This is elfutils' libdebuginfod (Debian's libdebuginfod-dev), the client
// gdb, perf and valgrind use, configured the same way:
//
//   DEBUGINFOD_URLS        the servers, separated by spaces; unset or empty: none asked
//   DEBUGINFOD_CACHE_PATH  where fetched files are kept (~/.cache/debuginfod_client)
//   DEBUGINFOD_TIMEOUT     seconds a server may take to start answering (90)
//
// Fetch() asks once per build id and kind in a process: the answer, found or not, is kept,
// so a module several captures share (a forked family, a diff) costs one round trip, and a
// server that does not answer costs its timeout once. Files already fetched come from the
// client's cache without a request.
//
// Thread safety: Fetch() may be called from any thread; calls are serialized.
//
// Example:
//   absl::StatusOr<std::string> debug =
//       Debuginfod::Fetch(Debuginfod::Kind::kDebugInfo, build_id, "/usr/bin/ls", stderr);
//   if (debug.ok()) ... open *debug ...;
//   else ... debug.status().message(): "no server in DEBUGINFOD_URLS (...) has it" ...

#ifndef MEMTRACE_ANALYSIS_DEBUGINFOD_H_
#define MEMTRACE_ANALYSIS_DEBUGINFOD_H_

#include <cstdio>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace memtrace {

class Debuginfod {
 public:
  enum class Kind { kExecutable, kDebugInfo };

  // The servers DEBUGINFOD_URLS names, as set; empty when none are (nothing is asked then).
  static std::string Urls();

  // Whether DEBUGINFOD_URLS names a server: false when it is unset, empty or blank.
  static bool HasServers();

  // The path, in the client's cache, of the file of this kind for `build_id` (lower-case
  // hex). `module` names the module in the line written to `progress` (when not null)
  // before a server is asked. Errors: FailedPrecondition when DEBUGINFOD_URLS names no
  // server; NotFound when no server has it; Unavailable when the servers could not be
  // asked (the message says why: "Connection refused", "Timer expired", ...).
  static absl::StatusOr<std::string> Fetch(Kind kind, std::string_view build_id,
                                           std::string_view module, std::FILE* progress);
};

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_DEBUGINFOD_H_
