// Copyright 2026 The memtrace Authors.
//
// A program for the interposer's tests (preload_exec_children_test.cc) that, like bash,
// defines its own setenv() and unsetenv() and hands the commands it runs the environment
// main() was given. bash's versions change nothing before its shell has started; these
// change nothing at all. A preloaded library's calls to either reach them.
//
//   own_environment PROGRAM [ARGS...]    execs PROGRAM with main()'s envp

#include <stdio.h>
#include <unistd.h>

extern "C" int setenv(const char*, const char*, int) { return 0; }
extern "C" int unsetenv(const char*) { return 0; }

int main(int argc, char** argv, char** envp) {
  if (argc < 2) {
    fprintf(stderr, "usage: own_environment PROGRAM [ARGS...]\n");
    return 2;
  }
  execve(argv[1], argv + 1, envp);
  perror("own_environment: execve");
  return 127;
}
