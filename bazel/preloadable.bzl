"""preloadable_build: programs built so that the LD_PRELOAD interposer can run inside them.

The interposer (preload/) defines malloc and passes each call on to the next definition.
AddressSanitizer and ThreadSanitizer own malloc too, and neither can share a process with
it, whichever of the two is built with the sanitizer:

  - A sanitized program, plain interposer: the loader binds malloc to the interposer, which
    is preloaded ahead of the sanitizer runtime. The runtime's own start-up calls dlsym(),
    whose failed lookups make glibc malloc; the interposer passes the call on to the
    runtime's malloc, then asks its malloc_usable_size() about the block, before the
    runtime has finished starting: ASan fails a CHECK (its thread key is not made yet),
    TSan faults in its block table. (ASan also refuses to start at all unless its runtime
    comes first in the library list, ASAN_OPTIONS=verify_asan_link_order=0 aside.)
  - A sanitized interposer, plain program: the runtime comes in as the interposer's
    dependency, after libc, and starts after libstdc++, whose start-up calls malloc: the
    interposer's instrumented code runs first and faults (ASan: its shadow memory is not
    mapped yet; TSan: in __tsan_func_entry, with no thread state). Were it started, its
    interceptors (pthread_create, mutexes, fork) would still come after libc's, so TSan
    would see no thread begin and no lock taken.
  - The runtime preloaded first (LD_PRELOAD=libasan.so:interposer): its malloc then
    shadows the interposer's, which records nothing of the program's.

UndefinedBehaviorSanitizer owns nothing (its checks are inline and its runtime starts on
the first report), so the interposer and the programs it traces can be built with it.
preloadable_build builds its srcs with -fsanitize=address / -fsanitize=thread replaced by
-fsanitize=undefined (and with -fno-sanitize-recover=all, so that a report ends the
program); outside those configurations it changes nothing. The files and runfiles keep
their workspace paths, so a test that lists a preloadable_build in its data finds
"preload/libmemtrace_preload.so" where it always did.

    preloadable_build(
        name = "preloadable_programs",
        testonly = True,
        srcs = ["//cli:memtrace", "//preload:libmemtrace_preload.so", ":target"],
    )

A test must not also take the same targets in its own configuration (directly, or through
another data dependency): two files would claim one runfiles path.
"""

_COPT = "//command_line_option:copt"
_LINKOPT = "//command_line_option:linkopt"

# The sanitizers that interpose malloc themselves.
_OWNS_MALLOC = ("address", "thread")

def _owns_malloc(flag):
    if not flag.startswith("-fsanitize="):
        return False
    for sanitizer in flag[len("-fsanitize="):].split(","):
        if sanitizer in _OWNS_MALLOC:
            return True
    return False

def _with_ubsan_only(flags, extra):
    """`flags` with each -fsanitize= naming ASan or TSan replaced by UBSan alone."""
    if not [f for f in flags if _owns_malloc(f)]:
        return flags
    kept = [f for f in flags if not _owns_malloc(f)]
    out = kept + ["-fsanitize=undefined"]
    for flag in extra:
        if flag not in out:
            out.append(flag)
    return out

def _preloadable_transition_impl(settings, attr):
    return {
        _COPT: _with_ubsan_only(settings[_COPT], ["-fno-sanitize-recover=all"]),
        _LINKOPT: _with_ubsan_only(settings[_LINKOPT], []),
    }

_preloadable_transition = transition(
    implementation = _preloadable_transition_impl,
    inputs = [_COPT, _LINKOPT],
    outputs = [_COPT, _LINKOPT],
)

def _preloadable_build_impl(ctx):
    files = depset(transitive = [src[DefaultInfo].files for src in ctx.attr.srcs])
    runfiles = ctx.runfiles(transitive_files = files)
    for src in ctx.attr.srcs:
        runfiles = runfiles.merge(src[DefaultInfo].default_runfiles)
    return [DefaultInfo(files = files, runfiles = runfiles)]

preloadable_build = rule(
    implementation = _preloadable_build_impl,
    doc = "Builds srcs with UBSan in place of ASan or TSan, for the LD_PRELOAD interposer.",
    attrs = {
        "srcs": attr.label_list(cfg = _preloadable_transition, allow_files = True),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
)
