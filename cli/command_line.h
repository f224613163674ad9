// Copyright 2026 The memtrace Authors.
//
// command_line.h: how every `memtrace` subcommand reads its flags.
//
// Flags are abseil flags (ABSL_FLAG), defined next to the subcommand that reads them; a
// flag several subcommands share (`--json`, `-o`/`--output`) is defined once. Because
// abseil flags are global to the binary, each subcommand names the flags it accepts in its
// CommandSpec, and ParseCommandFlags() refuses any other flag with a message naming the
// subcommand's own flags. Values are parsed by abseil (CommandLineFlag::ParseFrom), so a
// bad value gets abseil's reason ("Illegal int32_t value 'x'") and exit status 2, never
// abseil's exit(1).
//
// Spelling: `--name=value`, `--name value`, `--flag` / `--noflag` for booleans; dashes and
// underscores in names are the same (`--at-event` is the flag `at_event`); `-o FILE` and
// `-o=FILE` are `--output FILE` and `--output=FILE`; `--help` / `-h` prints the
// subcommand's usage and flags; `--` ends the flags, and what follows goes to
// ParsedArgs::after_dashdash unparsed (`memtrace run [flags] -- program args...`).
// ReadFlagArgument() and TakeFlagValue() are that spelling, and `run` and `report`, which
// keep flags of their own rather than abseil's, read their arguments with them too, so
// every subcommand spells a flag the same way.
//
// A usage error (UsageError()) prints what is wrong and where the help is, in two lines;
// the help itself only for --help.
//
// A subcommand's handler is `int Handler(int argc, char** argv)` with argv[0] the
// subcommand's name, registered in the dispatch table in cli/memtrace.cc:
//
//   ABSL_FLAG(bool, wait, false, "wait for the program");   // in the subcommand's .cc
//   const CommandSpec kRunSpec = {"run", "memtrace run [flags] -- PROGRAM [ARGS...]",
//                                 "Runs PROGRAM under the interposer...", {"wait", "output"}};
//   int RunCommand(int argc, char** argv) {
//     ParsedArgs args;
//     if (auto exit = ParseCommandFlags(kRunSpec, argc, argv, &args)) return *exit;
//     if (args.after_dashdash.empty()) return UsageError(kRunSpec, "which program?");
//     ... absl::GetFlag(FLAGS_wait) ...
//   }
//
// Thread safety: used from main() only.

#ifndef MEMTRACE_CLI_COMMAND_LINE_H_
#define MEMTRACE_CLI_COMMAND_LINE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"

// Shared flags: the output file (`-o FILE` or `--output=FILE`) and machine-readable output.
ABSL_DECLARE_FLAG(std::string, output);
ABSL_DECLARE_FLAG(bool, json);

namespace memtrace {

struct CommandSpec {
  const char* name;         // "top"
  const char* synopsis;     // "memtrace top [flags] CAPTURE"
  const char* description;  // what it does, for --help (may hold newlines)
  std::vector<std::string> flags;  // the abseil flag names it accepts (underscores)
};

// One argument read as a flag: "--name" or "-name", with "=VALUE" or without; dashes in
// the name are underscores, and "-o" is "output".
struct FlagArgument {
  std::string name;        // as abseil names it: "at_event", "output"
  std::string value;       // what followed the first '=', when has_value
  bool has_value = false;  // whether the argument itself held "=VALUE"
};

// `arg` read as a flag; nullopt when it is not one: it does not start with '-', or it is
// "-" or "--".
std::optional<FlagArgument> ReadFlagArgument(const std::string& arg);

// The value of `flag`, argv[*i], a flag that takes one: its own ("--name=VALUE"), or else
// the next argument, which *i then moves past ("--name VALUE"). False, with `error` saying
// so, when there is none.
bool TakeFlagValue(const FlagArgument& flag, int argc, char** argv, int* i, std::string* value,
                   std::string* error);

struct ParsedArgs {
  std::vector<std::string> positional;      // arguments that are not flags, in order
  std::vector<std::string> after_dashdash;  // everything after `--`
  bool dashdash = false;                    // whether `--` was given
};

// Parses argv[1..argc) as `spec`'s flags and positional arguments. Returns nullopt to go
// on, or the exit status to return at once: 0 after printing --help, 2 after printing an
// error (unknown flag, flag of another subcommand, missing or bad value) to stderr.
std::optional<int> ParseCommandFlags(const CommandSpec& spec, int argc, char** argv,
                                     ParsedArgs* out);

// The usage text of `spec`: synopsis, description and each flag with its default and help.
std::string CommandUsage(const CommandSpec& spec);

// Prints "memtrace NAME: MESSAGE" and a line saying where the help is ("run `memtrace
// NAME --help` for the options") to stderr; returns 2 (bad usage). `message` is one line:
// what is wrong, and how to fix it when that is short.
int UsageError(const CommandSpec& spec, const std::string& message);
int UsageError(const char* command, const std::string& message);

// Prints "memtrace NAME: MESSAGE" to stderr; returns 2 (bad input: unreadable capture...).
int InputError(const CommandSpec& spec, const std::string& message);

}  // namespace memtrace

#endif  // MEMTRACE_CLI_COMMAND_LINE_H_
