// Copyright 2026 The memtrace Authors.
//
// Which frames are an allocator's, and which frame names a call site
// (analysis/allocator_frames.h).

#include "analysis/allocator_frames.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "memtrace/markers.h"
#include "tests/self_modules.h"

// What the interposer defines for include/memtrace/markers.h, here without it: the
// return address the interposer records a reported block's stack from.
namespace {
uint64_t reported_at = 0;
}  // namespace

extern "C" void memtrace_marker_alloc(int, const void*, size_t) {
  reported_at = reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

// Named functions of this test's own binary, for stacks the symbolizer resolves.
namespace memtrace_allocator_frames_test {

__attribute__((noinline)) uint64_t PoolAlloc() {
  asm volatile("");
  return reinterpret_cast<uint64_t>(&PoolAlloc) + 1;
}

__attribute__((noinline)) uint64_t LoadLevel() {
  asm volatile("");
  return reinterpret_cast<uint64_t>(&LoadLevel) + 1;
}

// A program's own allocator that is a template, as a pool of T is.
template <typename T>
__attribute__((noinline)) uint64_t TypedPoolAlloc() {
  asm volatile("");
  return reinterpret_cast<uint64_t>(&TypedPoolAlloc<T>) + 1;
}
template uint64_t TypedPoolAlloc<int>();

// A pool of the program's own that reports its blocks with the markers header, as
// `memtrace run` records them: the return address of memtrace_alloc()'s call of
// memtrace_marker_alloc(), inside memtrace_alloc (inlined here, or not).
char pool_memory[64];
const int kReportLine = __LINE__ + 3;
__attribute__((noinline)) uint64_t ReportPoolBlock() {
  asm volatile("");
  memtrace_alloc(3, pool_memory, sizeof(pool_memory));
  asm volatile("" : : : "memory");  // a call, not a tail call
  return reported_at;
}

}  // namespace memtrace_allocator_frames_test

namespace memtrace {
namespace {

constexpr char kPoolAlloc[] = "memtrace_allocator_frames_test::PoolAlloc()";
constexpr char kLoadLevel[] = "memtrace_allocator_frames_test::LoadLevel()";

TEST(AllocatorFramesTest, KnowsTheAllocatorsFunctions) {
  for (std::string_view f :
       {"malloc", "calloc", "realloc", "posix_memalign", "strdup", "xmalloc",
        "operator new(unsigned long)", "operator new[](unsigned long, std::align_val_t)",
        "std::allocator<int>::allocate(unsigned long)",
        "std::__new_allocator<char>::allocate(unsigned long, void const*)", "g_malloc0",
        "PyMem_Malloc", "_PyObject_Malloc", "Perl_safesysmalloc", "zmalloc_usable",
        "ztrymalloc_usable_internal", "sqlite3MallocZero", "sqlite3DbMallocRawNN",
        "os::malloc(unsigned long, MEMFLAGS, NativeCallStack const&)",
        "AllocateHeap(unsigned long, MEMFLAGS, AllocFailStrategy::AllocFailEnum)",
        "CHeapObj<(MEMFLAGS)5>::operator new(unsigned long)", "memtrace_alloc",
        "memtrace_marker_alloc"}) {
    EXPECT_TRUE(IsAllocatorFunction(f)) << f;
  }
  for (std::string_view f : {"malloc_trim", "mallinfo2", "Parser::Grow()", "??", "",
                             "operator delete(void*)", "main", "newlocale",
                             "os::free(void*)", "os::malloc_limit_state()"}) {
    EXPECT_FALSE(IsAllocatorFunction(f)) << f;
  }
}

TEST(AllocatorFramesTest, TheCallerIsTheFrameAfterTheAllocator) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(CallerFrame(V{}), 0u);
  EXPECT_EQ(CallerFrame(V{"Parser::Grow()", "main"}), 0u);  // called malloc itself
  EXPECT_EQ(CallerFrame(V{"operator new(unsigned long)", "Parser::Grow()", "main"}), 1u);
  // Unknown frames inside the allocator are the allocator's: sqlite3Malloc calls a static,
  // stripped function, which called malloc.
  EXPECT_EQ(CallerFrame(V{"??", "sqlite3Malloc", "??", "sqlite3BtreeInsert"}), 2u);
  // Unknown frames with no allocator after them are the caller's own.
  EXPECT_EQ(CallerFrame(V{"??", "??", "main"}), 0u);
  // Only the innermost run counts: an allocator name further out is not skipped to.
  EXPECT_EQ(CallerFrame(V{"Parser::Grow()", "xmalloc", "main"}), 0u);
  // A stack that ends inside the allocator (the depth ran out): its last frame.
  EXPECT_EQ(CallerFrame(V{"operator new(unsigned long)", "std::allocator<int>::allocate"}), 1u);
}

// The standard library's frames between the program and operator new are passed over,
// whatever return type the demangler puts first.
TEST(AllocatorFramesTest, TheStandardLibrarysFramesArePassedOver) {
  using V = std::vector<std::string_view>;
  const V growth = {
      "operator new(unsigned long)",
      "std::__new_allocator<P>::allocate(unsigned long, void const*)",
      "std::_Vector_base<P, std::allocator<P> >::_M_allocate(unsigned long)",
      "void std::vector<P, std::allocator<P> >::_M_realloc_insert<P>(__gnu_cxx::"
      "__normal_iterator<P*, std::vector<P, std::allocator<P> > >, P&&)",
      "std::vector<P, std::allocator<P> >::push_back(P&&)",
      "Fill(int)",
      "main"};
  EXPECT_EQ(CallerFrame(growth), 5u);
  // The library allocating on its own account, through no allocator function.
  EXPECT_EQ(CallerFrame(V{"std::locale::_Impl::_Impl(unsigned long)", "std::locale::classic()",
                          "Setup()"}),
            2u);
  // An unknown frame ends the library's: it may be the program's, called back (a
  // std::thread's function, a comparator).
  EXPECT_EQ(CallerFrame(V{"operator new(unsigned long)", "??",
                          "std::thread::_State_impl<std::thread::_Invoker<std::tuple<"
                          "main::{lambda()#1}> > >::_M_run()"}),
            1u);
  EXPECT_EQ(CallerFrame(V{"operator new(unsigned long)",
                          "std::vector<int, std::allocator<int> >::reserve(unsigned long)", "??",
                          "main"}),
            2u);
  // The program's code called back by the library is the program's.
  EXPECT_EQ(CallerFrame(V{"operator new(unsigned long)", "main::{lambda()#1}::operator()() const",
                          "std::function<void ()>::operator()() const", "main"}),
            1u);
  // A program's own allocator called through std::allocator_traits.
  const absl::StatusOr<AllocatorFunctions> own = AllocatorFunctions::Parse("Arena::Allocate*");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(CallerFrame(V{"Arena::Allocate(unsigned long)",
                          "std::allocator_traits<ArenaAllocator<int> >::allocate("
                          "ArenaAllocator<int>&, unsigned long)",
                          "std::vector<int, ArenaAllocator<int> >::reserve(unsigned long)",
                          "Level::Load()"},
                        *own),
            3u);
  // abseil's hash tables, as GCC inlines them into a flat_hash_map's operator[].
  EXPECT_EQ(CallerFrame(V{"operator new(unsigned long)",
                          "void* absl::container_internal::Allocate<8ul, std::allocator<char> >"
                          "(std::allocator<char>*, unsigned long)",
                          "absl::container_internal::raw_hash_set<absl::container_internal::"
                          "FlatHashMapPolicy<int, int>, absl::hash_internal::Hash<int>, "
                          "std::equal_to<int>, std::allocator<std::pair<int const, int> > "
                          ">::resize(unsigned long)",
                          "Index::Add(int)"}),
            3u);
  EXPECT_TRUE(IsContainerFunction("absl::inlined_vector_internal::Storage<int, 4ul, "
                                  "std::allocator<int> >::EmplaceBackSlow<int>(int&&)"));
  EXPECT_FALSE(IsContainerFunction("absl::StrCat(absl::AlphaNum const&)"));
  // Inside the inline namespace of a build: upstream's, and Debian's.
  EXPECT_TRUE(IsContainerFunction("absl::lts_20220623::container_internal::raw_hash_set<"
                                  "Policy>::resize(unsigned long)"));
  EXPECT_TRUE(IsContainerFunction("void* absl::debian3::container_internal::Allocate<4ul, "
                                  "std::allocator<std::pair<int const, int> > >("
                                  "std::allocator<std::pair<int const, int> >*, unsigned long)"));
  EXPECT_FALSE(IsContainerFunction("absl::debian3::StrCat(absl::debian3::AlphaNum const&)"));
  // Rust: a String grown by format!() inside a closure of the program's (rustc 1.95, -O:
  // the standard library's frames are mostly inlined ones).
  const V rust = {"alloc::alloc::alloc",
                  "<alloc::alloc::Global>::alloc_impl",
                  "<alloc::alloc::Global as core::alloc::Allocator>::allocate",
                  "<alloc::raw_vec::RawVecInner>::try_allocate_in",
                  "<alloc::string::String>::with_capacity",
                  "alloc::fmt::format::format_inner",
                  "alloc::fmt::format::{{closure}}",
                  "core::option::Option<T>::map_or_else",
                  "alloc::fmt::format",
                  "r::names::{{closure}}",
                  "core::iter::adapters::map::map_fold::{{closure}}",
                  "r::names",
                  "r::main"};
  EXPECT_EQ(CallerFrame(rust), 9u);
  EXPECT_TRUE(IsContainerFunction("<alloc::vec::Vec<T> as core::clone::Clone>::clone"));
  EXPECT_FALSE(IsContainerFunction("<r::Particle as core::clone::Clone>::clone"));
  EXPECT_TRUE(IsAllocatorFunction("__rustc::__rust_alloc"));
  EXPECT_TRUE(IsAllocatorFunction("__rust_alloc"));
  // A stack that ends inside the library: its last frame.
  EXPECT_EQ(CallerFrame(V{"operator new(unsigned long)",
                          "std::_Rb_tree<int, int>::_M_copy(std::_Rb_tree_node<int>*)",
                          "std::_Rb_tree<int, int>::_M_copy(std::_Rb_tree_node<int>*)"}),
            2u);
}

TEST(AllocatorFramesTest, TheProgramsOwnAllocatorFunctions) {
  const absl::StatusOr<AllocatorFunctions> own =
      AllocatorFunctions::Parse("pool_alloc, Engine::Alloc*");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_TRUE(own->Contains("pool_alloc"));
  EXPECT_FALSE(own->Contains("pool_alloc_stats"));  // a whole name is matched whole
  EXPECT_TRUE(own->Contains("Engine::Alloc(unsigned long)"));
  EXPECT_TRUE(own->Contains("Engine::AllocAligned(unsigned long, unsigned long)"));
  EXPECT_FALSE(own->Contains("Engine::Free(void*)"));
  EXPECT_TRUE(own->Contains("malloc"));  // the built-in list still applies
  // GCC's specialized copies are the function itself.
  EXPECT_TRUE(own->Contains("pool_alloc [clone .constprop.0]"));
  EXPECT_TRUE(AllocatorFunctions().Contains("xmalloc [clone .cold]"));
  EXPECT_FALSE(AllocatorFunctions().Contains("pool_alloc"));
  // Names and prefixes match a function's short name too: a member template's demangled
  // name begins with its return type.
  const absl::StatusOr<AllocatorFunctions> library =
      AllocatorFunctions::Parse("folly::*, Arena::Grow");
  ASSERT_TRUE(library.ok()) << library.status();
  EXPECT_TRUE(library->Contains("void folly::fbvector<int, std::allocator<int> >::"
                                "emplace_back_aux<int>(int&&)"));
  EXPECT_TRUE(library->Contains("folly::fbvector<int, std::allocator<int> >::reserve(unsigned long)"));
  EXPECT_TRUE(library->Contains("char* Arena::Grow<char>(unsigned long)"));
  EXPECT_FALSE(library->Contains("void follyish::f()"));

  using V = std::vector<std::string_view>;
  const V stack = {"malloc", "pool_alloc", "LoadLevel()", "main"};
  EXPECT_EQ(CallerFrame(stack), 1u);
  EXPECT_EQ(CallerFrame(stack, *own), 2u);

  EXPECT_TRUE(AllocatorFunctions::Parse("").ok());
  for (const char* bad : {",", "pool_alloc,", "*", "Engine::*Alloc", " , x"}) {
    const absl::StatusOr<AllocatorFunctions> parsed = AllocatorFunctions::Parse(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(parsed.status().message()).find("--allocator"), std::string::npos);
  }
}

// A caller the symbolizer cannot name (a static function of a stripped library) is labelled
// with the first named frame further out.
TEST(AllocatorFramesTest, AnUnnamedCallerIsPlacedUnderTheNextNamedFrame) {
  Symbolizer symbolizer;
  for (const CaptureRecord& m : SelfExecutableModules()) symbolizer.AddModule(m);
  symbolizer.AddModule(ModuleLine("/nonexistent/libstripped.so", 0x10000, 0x20000));
  const uint64_t pool_alloc = memtrace_allocator_frames_test::PoolAlloc();
  const uint64_t load_level = memtrace_allocator_frames_test::LoadLevel();
  ASSERT_EQ(symbolizer.Resolve(pool_alloc).function, kPoolAlloc);
  ASSERT_EQ(symbolizer.Resolve(load_level).function, kLoadLevel);
  const std::string unnamed = "?? (/nonexistent/libstripped.so+0x1234)";

  // No allocator function: the innermost frame, then the first named one.
  EXPECT_EQ(SiteLabel(symbolizer, {0x11234, load_level}),
            unnamed + " under " + kLoadLevel);
  // Through the program's own allocator function, which called malloc.
  const absl::StatusOr<AllocatorFunctions> own =
      AllocatorFunctions::Parse("memtrace_allocator_frames_test::Pool*");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(SiteLabel(symbolizer, {pool_alloc, 0x11234, 0x11300, load_level}, *own),
            unnamed + " under " + kLoadLevel + " via " + kPoolAlloc);
  // A named caller needs nothing more.
  EXPECT_EQ(SiteLabel(symbolizer, {pool_alloc, load_level}, *own),
            symbolizer.Describe(load_level) + " via " + kPoolAlloc);
  // Without --allocator, PoolAlloc is the program's own code: the site is named after it.
  EXPECT_EQ(SiteLabel(symbolizer, {pool_alloc, 0x11234, load_level}),
            symbolizer.Describe(pool_alloc));
  // Nothing named further out: the unnamed frame alone.
  EXPECT_EQ(SiteLabel(symbolizer, {0x11234, 0x11300}), unnamed);

  // An allocator that is a template is named short, without its template arguments and
  // the return type the demangler puts first.
  const uint64_t typed = memtrace_allocator_frames_test::TypedPoolAlloc<int>();
  ASSERT_EQ(symbolizer.Resolve(typed).function,
            "unsigned long memtrace_allocator_frames_test::TypedPoolAlloc<int>()");
  const absl::StatusOr<AllocatorFunctions> typed_pool =
      AllocatorFunctions::Parse("memtrace_allocator_frames_test::TypedPoolAlloc*");
  ASSERT_TRUE(typed_pool.ok()) << typed_pool.status();
  EXPECT_EQ(SiteLabel(symbolizer, {typed, load_level}, *typed_pool),
            symbolizer.Describe(load_level) +
                " via memtrace_allocator_frames_test::TypedPoolAlloc");
}

// A block a program reports with include/memtrace/markers.h's memtrace_alloc() is named
// after the code that called it, as a malloc wrapper's is: the header's functions are
// the allocator's from the program's side.
TEST(AllocatorFramesTest, TheMarkersHeadersAllocIsAnAllocatorFunction) {
  for (std::string_view f : {"memtrace_alloc", "memtrace_free", "memtrace_layer",
                             "memtrace_scope_enter", "memtrace_scope_exit",
                             "memtrace_census_set", "memtrace_marker_alloc",
                             "memtrace_markers::ScopeGuard::ScopeGuard(char const*)"}) {
    EXPECT_TRUE(IsAllocatorFunction(f)) << f;
  }
  EXPECT_FALSE(IsAllocatorFunction("memtrace_allocations_report"));
  using V = std::vector<std::string_view>;
  EXPECT_EQ(CallerFrame(V{"memtrace_alloc", "Pool::Grow()", "main"}), 1u);

  Symbolizer symbolizer;
  for (const CaptureRecord& m : SelfExecutableModules()) symbolizer.AddModule(m);
  const uint64_t reported = memtrace_allocator_frames_test::ReportPoolBlock();
  const uint64_t load_level = memtrace_allocator_frames_test::LoadLevel();
  // The stack begins inside memtrace_alloc, as its own frame or inlined into the caller.
  const SymbolizedFrame& f = symbolizer.Resolve(reported);
  ASSERT_TRUE(f.function == "memtrace_alloc" ||
              (!f.inlined.empty() && f.inlined[0].function == "memtrace_alloc"))
      << symbolizer.Describe(reported);
  const std::string label = SiteLabel(symbolizer, {reported, load_level});
  const std::string caller = "memtrace_allocator_frames_test::ReportPoolBlock() (";
  const std::string line_via =
      "allocator_frames_test.cc:" + std::to_string(memtrace_allocator_frames_test::kReportLine) +
      ") via memtrace_alloc";
  EXPECT_EQ(label.substr(0, caller.size()), caller) << label;
  ASSERT_GE(label.size(), line_via.size()) << label;
  EXPECT_EQ(label.substr(label.size() - line_via.size()), line_via) << label;
  // The caller's frame is where the pprof export's stack begins: the frame ReportPoolBlock()
  // owns, with none of the functions inlined into it left out.
  const StackCaller at = FindCaller(symbolizer, {reported, load_level});
  EXPECT_EQ(at.frame, f.function == "memtrace_alloc" ? 1u : 0u);
  EXPECT_EQ(at.inlined, f.function == "memtrace_alloc" ? 0u : f.inlined.size());
}

}  // namespace
}  // namespace memtrace
