// Copyright 2026 The memtrace Authors.
//
// exit_handlers.h: __cxa_atexit(), and which objects are memtrace's.
//
// glibc keeps the handlers that atexit() and __cxa_atexit() register (C++ globals'
// destructors among them) in a list with room for 32 to begin with; the 33rd
// registration, the 65th, ... each make __new_exitfn() take a 1,040-byte block from
// malloc, live to the end. memtrace's own objects register handlers before main() that
// can fill those 32 on their own: the libraries loaded only for it (libstdc++ and abseil
// under a C program) and this library's C++ globals, whose initializers run just after
// its constructor has started tracing. So a C program that registers one handler or none
// (/bin/true, sort) got a block that only memtrace needed, charged to it.
//
// The interposer passes every registration on to glibc and looks at who makes it, by the
// dso handle that names the registering object (a constructor hands over to
// __cxa_atexit() with a jump, so no frame of it is on the stack for the unwinder to
// find). A registration of this library's, or of a library loaded only for it, is made
// with the reentrancy flag raised, before tracing starts or after: a block glibc takes
// for it is memtrace's (internal_blocks.h), never recorded, nor is its release. A
// registration of the program's (or of a library of its own) is passed on with a jump,
// and a block glibc takes for it is the program's, as it would be without memtrace.
//
// Which registration makes glibc allocate depends on all of them: memtrace's handlers
// take slots that the program's would otherwise have had, so a program whose own
// registrations come just short of filling a block can still be charged one that only
// memtrace's made necessary (a C program one of whose libraries registers nearly 32
// handlers in its constructor, after libstdc++ and abseil have registered theirs). The
// program is never charged less than the blocks its own registrations take beyond the
// room memtrace's left.

#ifndef MEMTRACE_PRELOAD_EXIT_HANDLERS_H_
#define MEMTRACE_PRELOAD_EXIT_HANDLERS_H_

#include <vector>

#include "preload/own_libraries.h"

// Hidden: shared by the interposer's files, never exported (exports.lds).
#pragma GCC visibility push(hidden)

namespace memtrace::preload_internal {

// later), or the start. It allocates, as memtrace's own.
// The libraries loaded only for this one, or null while another call looks them up. The
// first call does: the first exit handler's registration (the loader has loaded and
// relocated every object before any constructor runs, so the answer does not change
const std::vector<preload_internal::CodeRange>* OwnLibraries();

// __cxa_atexit(): glibc's result (0, or -1 when the handler could not be registered).
int RegisterExitHandler(void (*fn)(void*), void* arg, void* dso) noexcept;

}  // namespace memtrace::preload_internal

#pragma GCC visibility pop

#endif  // MEMTRACE_PRELOAD_EXIT_HANDLERS_H_
