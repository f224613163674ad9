# Copyright 2026 The memtrace Authors.
#
# shared_libraries.sh: what a folder carried to another machine must hold besides the
# binaries, sourced by bench/bundle.sh and tools/stress_bundle (not run on its own).
#   shared_libraries FILE...   prints, one a line and once each, every shared library the
#                              files load, less those every Linux machine has in a newer
#                              version (glibc's own, libgcc_s and the C++ runtime). ldd
#                              fails on a script (such as heaptrack's): it has none.

shared_libraries() {
  for f in "$@"; do ldd "$f" 2>/dev/null || true; done | awk '/=> \// { print $3 }' |
    { grep -v -E '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+)\.so' || true; } |
    sort -u
}
