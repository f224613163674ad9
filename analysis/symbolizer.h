// Copyright 2026 The memtrace Authors.
//
// symbolizer.h: turns the return addresses of a capture's call stacks into function, file
// and line, offline, from the module lines the capture lists (docs/capture-format.md).
//
// A capture's `module` lines say which file was mapped where in the traced process: the
// range [start, end) maps file `path` from file offset `offset`. The Symbolizer opens that
// file with elfutils (libdw/libdwfl, Debian's libdw-dev) the first time a pc falls into
// it, works out the load bias from the ELF program headers (the PT_LOAD segment that holds
// `offset` maps file offset o to virtual address p_vaddr + (o - p_offset), so
// bias = start - (p_vaddr + offset - p_offset); this is right for executables, PIE and
// shared objects alike), and resolves `pc - 1` (every frame is a return address, so
// pc - 1 lies inside the call instruction) to:
//
//   1. DWARF line information (file:line) and the symbol table's function name,
//      demangled (abi::__cxa_demangle); the DWARF subprogram's name when the symbol
//      tables do not cover the pc. Where the compiler inlined functions at the pc (and
//      the DWARF says so), file:line is the function's own line, the one
//      that called the outermost inlined function, and the inlined functions follow in
//      `inlined`, each at its own line (as addr2line -i gives them);
//   2. without debug information: the ELF .symtab or .dynsym name alone;
//   3. nothing known: "??", with the module and the offset inside it.
//
// Separate debug information is looked for where elfutils looks on this machine
// (/usr/lib/debug/.build-id/, the file's .gnu_debuglink); when it is not there, and for a
// module whose file is missing or is another build than the capture's, the file is asked
// for by build id from the debuginfod servers DEBUGINFOD_URLS names (debuginfod.h), as
// gdb and perf do. Nothing is asked when that variable is unset or empty.
//
// Resolution never fails. A module whose file is missing, unreadable, not ELF, or whose
// GNU build id differs from the capture's (the file on disk is not the one that ran), and
// which no debuginfod server gave, is treated as missing: its pcs describe as
// "?? (path+0xoff)", where the offset is the file
// offset (pc - start + offset) because the program headers are unknown. For a module that
// was read, module_offset is the ELF virtual address (pc - bias), the number addr2line and
// objdump take. Unresolved() says, for each module with "??" frames, why.
//
// Thread safety: a Symbolizer is used by one thread. Resolve() caches; the reference it
// returns stays valid for the Symbolizer's lifetime.
//
// Example:
//
//   Symbolizer symbolizer;
//   for (const CaptureRecord& m : modules) symbolizer.AddModule(m);
//   puts(symbolizer.Describe(site_addr).c_str());  // "Parse(Request&) (server.cc:88)"

#ifndef MEMTRACE_ANALYSIS_SYMBOLIZER_H_
#define MEMTRACE_ANALYSIS_SYMBOLIZER_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "analysis/capture_reader.h"

