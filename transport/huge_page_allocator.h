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
// Either way every 4 KiB page first touched is a page fault (3-14 us on the VMs of
// bench/README.md); a traced sqlite3 run faulted about 900 times in the drainer's batches
// alone. Allocations of kFromBytes and more are mapped on their own (mmap), aligned to
// 2 MiB and advised MADV_HUGEPAGE, so each 2 MiB faults once; smaller ones come from
// operator new as usual. The advice is a hint: where the kernel keeps huge pages off
// (transparent_hugepage=never) nothing changes but the mapping.
//
// Thread safety: stateless; allocations may be made and freed from any thread.
//
// Example:
//   absl::flat_hash_map<uint64_t, Block, absl::Hash<uint64_t>, std::equal_to<uint64_t>,
//                       HugePageAllocator<std::pair<const uint64_t, Block>>> live;

#ifndef MEMTRACE_TRANSPORT_HUGE_PAGE_ALLOCATOR_H_
#define MEMTRACE_TRANSPORT_HUGE_PAGE_ALLOCATOR_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

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
    // Mapped with a huge page's worth to spare, then trimmed to a 2 MiB boundary on both
    // sides: the kernel backs only whole aligned 2 MiB ranges with huge pages.
    const size_t length = Rounded(bytes);
    void* p = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
    if (aligned != start) munmap(p, aligned - start);
    const uintptr_t tail = aligned + length;
    if (tail != start + length + kHugePage) {
      munmap(reinterpret_cast<void*>(tail), start + length + kHugePage - tail);
    }
    madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);  // a hint
    return reinterpret_cast<T*>(aligned);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kFrom) {
      ::operator delete(p);
    } else {
      munmap(p, Rounded(bytes));
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
