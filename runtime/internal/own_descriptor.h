// Copyright 2026 The memtrace Authors.
//
// own_descriptor.h: memtrace's own file descriptors (a capture file, the live server's
// socket and its eventfd), kept far above the numbers a program's own files get.
//
// A program gets the lowest free number from open(), and some close descriptors they
// did not open (a daemon closes 3 and up, then opens its log; a shell's `exec 3>file`).
// memtrace's descriptors taken at start would be 3, 4, 5...: the first numbers such a
// program reuses. Moved to kHighDescriptor and above, they are unlikely to be handed to
// the program or closed by it; each user still checks that its descriptor is its own
// where that matters (JsonlSink::CheckStream()).
//
// Thread safety: a system call on a descriptor the caller owns.

#ifndef MEMTRACE_RUNTIME_INTERNAL_OWN_DESCRIPTOR_H_
#define MEMTRACE_RUNTIME_INTERNAL_OWN_DESCRIPTOR_H_

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace memtrace::runtime_internal {

// The lowest descriptor number memtrace's own descriptors move to.
inline constexpr int kHighDescriptor = 512;

// `fd` moved to the lowest free number from kHighDescriptor on (close-on-exec), and
// closed where it was; `fd` itself where the limit on open files is lower.
inline int AboveProgramDescriptors(int fd) {
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, kHighDescriptor);
  if (high < 0) return fd;
  close(fd);
  return high;
}

// What a descriptor refers to (its file's device and inode), to tell later whether the
// number still names that file: a program that closed it may have been given the number
// for a file of its own.
struct DescriptorIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool valid = false;

  static DescriptorIdentity Of(int fd) {
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) return {};
    return {st.st_dev, st.st_ino, true};
  }
  // Whether `fd` still names this file.
  bool Names(int fd) const {
    const DescriptorIdentity now = Of(fd);
    return valid && now.valid && now.dev == dev && now.ino == ino;
  }
};

}  // namespace memtrace::runtime_internal

#endif  // MEMTRACE_RUNTIME_INTERNAL_OWN_DESCRIPTOR_H_
