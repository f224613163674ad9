"""whole_shared_library: one shared library holding every object of its deps.

Bazel 4's cc_binary(linkshared = True) links only the objects something in it refers to,
and a library of an API refers to nothing: the result would be empty. This rule links the
position-independent archives of its deps' whole closure inside --whole-archive, so every
function of the API is in the library, and passes the closure's own link flags (the
system libraries, as -l options) after them, as DT_NEEDED entries.
"""

def _whole_shared_library_impl(ctx):
    archives = []
    flags = []
    for dep in ctx.attr.deps:
        for linker_input in dep[CcInfo].linking_context.linker_inputs.to_list():
            for library in linker_input.libraries:
                archive = library.pic_static_library or library.static_library
                if archive != None and archive not in archives:
                    archives.append(archive)
            for flag in linker_input.user_link_flags:
                if flag not in flags:
                    flags.append(flag)
    out = ctx.actions.declare_file(ctx.attr.name)
    args = ctx.actions.args()
    args.add("-shared")
    args.add("-o", out)
    args.add("-Wl,-soname," + ctx.attr.soname)
    args.add("-Wl,--no-undefined")
    # Debian's compiler makes position-independent executables' code by default: their
    # references to the library's own symbols are direct, which holds once the library
    # binds them to itself.
    args.add("-Wl,-Bsymbolic")
    args.add("-Wl,--whole-archive")
    args.add_all(archives)
    args.add("-Wl,--no-whole-archive")
    args.add_all(flags)
    # The configuration's own link options (a sanitizer's runtime, under --config=asan).
    args.add_all(ctx.fragments.cpp.linkopts)
    args.add_all(["-lstdc++", "-lm"])
    ctx.actions.run(
        executable = ctx.attr.compiler,
        arguments = [args],
        inputs = archives,
        outputs = [out],
        env = {"PATH": "/usr/bin:/bin"},  # the driver finds ld there
        mnemonic = "WholeSharedLibrary",
        progress_message = "Linking %s" % out.short_path,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

whole_shared_library = rule(
    implementation = _whole_shared_library_impl,
    fragments = ["cpp"],
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "soname": attr.string(mandatory = True),
        # The system's compiler driver, as the toolchain Bazel found (/usr/bin/gcc).
        "compiler": attr.string(default = "/usr/bin/g++"),
    },
)

def _header_list_impl(ctx):
    headers = []
    for dep in ctx.attr.deps:
        for header in dep[CcInfo].compilation_context.headers.to_list():
            # The workspace's own headers (external ones are Debian's, installed apart).
            if header.owner.workspace_name == "" and header not in headers:
                headers.append(header)
    out = ctx.actions.declare_file(ctx.attr.name + ".txt")
    ctx.actions.write(out, "".join([h.short_path + "\n" for h in headers]))
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out] + headers))]

# header_list: NAME.txt, the workspace paths of every header its deps' compilation needs,
# one a line, with the headers themselves as runfiles (tools/install_tree installs them).
header_list = rule(
    implementation = _header_list_impl,
    attrs = {"deps": attr.label_list(providers = [CcInfo])},
)
