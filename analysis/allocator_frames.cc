// Copyright 2026 The memtrace Authors.

#include "analysis/allocator_frames.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"

namespace memtrace {
namespace {

// Names that are allocators only as themselves ("malloc", not "malloc_trim").
constexpr std::array<std::string_view, 20> kExact = {
    "malloc",    "calloc",   "realloc",  "reallocarray", "posix_memalign", "aligned_alloc",
    "memalign",  "valloc",   "pvalloc",  "strdup",       "strndup",        "__strdup",
    "__strndup", "xmalloc",  "xcalloc",  "xrealloc",     "xstrdup",        "xzalloc",
    "xmemdup",   "xstrndup"};

// Families: any name that begins with one of these.
constexpr std::array<std::string_view, 33> kPrefixes = {
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
    "sqlite3DbRealloc", "sqlite3MemRealloc", "dbMallocRaw"};

}  // namespace

bool IsAllocatorFunction(std::string_view function) {
  for (std::string_view name : kExact) {
    if (function == name) return true;
  }
  for (std::string_view prefix : kPrefixes) {
    if (function.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

size_t CallerFrame(const std::vector<std::string_view>& functions) {
  // Every frame inward of an allocator's frame is the allocator's too, named or not
  // (sqlite3Malloc calls a static, stripped sqlite3MemMalloc). The innermost frames are
  // read while each is an allocator's or unknown ("??"); the caller is the frame after the
  // outermost allocator's among them.
  size_t caller = 0;
  for (size_t i = 0; i < functions.size(); ++i) {
    if (IsAllocatorFunction(functions[i])) {
      caller = i + 1;
    } else if (functions[i] != "??") {
      break;
    }
  }
  return functions.empty() ? 0 : std::min(caller, functions.size() - 1);
}

std::string SiteLabel(Symbolizer& symbolizer, const std::vector<uint64_t>& frames) {
  if (frames.empty()) return {};
  std::vector<std::string_view> functions;
  functions.reserve(frames.size());
  // Resolve() keeps its answers for the Symbolizer's lifetime: the views stay valid.
  for (uint64_t pc : frames) functions.push_back(symbolizer.Resolve(pc).function);
  const size_t caller = CallerFrame(functions);
  if (caller == 0) return symbolizer.Describe(frames[0]);
  return absl::StrCat(symbolizer.Describe(frames[caller]), " via ",
                      std::string(functions[caller - 1]));
}

}  // namespace memtrace
