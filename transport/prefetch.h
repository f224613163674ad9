// Copyright 2026 The memtrace Authors.
//
// prefetch.h: cache hints that the compiler keeps.
//
// g++ 12 drops __builtin_prefetch in some inlined code: in the recorder's hot path, and in
// any function where the prefetch sits behind a branch on a member, such as "if the table
// has slots" (seen in the disassembly of the ticket table, the ring and the ledger's
// address table). On x86-64 these are explicit instructions instead. A prefetch never
// faults and changes nothing anyone reads; the address must still be one the program
// could form (not derived from a null pointer).
//
// Thread safety: none needed; nothing is written.

#ifndef MEMTRACE_TRANSPORT_PREFETCH_H_
#define MEMTRACE_TRANSPORT_PREFETCH_H_

namespace memtrace {

// Starts loading the line at `p` into every cache level. A line no other core holds
// arrives exclusive, ready for a store, from this read prefetch anyway.
inline void PrefetchForRead(const void* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 3);
#endif
}

// Starts loading the line at `p` for a store: taken exclusive from a core that holds it.
// Where the CPU lacks PREFETCHW it executes as a no-op.
inline void PrefetchForWrite(const void* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace memtrace

#endif  // MEMTRACE_TRANSPORT_PREFETCH_H_
