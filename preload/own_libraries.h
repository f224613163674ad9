// Copyright 2026 The memtrace Authors.
//
// own_libraries.h: the shared libraries loaded into a traced process only because the
// interposer needs them.
//
// The interposer is C++ and links libstdc++ and abseil's libraries. Under a C program
// (sqlite3, ls) those are loaded for memtrace alone, and their constructors run before
// the interposer's: libstdc++'s allocates its 72,704-byte emergency pool then. That
// block is memtrace's cost, not the program's, and a capture that counted it would show
// a C program holding memory in libstdc++ to the end. Under a C++ program the same
// library is the program's own, and so is the block. Likewise the exit handlers those
// libraries register: the blocks glibc takes for its list of them are memtrace's
// (exit_handlers.h).
//
// Which objects those are follows from the loader's list and each object's DT_NEEDED
// entries: the roots are the program and every object nothing needs (LD_PRELOAD's
// others, which the user chose), this library excluded; an object reachable from the
// roots is the program's, and one reachable only from this library is memtrace's.
//
// Thread safety: reads the loader's list (dl_iterate_phdr takes its lock) and allocates;
// call once (the interposer keeps the answer: the first exit handler's registration or
// the start asks), never from the hot path, and never while holding a lock that a
// thread inside dlopen() may wait for.

#ifndef MEMTRACE_PRELOAD_OWN_LIBRARIES_H_
#define MEMTRACE_PRELOAD_OWN_LIBRARIES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace memtrace::preload_internal {

struct CodeRange {
  uint64_t begin = 0;
  uint64_t end = 0;  // one past the last byte
  std::string path;  // the object's, as the loader names it
  bool Contains(uint64_t address) const { return address >= begin && address < end; }
};

// The loaded segments of the objects that only the object containing `own_address`
// depends on, directly or through others (empty when every object is someone else's
// too, or when the list cannot be read).
std::vector<CodeRange> LibrariesOnlyOursNeed(const void* own_address);

}  // namespace memtrace::preload_internal

#endif  // MEMTRACE_PRELOAD_OWN_LIBRARIES_H_