namespace memtrace {

// A function the compiler inlined into a frame's function, at the line it was at.
struct InlinedFrame {
  std::string function;  // demangled
  std::string file;      // empty when the DWARF does not say
  uint32_t line = 0;
};

// "function (file:line)", or the function alone when the DWARF gives no line: an inlined
// function as `top --stacks` and the report's flame graph list it.
std::string DescribeInlined(const InlinedFrame& frame);

struct SymbolizedFrame {
  uint64_t pc;
  std::string function;  // demangled; "??" when unknown
  // The line of `function` the pc is at, empty and 0 without line information. With
  // inlined functions, the line that called the outermost of them.
  std::string file;
  uint32_t line = 0;
  std::string module;    // the module's path; empty when the pc is in no module
  uint64_t module_offset = 0;
  // The functions inlined into `function` at pc, innermost first; each calls the next,
  // and the last is called from `file`:`line`. Empty without inlining or without the
  // DWARF that describes it.
  std::vector<InlinedFrame> inlined;
};

namespace analysis_internal {
struct LoadedModule;  // the opened ELF file of a module (symbolizer.cc)
}  // namespace analysis_internal

// What a call site of 0 is called: a block recorded without one. The interposer records
// the blocks it finds allocated before it started that way (libstdc++'s emergency pool,
// the dynamic loader's), and so does the runtime API for a caller that passes no return
// address.
inline constexpr std::string_view kNoCallSite =
    "(no call site: allocated before tracing started, or none given)";
// What the bucket of sites beyond a capture's site capacity is called: its site line has
// `other: true` and this address (SiteTable::kOtherSitesValue), never a return address.
inline constexpr uint64_t kOtherSitesAddress = ~uint64_t{0};
inline constexpr std::string_view kOtherSites =
    "(other sites: more distinct call sites than the capture keeps)";

// Why the frames of a module came out as "??" (Symbolizer::Unresolved()).
enum class MissingSymbols {
  kNoFile,      // the file is missing, unreadable or not ELF
  kOtherBuild,  // its build id is not the capture's: the file on disk is not the one that ran
  kNoSymbols,   // the file that ran, read; no symbol or debug information covers these pcs
};

// A module in which Resolve() gave "??".
struct UnresolvedModule {
  std::string path;
  std::string build_id;  // the capture's (lower-case hex), empty when it recorded none
  MissingSymbols why;
  uint64_t frames = 0;  // distinct return addresses resolved to "??" inside it
  // Why the debuginfod servers (DEBUGINFOD_URLS) gave nothing for it: "no server in
  // DEBUGINFOD_URLS (...) has the debug information", "... could not be asked: Connection
  // refused". Empty when none was asked: no servers named, or no build id to ask by.
  std::string debuginfod;
};

// Adds `u` to `modules`, one entry per path: the frames of a path already there are added
// to its entry (several mappings of one file, or one file in several captures).
void AddUnresolved(std::vector<UnresolvedModule>* modules, const UnresolvedModule& u);

// `modules` as a JSON array, what `top --json`, `peak --json` and the report carry:
// [{"path":..., "why":"no_file"|"other_build"|"no_symbols", "addresses":N,
//   "build_id":..., "debug_file":..., "debuginfod":..., "debuginfod_servers":B}], where
// B says whether DEBUGINFOD_URLS named servers to ask.
std::string UnresolvedJson(const std::vector<UnresolvedModule>& modules);

// The separate debug file that libdw looks for, for a module with this build id:
// /usr/lib/debug/.build-id/ab/cdef....debug. Empty for an empty or too short build id.
std::string DebugFileForBuildId(const std::string& build_id);

class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Adds a module line of a capture (a CaptureRecord of type kModule: path, start, end,
  // offset, build_id). Cheap: the file is opened on the first Resolve() inside it. A later
  // module overlapping an earlier one replaces it for the overlapping start.
  void AddModule(const CaptureRecord& module);

  // Resolves a return address (looks up pc - 1). Never fails: unknown pcs get function
  // "??"; module is the module's path when the pc is inside one (module_offset set), else
  // empty. Cached.
  const SymbolizedFrame& Resolve(uint64_t pc);

  // "function (file:line)", "function (module+0xoff)" without line information,
  // "?? (module+0xoff)" when nothing is known inside a module, "?? (0xpc)" outside all,
  // and kNoCallSite for pc 0.
  std::string Describe(uint64_t pc);

  // Module lines added so far.
  size_t module_count() const { return modules_.size(); }

  // Where a request to a debuginfod server is announced, one line each ("memtrace: asking
  // debuginfod for ..."), so that a wait for the network is explained; null (the
  // default): nowhere. The CLI passes stderr.
  void set_progress(std::FILE* progress) { progress_ = progress; }

  // The modules in which Resolve() has given "??" so far, one entry per path, in the
  // order they were first met. What `memtrace top` and `peak` explain under their tables.
  std::vector<UnresolvedModule> Unresolved() const;

 private:
  struct Module {
    CaptureRecord record;
    bool tried = false;  // opening was attempted
    uint64_t bias = 0;   // runtime address minus ELF virtual address, once loaded
    std::shared_ptr<analysis_internal::LoadedModule> loaded;  // null: missing or mismatched
    // Why its pcs read "??": set by Load() when loaded stays null, else kNoSymbols.
    MissingSymbols missing = MissingSymbols::kNoSymbols;
    uint64_t unresolved = 0;  // distinct pcs resolved to "??" in this mapping
    std::string debuginfod;   // why debuginfod gave no file for it, when asked
  };
  Module* FindModule(uint64_t pc);
  // The ELF file at `path` (opened once, shared by every mapping), for the module the
  // capture calls `name`; null when it cannot be read as ELF.
  std::shared_ptr<analysis_internal::LoadedModule> OpenFile(const std::string& path,
                                                            const std::string& name);
  void Load(Module& m);
  void CountUnresolved(Module& m);

  std::vector<Module> modules_;
  std::map<uint64_t, size_t> by_start_;  // module start -> index into modules_
  // Opened files by path (null: could not be opened), shared by the mappings of one file.
  std::map<std::string, std::shared_ptr<analysis_internal::LoadedModule>> files_;
  absl::node_hash_map<uint64_t, SymbolizedFrame> cache_;  // node map: stable references
  std::vector<size_t> unresolved_order_;  // modules_ indices, by first "??"
  std::FILE* progress_ = nullptr;
};

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_SYMBOLIZER_H_
