// Copyright 2026 The memtrace Authors.
//
// site_namer.h: how `memtrace top` and `memtrace peak` name call sites.
//
// A SiteNamer names a capture's call sites after the first frame outside the allocator
// (analysis/allocator_frames.h: malloc, operator new, the wrappers of common libraries,
// and the functions --allocator adds), symbolized through the capture's module lines
// (function (file:line)); a capture without module lines (the wrapped-allocator API) gets
// bare return addresses. SharedSymbolizers gives the captures of one process family that
// share their module lines one Symbolizer. PrintUnresolvedNote() says, under a table of
// sites, which modules left frames without a name ("??"), why, and what would name them.
//
// Private to cli/: only the subcommands' own files include it.
//
// Thread safety: one thread (a Symbolizer caches what it resolved); main() only.
//
// Example:
//
//   AllocatorFunctions allocators;
//   if (auto exit = cli_internal::ParseAllocators(kTopSpec, &allocators)) return *exit;
//   cli_internal::SiteNamer names(*s, std::move(allocators));
//   printf("%s\n", names.Name(a.site).c_str());
//   cli_internal::PrintUnresolvedNote(names.Unresolved());

#ifndef MEMTRACE_CLI_INTERNAL_SITE_NAMER_H_
#define MEMTRACE_CLI_INTERNAL_SITE_NAMER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/allocator_frames.h"
#include "analysis/analyzer.h"
#include "analysis/symbolizer.h"
#include "cli/command_line.h"
#include "cli/internal/analysis_common.h"
#include "sinks/json_text.h"

namespace memtrace::cli_internal {

// A Symbolizer given the capture's module lines.
std::unique_ptr<Symbolizer> ModuleSymbolizer(const CaptureSummary& s);

// Names call sites: symbolized through the capture's module lines when it has any, else
// the bare return address (captures of the wrapped-allocator API list no modules).
// `shared`: a Symbolizer given this capture's module lines already (SharedSymbolizers),
// used instead of a new one.
class SiteNamer {
 public:
  SiteNamer(const CaptureSummary& s, AllocatorFunctions allocators,
            Symbolizer* shared = nullptr)
      : summary_(s), allocators_(std::move(allocators)) {
    if (shared == nullptr) own_ = ModuleSymbolizer(s);
    symbolizer_ = shared != nullptr ? shared : own_.get();
  }
  uint64_t Addr(uint32_t site) const {
    auto it = summary_.site_addrs.find(site);
    return it != summary_.site_addrs.end() ? it->second : 0;
  }
  std::vector<uint64_t> Frames(uint32_t site) const {
    auto it = summary_.site_frames.find(site);
    if (it != summary_.site_frames.end()) return it->second;
    return {Addr(site)};
  }
  std::string Describe(uint64_t pc) {
    return summary_.modules.empty() && pc != 0 ? Hex(pc) : symbolizer_->Describe(pc);
  }
  // Named after its first frame outside the allocator (analysis/allocator_frames.h).
  std::string Name(uint32_t site) {
    if (summary_.site_addrs.count(site) == 0) return absl::StrCat("site ", site);
    if (summary_.modules.empty()) return Describe(Addr(site));
    return SiteLabel(*symbolizer_, Frames(site), allocators_);
  }
  // The modules whose frames were named "??" so far (Symbolizer::Unresolved()).
  std::vector<UnresolvedModule> Unresolved() const {
    if (summary_.modules.empty()) return {};
    return symbolizer_->Unresolved();
  }
  std::string JsonFrame(uint64_t pc) {
    const SymbolizedFrame& f = symbolizer_->Resolve(pc);
    std::string inlined;
    for (const InlinedFrame& in : Inlined(pc)) {
      absl::StrAppend(&inlined, inlined.empty() ? "" : ",", "{\"function\":",
                      JsonQuote(in.function), ",\"file\":", JsonQuote(in.file),
                      ",\"line\":", in.line, "}");
    }
    return absl::StrCat("{\"pc\":\"", Hex(pc), "\",\"function\":", JsonQuote(f.function),
                        ",\"file\":", JsonQuote(f.file), ",\"line\":", f.line,
                        ",\"module\":", JsonQuote(f.module), ",\"module_offset\":\"",
                        Hex(f.module_offset), "\",\"text\":", JsonQuote(Describe(pc)),
                        ",\"inlined\":[", inlined, "]}");
  }
  // The functions inlined into the function at pc, innermost first (none for a capture
  // without module lines).
  const std::vector<InlinedFrame>& Inlined(uint64_t pc) {
    static const std::vector<InlinedFrame> kNone;
    return summary_.modules.empty() || pc == 0 ? kNone : symbolizer_->Resolve(pc).inlined;
  }

 private:
  const CaptureSummary& summary_;
  const AllocatorFunctions allocators_;
  std::unique_ptr<Symbolizer> own_;
  Symbolizer* symbolizer_;
};

// One Symbolizer for every capture of a family whose module lines are the same (a forked
// child's are its parent's): each opens and indexes every ELF file it resolves in, which
// took `memtrace top` over postgres's 123 captures 24 s, 0.1 s a capture.
class SharedSymbolizers {
 public:
  Symbolizer* For(const CaptureSummary& s) {
    std::string key;
    for (const CaptureRecord& m : s.modules) {
      absl::StrAppend(&key, m.path, "|", m.start, "|", m.end, "|", m.offset, "|", m.build_id,
                      "\n");
    }
    std::unique_ptr<Symbolizer>& symbolizer = by_modules_[key];
    if (symbolizer == nullptr) symbolizer = ModuleSymbolizer(s);
    return symbolizer.get();
  }
  // Every Symbolizer's unresolved modules, one entry per path.
  std::vector<UnresolvedModule> Unresolved() const {
    std::vector<UnresolvedModule> out;
    for (const auto& [key, symbolizer] : by_modules_) {
      for (const UnresolvedModule& u : symbolizer->Unresolved()) AddUnresolved(&out, u);
    }
    return out;
  }

 private:
  std::map<std::string, std::unique_ptr<Symbolizer>> by_modules_;
};

// The --allocator flag's functions, or the usage error that says what is wrong with it.
std::optional<int> ParseAllocators(const CommandSpec& spec, AllocatorFunctions* out);

// Under a table of call sites: for each module whose frames read "??", why, and what would
// name them. Symbolization happens here, at analysis time, so the capture itself needs no
// new run once the symbols are there.
void PrintUnresolvedNote(const std::vector<UnresolvedModule>& modules);

}  // namespace memtrace::cli_internal

#endif  // MEMTRACE_CLI_INTERNAL_SITE_NAMER_H_
