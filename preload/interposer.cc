// Copyright 2026 The memtrace Authors.
//
// interposer.cc: libmemtrace_preload.so's one translation unit. What the interposer does,
// and which file holds each part, is in interposer_state.h.
//
// The parts (*.inc) are compiled here, together, rather than each on its own, for two
// reasons:
//   - Each translation unit that includes absl/status/status.h (Debian's includes
//     <iostream>) gets a static initializer for std::ios_base::Init, which registers an
//     exit handler through the interposed __cxa_atexit(). Those count against the 32
//     slots of glibc's first list of exit handlers (exit_handlers.h): eleven translation
//     units instead of one would make memtrace's own registrations fill it, and glibc take
//     a block for the program's sooner. One unit keeps the library's initializers as they
//     were: one for the interposer.
//   - The hot path stays in one unit: the compiler sees every caller of the functions it
//     inlines into the interposed malloc family (record.h), as it did before the split.
//
// Order: each part includes the headers it needs; a part comes after the parts whose
// file-local (anonymous-namespace) names it does not share, so any order compiles. The
// one below follows the life of a process.

#include "preload/interposer_state.inc"
#include "preload/bootstrap.inc"
#include "preload/prestart.inc"
#include "preload/record.inc"
#include "preload/exit_handlers.inc"
#include "preload/children.inc"
#include "preload/finish.inc"
#include "preload/fork.inc"
#include "preload/start.inc"
#include "preload/mmap_layer.inc"
#include "preload/exports.inc"
#include "preload/markers.inc"
