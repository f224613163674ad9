// Copyright 2026 The memtrace Authors.
//
// huge_page_allocator.h: a standard allocator whose large allocations sit in transparent
// huge pages, for the analyzer's tables of live blocks.
//
// Replaying a capture keeps every live block in hash tables, looked up at random: with
// millions of blocks live they reach hundreds of MiB, and on 4 KiB pages nearly every
// lookup misses the TLB, and every page of each table the tables grow into faults once
// (3-11 us a fault on the VMs these tools were measured on). Allocations of kFrom bytes
// and more are mapped on their own (mmap) and advised MADV_HUGEPAGE, so each 2 MiB
// faults once; smaller ones come from operator new as usual. The advice is a hint: where
// the kernel keeps huge pages off (transparent_hugepage=never) nothing changes but the
// mapping.
//
// Thread safety: stateless; allocations may be made and freed from any thread.
//
// Example:
//   absl::flat_hash_map<uint64_t, Block, absl::Hash<uint64_t>, std::equal_to<uint64_t>,
//                       HugePageAllocator<std::pair<const uint64_t, Block>>> live;

#ifndef MEMTRACE_ANALYSIS_INTERNAL_HUGE_PAGE_ALLOCATOR_H_
#define MEMTRACE_ANALYSIS_INTERNAL_HUGE_PAGE_ALLOCATOR_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

namespace memtrace::analysis_internal {

template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;
  static constexpr size_t kFrom = size_t{4} << 20;

  HugePageAllocator() noexcept = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: a conversion

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kFrom) return static_cast<T*>(::operator new(bytes));
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);  // a hint: failure changes nothing
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kFrom) {
      ::operator delete(p);
    } else {
      munmap(p, bytes);
    }
  }

  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }
  template <typename U>
  bool operator!=(const HugePageAllocator<U>&) const noexcept { return false; }
};

}  // namespace memtrace::analysis_internal

#endif  // MEMTRACE_ANALYSIS_INTERNAL_HUGE_PAGE_ALLOCATOR_H_
