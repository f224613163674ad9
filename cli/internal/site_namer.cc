// Copyright 2026 The memtrace Authors.

#include "cli/internal/site_namer.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "analysis/debuginfod.h"

ABSL_FLAG(std::string, allocator, "",
          "the program's own allocator (or container library) functions, comma-separated "
          "(pool_alloc,Engine::Alloc*,folly::*): a site is named after the caller of the "
          "outermost one, as of malloc or operator new");

namespace memtrace::cli_internal {

std::unique_ptr<Symbolizer> ModuleSymbolizer(const CaptureSummary& s) {
  auto symbolizer = std::make_unique<Symbolizer>();
  symbolizer->set_progress(stderr);  // a wait for a debuginfod server is explained
  for (const CaptureRecord& m : s.modules) symbolizer->AddModule(m);
  return symbolizer;
}

std::optional<int> ParseAllocators(const CommandSpec& spec, AllocatorFunctions* out) {
  absl::StatusOr<AllocatorFunctions> parsed =
      AllocatorFunctions::Parse(absl::GetFlag(FLAGS_allocator));
  if (!parsed.ok()) return UsageError(spec, std::string(parsed.status().message()));
  *out = *std::move(parsed);
  return std::nullopt;
}

void PrintUnresolvedNote(const std::vector<UnresolvedModule>& modules) {
  if (modules.empty()) return;
  constexpr size_t kListed = 5;
  const bool no_servers = !Debuginfod::HasServers();
  printf("\nnote: %zu module%s frames without a name (\"??\"). Symbols are read now, not "
         "when the\ncapture was made: once they are there, run this again.\n",
         modules.size(), modules.size() == 1 ? " has" : "s have");
  for (size_t i = 0; i < modules.size() && i < kListed; ++i) {
    const UnresolvedModule& u = modules[i];
    printf("  %s (%llu address%s): ", u.path.c_str(), static_cast<unsigned long long>(u.frames),
           u.frames == 1 ? "" : "es");
    switch (u.why) {
      case MissingSymbols::kNoFile:
        printf("the file is not here (missing, unreadable or not ELF);\n      run this where "
               "it is, or put the file that ran at that path\n");
        break;
      case MissingSymbols::kOtherBuild:
        printf("the file at that path is not the build that ran\n      (the capture's build "
               "id is %s); put that build back at that path\n",
               u.build_id.c_str());
        break;
      case MissingSymbols::kNoSymbols: {
        const std::string debug_file = DebugFileForBuildId(u.build_id);
        if (debug_file.empty()) {
          printf("the file has no symbols for them;\n      build it with -g, or keep its "
                 "symbols\n");
        } else {
          printf("the file has no symbols for them;\n      install its debug information at "
                 "%s\n      (Debian: the package's -dbgsym, from the debian-debug archive)\n",
                 debug_file.c_str());
        }
        break;
      }
    }
    // debuginfod: what the servers said, or that they could be asked.
    if (!u.debuginfod.empty()) {
      printf("      debuginfod: %s\n", u.debuginfod.c_str());
    } else if (!u.build_id.empty() && no_servers) {
      printf("      or set DEBUGINFOD_URLS to fetch %s by its build id\n",
             u.why == MissingSymbols::kNoSymbols ? "its debug information" : "the file");
    }
  }
  if (no_servers && std::any_of(modules.begin(), modules.end(), [](const UnresolvedModule& u) {
        return !u.build_id.empty();
      })) {
    printf("  (DEBUGINFOD_URLS names debuginfod servers, as for gdb; Debian's: "
           "https://debuginfod.debian.net)\n");
  }
  if (modules.size() > kListed) printf("  (%zu more modules)\n", modules.size() - kListed);
}

}  // namespace memtrace::cli_internal
