// Copyright 2026 The memtrace Authors.
//
// huge_page_allocator.h: a standard allocator whose large allocations sit in transparent
// huge pages.
//
// Two kinds of memory want it:
//   - the analyzer's tables of live blocks (analysis/analyzer.h), looked up at random:
//     with millions of blocks live they reach hundreds of MiB, and on 4 KiB pages nearly
//     every lookup misses the TLB;
//   - the drainer's batches of records for the capture sink (runtime/event_observer.h,
//     ObservedBatch): a few vectors of up to 2.6 MiB that the drainer fills and the
//     writer reads, passed back and forth.
// Either way every 4 KiB page first touched is a page fault, taken by the thread that
// touches it; for the batches that is the drainer (bench/README.md, "Lines and
// pages"). Allocations of kFromBytes and more are mapped on their own, in
// whole huge pages at a 2 MiB boundary (transport_internal::MapZeroedHuge), so each 2 MiB
// faults once; smaller ones come from operator new as usual. The advice is a hint: where
// the kernel keeps huge pages off (transparent_hugepage=never) nothing changes but the
// mapping.
//
// Thread safety: stateless; allocations may be made and freed from any thread.
//
// Example:
//   absl::flat_hash_map<uint64_t, Block, absl::Hash<uint64_t>, std::equal_to<uint64_t>,
//                       HugePageAllocator<std::pair<const uint64_t, Block>>> live;

#ifndef MEMTRACE_TRANSPORT_HUGE_PAGE_ALLOCATOR_H_
#define MEMTRACE_TRANSPORT_HUGE_PAGE_ALLOCATOR_H_

#include <cstddef>
#include <new>

#include "transport/internal/mapped_memory.h"

namespace memtrace {

template <typename T, size_t kFromBytes = size_t{4} << 20>
class HugePageAllocator {
 public:
  using value_type = T;
  static constexpr size_t kFrom = kFromBytes;
  static constexpr size_t kHugePage = size_t{2} << 20;
  template <typename U>
  struct rebind {
    using other = HugePageAllocator<U, kFromBytes>;
  };

  HugePageAllocator() noexcept = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U, kFromBytes>&) noexcept {}  // NOLINT: a conversion

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kFrom) return static_cast<T*>(::operator new(bytes));
    // Whole huge pages, at a 2 MiB boundary (MapZeroedHuge).
    void* p = transport_internal::MapZeroedHuge(Rounded(bytes));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kFrom) {
      ::operator delete(p);
    } else {
      transport_internal::Unmap(p, Rounded(bytes));
    }
  }

  template <typename U>
  bool operator==(const HugePageAllocator<U, kFromBytes>&) const noexcept { return true; }
  template <typename U>
  bool operator!=(const HugePageAllocator<U, kFromBytes>&) const noexcept { return false; }

 private:
  static size_t Rounded(size_t bytes) noexcept {
    return (bytes + kHugePage - 1) & ~(kHugePage - 1);
  }
};

}  // namespace memtrace

#endif  // MEMTRACE_TRANSPORT_HUGE_PAGE_ALLOCATOR_H_
