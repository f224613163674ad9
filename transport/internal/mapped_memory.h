// Copyright 2026 The memtrace Authors.
//
// mapped_memory.h: page-granular memory straight from mmap, for the tracer's own buffers.
//
// The tracer never traces itself: rings, the ticket table and the ring registry's storage
// come from here, never from malloc or operator new, so the LD_PRELOAD interposer can hand
// out memory while it is itself recording. Pages are mapped MAP_NORESERVE and are touched
// lazily, so a large table costs address space, not resident memory, until it is used.
//
// Thread safety: both functions are thread-safe. They make system calls and so never run on
// an allocating thread's hot path, only when a ring or table is created or destroyed.

#ifndef MEMTRACE_TRANSPORT_INTERNAL_MAPPED_MEMORY_H_
#define MEMTRACE_TRANSPORT_INTERNAL_MAPPED_MEMORY_H_

#include <cstddef>

namespace memtrace::transport_internal {

// Returns zero-filled, page-aligned memory of at least `bytes`, or nullptr if the kernel
// refuses (the caller reports it).
void* MapZeroed(size_t bytes) noexcept;

// The same, asking for transparent huge pages (madvise MADV_HUGEPAGE; a hint the kernel
// may ignore), and from 2 MiB on starting at a 2 MiB boundary. For tables read and
// written at random: each 2 MiB page faults once instead of 512 times, and a 4 KiB page
// first read (mapped to the shared zero page) then written would cost a TLB-shootdown
// interrupt on every CPU running the program. Release with Unmap() and the
// same `bytes`.
void* MapZeroedHuge(size_t bytes) noexcept;

// Maps in the pages of [memory, memory + bytes) (widened to whole pages) that are not yet,
// as writes would, in one system call (MADV_POPULATE_WRITE) instead of a page fault each.
// Contents are unchanged, so other threads may use the range meanwhile. False when the
// kernel cannot (before Linux 5.14) or refuses.
bool Populate(void* memory, size_t bytes) noexcept;

// Releases memory from MapZeroed or MapZeroedHuge with the same `bytes`. Null is a no-op.
void Unmap(void* memory, size_t bytes) noexcept;

}  // namespace memtrace::transport_internal

#endif  // MEMTRACE_TRANSPORT_INTERNAL_MAPPED_MEMORY_H_
