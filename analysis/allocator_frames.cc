// Copyright 2026 The memtrace Authors.

#include "analysis/allocator_frames.h"

#include <algorithm>
#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analysis/function_names.h"

namespace memtrace {
namespace {

// Names that are allocators only as themselves ("malloc", not "malloc_trim").
constexpr std::array<std::string_view, 28> kExact = {
    "malloc",    "calloc",   "realloc",  "reallocarray", "posix_memalign", "aligned_alloc",
    "memalign",  "valloc",   "pvalloc",  "strdup",       "strndup",        "__strdup",
    "__strndup", "xmalloc",  "xcalloc",  "xrealloc",     "xstrdup",        "xzalloc",
    "xmemdup",   "xstrndup",
    // The C++ runtime's storage for a thrown exception: the throw is the call site.
    "__cxa_allocate_exception", "__cxa_allocate_dependent_exception",
    // include/memtrace/markers.h's static inline functions, compiled into the program. A
    // block reported with memtrace_alloc() is recorded at the return address of its call
    // of the interposer's memtrace_marker_alloc(), so its stack begins inside
    // memtrace_alloc (inlined or not): the program's code that called it is the site. The
    // others are listed too, so that no function of the header ever names a site.
    "memtrace_alloc", "memtrace_free", "memtrace_layer", "memtrace_scope_enter",
    "memtrace_scope_exit", "memtrace_census_set"};

// Families: any name that begins with one of these.
constexpr std::array<std::string_view, 48> kPrefixes = {
    // C++ (demangled): operator new and new[], the standard allocators.
    "operator new", "std::allocator", "std::__new_allocator", "__gnu_cxx::new_allocator",
    "std::allocator_traits", "__gnu_cxx::__alloc_traits",
    // GLib.
    "g_malloc", "g_try_malloc", "g_realloc", "g_try_realloc", "g_slice_alloc",
    // CPython.
    "PyMem_", "_PyMem_", "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc",
    "_PyObject_Malloc", "_PyObject_Calloc", "_PyObject_Realloc",
    // Perl.
    "Perl_safesys",
    // Redis.
    "zmalloc", "zcalloc", "zrealloc", "ztrymalloc", "ztrycalloc", "ztryrealloc",
    // SQLite.
    "sqlite3Malloc", "sqlite3DbMalloc", "sqlite3MemMalloc", "sqlite3Realloc",
    "sqlite3DbRealloc", "sqlite3MemRealloc", "dbMallocRaw",
    // HotSpot, the JVM's own C heap.
    "os::malloc(", "os::realloc(", "os::strdup(", "AllocateHeap(", "ReallocateHeap(",
    "CHeapObj<",
    // Rust: the global allocator's entry points (__rust_alloc, __rdl_alloc; since Rust
    // 1.8x mangled into a __rustc crate) and the alloc crate's functions over them.
    "__rust_", "__rdl_", "__rg_", "__rustc::", "alloc::alloc::",
    "<alloc::alloc::Global as core::alloc::Allocator>::",
    "<std::alloc::System as core::alloc::global::GlobalAlloc>::",
    // include/memtrace/markers.h: the interposer's functions it calls, and its C++ scope
    // guard (memtrace_markers::ScopeGuard).
    "memtrace_marker_", "memtrace_markers::"};

// Whether `s` begins with one of `prefixes`.
template <typename Prefixes>
bool BeginsWithAny(std::string_view s, const Prefixes& prefixes) {
  for (std::string_view prefix : prefixes) {
    if (s.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

// Container libraries besides C++'s standard one, by the namespace their functions' short
// names (ShortFunctionName) begin with: abseil's hash tables and inlined vectors, and
// Rust's standard crates (std is C++'s prefix too) and hash tables, whose trait impls
// read "<alloc::vec::Vec as core::clone::Clone>::clone": a library type's own.
constexpr std::array<std::string_view, 7> kContainerNamespaces = {
    "alloc::", "core::", "hashbrown::", "<alloc::", "<core::", "<std::", "<hashbrown::"};
// abseil's, inside "absl::" and the inline namespace a build may give it
// ("absl::lts_20220623::", Debian's "absl::debian3::").
constexpr std::array<std::string_view, 2> kAbseilContainerNamespaces = {
    "container_internal::", "inlined_vector_internal::"};

bool IsAbseilContainerFunction(std::string_view name) {
  constexpr std::string_view kAbsl = "absl::";
  if (name.substr(0, kAbsl.size()) != kAbsl) return false;
  name.remove_prefix(kAbsl.size());
  for (int inline_namespace = 0; inline_namespace < 2; ++inline_namespace) {
    if (BeginsWithAny(name, kAbseilContainerNamespaces)) return true;
    const size_t next = name.find("::");
    if (next == std::string_view::npos) return false;
    name.remove_prefix(next + 2);
  }
  return false;
}

// IsContainerFunction() of a name ShortFunctionName gave.
bool IsContainerName(std::string_view name) {
  return IsStandardLibraryName(name) || BeginsWithAny(name, kContainerNamespaces) ||
         IsAbseilContainerFunction(name);
}

// Symbolizer::Resolve's function name for a frame it cannot name.
constexpr std::string_view kUnknownFunction = "??";

// Whether `function` (without clone suffixes) is one of `names` or begins with one of
// `prefixes`: the built-in lists, or a program's own.
template <typename Names, typename Prefixes>
bool Listed(std::string_view function, const Names& names, const Prefixes& prefixes) {
  for (std::string_view name : names) {
    if (function == name) return true;
  }
  return BeginsWithAny(function, prefixes);
}

// One function of a stack, inlined ones included: each return address gives the functions
// inlined there, innermost first, then the one they were inlined into.
struct LogicalFrame {
  std::string_view function;  // Resolve() keeps its answers for the Symbolizer's lifetime
  size_t frame;               // its return address's index in the stack
  size_t inlined;             // its index in SymbolizedFrame::inlined, or their number: the
                              // frame's own function
  const InlinedFrame* in;     // null: the frame's own function
};

// The stack's functions innermost first (`frames`: return addresses, innermost first).
std::vector<LogicalFrame> LogicalFrames(Symbolizer& symbolizer,
                                        const std::vector<uint64_t>& frames) {
  std::vector<LogicalFrame> logical;
  for (size_t i = 0; i < frames.size(); ++i) {
    const SymbolizedFrame& f = symbolizer.Resolve(frames[i]);
    for (size_t k = 0; k < f.inlined.size(); ++k) {
      logical.push_back(LogicalFrame{f.inlined[k].function, i, k, &f.inlined[k]});
    }
    logical.push_back(LogicalFrame{f.function, i, f.inlined.size(), nullptr});
  }
  return logical;
}

std::vector<std::string_view> Functions(const std::vector<LogicalFrame>& logical) {
  std::vector<std::string_view> functions;
  functions.reserve(logical.size());
  for (const LogicalFrame& l : logical) functions.push_back(l.function);
  return functions;
}

}  // namespace

bool IsAllocatorFunction(std::string_view function) {
  return Listed(WithoutCloneSuffix(function), kExact, kPrefixes);
}

bool IsContainerFunction(std::string_view function) {
  return IsContainerName(ShortFunctionName(function));
}

absl::StatusOr<AllocatorFunctions> AllocatorFunctions::Parse(std::string_view list) {
  AllocatorFunctions out;
  if (list.empty()) return out;
  // Copies: Debian's abseil has its own string_view, not std::string_view.
  const std::vector<std::string> entries = absl::StrSplit(std::string(list), ',');
  for (const std::string& entry : entries) {
    const std::string name(absl::StripAsciiWhitespace(entry));
    const size_t star = name.find('*');
    if (name.empty() || name == "*" || (star != std::string::npos && star + 1 != name.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--allocator: '", entry, "' is not a function name. Give names as `memtrace top ",
          "--stacks` prints them, separated by commas, each whole (pool_alloc) or a prefix ",
          "ending in '*' (Engine::Alloc*)"));
    }
    if (star == std::string::npos) {
      out.names_.push_back(name);
    } else {
      out.prefixes_.emplace_back(name.substr(0, star));
    }
  }
  return out;
}

bool AllocatorFunctions::Contains(std::string_view function) const {
  function = WithoutCloneSuffix(function);
  if (Listed(function, kExact, kPrefixes) || Listed(function, names_, prefixes_)) return true;
  // The program's names may be given short ("folly::fbvector*"), which a member template's
  // demangled name, with its return type first, would not begin with.
  return (!names_.empty() || !prefixes_.empty()) &&
         Listed(ShortFunctionName(function), names_, prefixes_);
}

size_t CallerFrame(const std::vector<std::string_view>& functions,
                   const AllocatorFunctions& allocators) {
  // Every frame inward of an allocator's frame is the allocator's too, named or not
  // (sqlite3Malloc calls a static, stripped sqlite3MemMalloc). The innermost frames are
  // read while each is an allocator's or unknown ("??"); the caller is the frame after the
  // outermost allocator's among them.
  size_t caller = 0;
  for (size_t i = 0; i < functions.size(); ++i) {
    if (allocators.Contains(functions[i])) {
      caller = i + 1;
    } else if (functions[i] != kUnknownFunction) {
      break;
    }
  }
  // Then the container libraries' frames the program reached the allocator through
  // (std::vector::push_back, std::make_shared, absl::flat_hash_map's). An unknown frame
  // ends them: a library calls the program's own code back (a std::thread's function, a
  // comparator), so an unnamed frame outside the allocator may be the program's.
  while (caller < functions.size() && (IsContainerFunction(functions[caller]) ||
                                       allocators.Contains(functions[caller]))) {
    ++caller;
  }
  return functions.empty() ? 0 : std::min(caller, functions.size() - 1);
}

StackCaller FindCaller(Symbolizer& symbolizer, const std::vector<uint64_t>& frames,
                       const AllocatorFunctions& allocators) {
  if (frames.empty()) return {};
  const std::vector<LogicalFrame> logical = LogicalFrames(symbolizer, frames);
  const LogicalFrame& caller = logical[CallerFrame(Functions(logical), allocators)];
  return StackCaller{caller.frame, caller.inlined};
}

std::string SiteLabel(Symbolizer& symbolizer, const std::vector<uint64_t>& frames,
                      const AllocatorFunctions& allocators) {
  if (frames.empty()) return {};
  const std::vector<LogicalFrame> logical = LogicalFrames(symbolizer, frames);
  const std::vector<std::string_view> functions = Functions(logical);
  const size_t caller = CallerFrame(functions, allocators);
  const LogicalFrame& named = logical[caller];
  std::string label = named.in != nullptr ? DescribeInlined(*named.in)
                                          : symbolizer.Describe(frames[named.frame]);
  if (functions[caller] == kUnknownFunction) {
    // The first named frame further out: where to start reading.
    for (size_t i = caller + 1; i < functions.size(); ++i) {
      if (functions[i] != kUnknownFunction) {
        absl::StrAppend(&label, " under ", std::string(functions[i]));
        break;
      }
    }
  }
  if (caller == 0) return label;
  // A container library's function, or any template's, by its short name:
  // "std::vector::push_back", not its template arguments and parameters.
  const std::string_view via = functions[caller - 1];
  std::string short_via = ShortFunctionName(via);
  const bool shorten = via.find('<') != std::string_view::npos || IsContainerName(short_via);
  return absl::StrCat(label, " via ", shorten ? std::move(short_via) : std::string(via));
}

}  // namespace memtrace
