// Copyright 2026 The memtrace Authors.
//
// Which frames are an allocator's, and which frame names a call site
// (analysis/allocator_frames.h).

#include "analysis/allocator_frames.h"

#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace memtrace {
namespace {

TEST(AllocatorFramesTest, KnowsTheAllocatorsFunctions) {
  for (std::string_view f :
       {"malloc", "calloc", "realloc", "posix_memalign", "strdup", "xmalloc",
        "operator new(unsigned long)", "operator new[](unsigned long, std::align_val_t)",
        "std::allocator<int>::allocate(unsigned long)",
        "std::__new_allocator<char>::allocate(unsigned long, void const*)", "g_malloc0",
        "PyMem_Malloc", "_PyObject_Malloc", "Perl_safesysmalloc", "zmalloc_usable",
        "ztrymalloc_usable_internal", "sqlite3MallocZero", "sqlite3DbMallocRawNN"}) {
    EXPECT_TRUE(IsAllocatorFunction(f)) << f;
  }
  for (std::string_view f : {"malloc_trim", "mallinfo2", "Parser::Grow()", "??", "",
                             "operator delete(void*)", "main", "newlocale"}) {
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

}  // namespace
}  // namespace memtrace
