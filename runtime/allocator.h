// Copyright 2026 The memtrace Authors.
//
// allocator.h: the allocator interface memtrace wraps, in the seed's shape.
//
// Four operations, as in Zig's std.mem.Allocator, each taking the call site (`ret_addr`,
// a return address) so that a wrapping tracer can attribute the operation:
//
//   Alloc(len, alignment, ret_addr)               -> a block, or nullptr
//   Resize(memory, alignment, new_len, ret_addr)  -> true if the block now has new_len
//                                                    bytes in place; false changes nothing
//   Remap(memory, alignment, new_len, ret_addr)   -> the block, perhaps moved, with new_len
//                                                    bytes; nullptr means "not possible:
//                                                    the caller must alloc, copy and free"
//   Free(memory, alignment, ret_addr)
//
// `memory` is the block as the caller knows it (pointer and length), so implementations
// need no size header. `alignment` is a power of two. No operation throws; failures are
// answered with nullptr or false.
//
// Thread safety: as documented by each implementation. Every implementation in memtrace
// says whether it may be called from several threads at once.
//
// Example:
//   memtrace::MallocAllocator heap;
//   void* p = heap.Alloc(64, 16, MEMTRACE_CALL_SITE());
//   heap.Free(memtrace::AsMemory(p, 64), 16, MEMTRACE_CALL_SITE());

#ifndef MEMTRACE_RUNTIME_ALLOCATOR_H_
#define MEMTRACE_RUNTIME_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace memtrace {

using Memory = std::span<std::byte>;

class Allocator {
 public:
  virtual ~Allocator() = default;

  virtual void* Alloc(size_t len, size_t alignment, uintptr_t ret_addr) noexcept = 0;
  virtual bool Resize(Memory memory, size_t alignment, size_t new_len,
                      uintptr_t ret_addr) noexcept = 0;
  virtual void* Remap(Memory memory, size_t alignment, size_t new_len,
                      uintptr_t ret_addr) noexcept = 0;
  virtual void Free(Memory memory, size_t alignment, uintptr_t ret_addr) noexcept = 0;
};

// The caller's return address, for ret_addr. Use it in the function whose caller should
// be blamed: MEMTRACE_CALL_SITE() inside Foo() names the code that called Foo(), as long
// as Foo() is not inlined into its caller (mark such wrappers noinline).
#define MEMTRACE_CALL_SITE() \
  (reinterpret_cast<uintptr_t>(__builtin_extract_return_addr(__builtin_return_address(0))))

namespace allocator_internal {
// Returns the address its call returns to: a code address inside the caller. noipa keeps
// the compiler from inlining it or merging two calls; clang has no noipa, and gets
// noinline alone.
#if defined(__has_attribute) && __has_attribute(noipa)
#define MEMTRACE_INTERNAL_NOIPA __attribute__((noinline, noipa))
#else
#define MEMTRACE_INTERNAL_NOIPA __attribute__((noinline))
#endif
MEMTRACE_INTERNAL_NOIPA inline uintptr_t AddressAfterThisCall() noexcept {
  return reinterpret_cast<uintptr_t>(__builtin_extract_return_addr(__builtin_return_address(0)));
}
}  // namespace allocator_internal

// The address of the code that uses it, for ret_addr at a call made directly where the
// blame belongs (main(), a loop body): MEMTRACE_HERE() names that very line. Costs a call.
#define MEMTRACE_HERE() (::memtrace::allocator_internal::AddressAfterThisCall())

inline Memory AsMemory(void* p, size_t len) noexcept {
  return Memory(static_cast<std::byte*>(p), len);
}

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_ALLOCATOR_H_
