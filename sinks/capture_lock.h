// Copyright 2026 The memtrace Authors.
//
// capture_lock.h: one writer per capture file.
//
// A capture file is locked (flock, exclusive) while a sink writes it: JsonlSink::Open()
// refuses a file another sink holds, the interposer then writes beside it, and `memtrace
// run` will not remove a file a live process is writing. The lock belongs to the open
// file: it goes when the file is closed, however the process ends.
//
// Only regular files are locked: two tracers may well write to /dev/null or a pipe. A
// file system without flock() support goes unlocked.
//
// Thread safety: both functions may be called from any thread.

#ifndef MEMTRACE_SINKS_CAPTURE_LOCK_H_
#define MEMTRACE_SINKS_CAPTURE_LOCK_H_

#include <string>

namespace memtrace {

// Takes the capture lock on the open file `fd` without waiting. False only when another
// open of the file holds it; true when this one holds it now, or when the file is not a
// regular file or cannot be locked at all.
bool LockCapture(int fd);

// True when a sink (in any process) holds the capture lock of the file at `path`.
bool CaptureBeingWritten(const std::string& path);

}  // namespace memtrace

#endif  // MEMTRACE_SINKS_CAPTURE_LOCK_H_
