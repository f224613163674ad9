// Copyright 2026 The memtrace Authors.
//
// allocator_frames.h: which frames of a call stack belong to an allocator, so that a call
// site is named after the code that asked for memory, not after `operator new`.
//
// A stack's innermost frame is where the interposer's malloc was called from: for C++
// code that is almost always `operator new`, for Python `PyMem_Malloc` or
// `_PyObject_Malloc`, for sqlite3 `sqlite3MemMalloc`, for a C program its `xmalloc`. Two
// stacks through the same wrapper are still two sites (they differ further out), but
// named by their first frame they would read alike. SiteLabel() names a site by its first
// frame outside the known allocator functions, and says which it came through:
//
//   "Parser::Grow() (parser.cc:88) via operator new(unsigned long)"
//
// C++ code allocates mostly through container libraries: a vector's growth reaches
// operator new through std::vector::push_back, _M_realloc_insert, _Vector_base::_M_allocate
// and std::allocator_traits. The frames of the standard library and of abseil's containers
// (IsContainerFunction) are passed over too, and the site is named after the program's
// code that called the library, by the library function it called:
//
//   "Parser::Grow() (parser.cc:88) via std::vector::push_back"
//
// The list (IsAllocatorFunction) covers the C allocation functions, C++'s operator new
// and standard allocators, Rust's global allocator (__rust_alloc, alloc::alloc), the
// wrappers of GLib, CPython, Perl, Redis, SQLite and the JVM (HotSpot's os::malloc and
// AllocateHeap), and memtrace's own markers header (include/memtrace/markers.h), whose
// memtrace_alloc() reports a block of a program's own allocator:
//
//   "LoadLevel() (level.cc:40) via memtrace_alloc"
//
// A program's own wrappers (a game engine's `Engine::Alloc`, a server's `pool_alloc`) are
// added by name with AllocatorFunctions::Parse, from the CLI's --allocator flag. The list
// changes names and what the pprof export leaves out (FindCaller); `memtrace top --stacks`
// and the other exports keep every frame.
//
// A caller without a name ("??": a static function of a stripped library) says nothing on
// its own; its label adds the nearest named frame further out:
//
//   "?? (/lib/x86_64-linux-gnu/libsqlite3.so.0+0x3974e) under sqlite3BtreeInsert via
//    sqlite3Malloc"
//
// Thread safety: IsAllocatorFunction is a pure function, and an AllocatorFunctions is
// read-only once parsed; SiteLabel and FindCaller use the Symbolizer, which one thread uses
// at a time.
//
// Example:
//
//   absl::StatusOr<AllocatorFunctions> extra = AllocatorFunctions::Parse("Engine::Alloc*");
//   if (!extra.ok()) return extra.status();
//   std::string name = SiteLabel(symbolizer, frames, *extra);

#ifndef MEMTRACE_ANALYSIS_ALLOCATOR_FRAMES_H_
#define MEMTRACE_ANALYSIS_ALLOCATOR_FRAMES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/symbolizer.h"

namespace memtrace {

// True for a symbolized function name (as Symbolizer::Resolve gives it) that is an
// allocator's own: malloc and its family, operator new, std::allocator and the like, and
// known wrappers such as xmalloc, g_malloc, PyMem_Malloc, zmalloc or sqlite3Malloc.
bool IsAllocatorFunction(std::string_view function);

// True for a function of a container library a program allocates through: the C++
// standard library's (IsStandardLibraryFunction: std, __gnu_cxx), abseil's hash tables
// and inlined vectors (absl::container_internal, absl::inlined_vector_internal), and
// Rust's standard crates (alloc, core, std) and hashbrown, impls of their types included
// ("<alloc::vec::Vec<T> as core::clone::Clone>::clone", not "<app::Foo as ...>").
bool IsContainerFunction(std::string_view function);

// The built-in allocator functions and a program's own.
class AllocatorFunctions {
 public:
  // The built-in list only.
  AllocatorFunctions() = default;

  // The built-in list and the functions in `list`: comma-separated names, each a whole
  // function name as `memtrace top --stacks` prints it ("pool_alloc",
  // "Engine::Alloc(unsigned long)") or its ShortFunctionName ("Engine::Alloc"), or a
  // prefix ending in '*' of either ("Engine::Alloc*" names every overload; "folly::*"
  // every function of a container library, member templates with a return type too). An
  // empty list adds nothing. A malformed entry (empty, or a '*' before its end) is an
  // InvalidArgument error that names it.
  static absl::StatusOr<AllocatorFunctions> Parse(std::string_view list);

  // True for a built-in allocator function (IsAllocatorFunction) or one of the program's.
  bool Contains(std::string_view function) const;

 private:
  std::vector<std::string> names_;
  std::vector<std::string> prefixes_;
};

// The index of the frame that called the allocator, in `functions` (a stack's symbolized
// functions, innermost first): the frame after the outermost allocator function among the
// innermost frames that are allocator functions or unknown ("??": a static, stripped
// helper inside the allocator), and after the container library functions
// (IsContainerFunction) that follow. 0 when none of those is an allocator's or the
// library's; the last index when the stack ends inside them.
size_t CallerFrame(const std::vector<std::string_view>& functions,
                   const AllocatorFunctions& allocators = AllocatorFunctions());

// A call site's name from its stack (innermost first): Describe() of the frame that called
// the allocator (CallerFrame), with " via " and the allocator function it called (a
// container library's function, or a template's, by its ShortFunctionName), or the
// innermost frame's Describe() when no allocator function is found. When that frame has
// no name ("??"), " under " and the first named frame further out follow its Describe().
// Functions inlined at a return address count as frames of their own, innermost first
// (SymbolizedFrame::inlined): a lambda inlined into std::thread's _M_run() names the site,
// at its own line; std::allocator<T>::allocate() inlined into Parse() is an allocator
// frame, and Parse() at the line that called it names the site.
std::string SiteLabel(Symbolizer& symbolizer, const std::vector<uint64_t>& frames,
                      const AllocatorFunctions& allocators = AllocatorFunctions());

// Where the frame SiteLabel names a site after is in its stack (`frames`: return
// addresses, innermost first): at frames[frame], the function inlined there at index
// `inlined` of SymbolizedFrame::inlined (innermost first), or the frame's own function
// when `inlined` is their number. Inward of it lie the frames SiteLabel passes over (the
// allocator's and the container library's); the pprof export (analysis/exports.h) leaves
// them out, so that its leaf is the function `memtrace top` names the site after. {0, 0}
// for an empty stack.
struct StackCaller {
  size_t frame = 0;
  size_t inlined = 0;
};
StackCaller FindCaller(Symbolizer& symbolizer, const std::vector<uint64_t>& frames,
                       const AllocatorFunctions& allocators = AllocatorFunctions());

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_ALLOCATOR_FRAMES_H_
