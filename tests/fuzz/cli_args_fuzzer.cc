// Copyright 2026 The memtrace Authors.
//
// libFuzzer target for the CLI's argument and option parsing: ParseCommandFlags()
// (cli/command_line.h) with each analysis subcommand's real CommandSpec and abseil flags,
// and `memtrace run`'s ParseRunOptions() (cli/run_command.h). Neither touches the file
// system, so any input is safe to try. Every input must end in "go on" with a result that
// keeps the parser's promises, or in exit status 0 (--help) or 2 (a usage error): never a
// crash, a hang, undefined behaviour or abseil's exit(1).
//
// Input: the first byte picks the parser (one of the analysis specs, or run); the rest is
// the argument list, one argument per line. Built and run by tools/fuzz (clang 14,
// -fsanitize=fuzzer,address,undefined); seeds in tests/fuzz/cli_args_corpus.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "cli/analysis_commands.h"
#include "cli/command_line.h"
#include "cli/run_command.h"
#include "preload/preload_config.h"

namespace {

constexpr size_t kMaxArgs = 64;

// A broken promise: stop here so libFuzzer keeps the input.
void Check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "cli_args_fuzzer: %s\n", what);
    abort();
  }
}

void FuzzCommandFlags(const memtrace::CommandSpec& spec, std::vector<char*>& argv) {
  memtrace::ParsedArgs parsed;
  const int argc = static_cast<int>(argv.size()) - 1;  // argv ends with a null
  const std::optional<int> exit = memtrace::ParseCommandFlags(spec, argc, argv.data(), &parsed);
  if (exit.has_value()) {
    Check(*exit == 0 || *exit == 2, "ParseCommandFlags exits with 0 or 2 only");
    return;
  }
  Check(parsed.positional.size() + parsed.after_dashdash.size() <=
            static_cast<size_t>(argc - 1),
        "no more arguments out than went in");
  Check(parsed.dashdash || parsed.after_dashdash.empty(), "after_dashdash only after --");
}

void FuzzRunOptions(std::vector<char*>& argv) {
  memtrace::RunOptions options;
  std::string error;
  const int argc = static_cast<int>(argv.size()) - 1;
  if (!memtrace::ParseRunOptions(argc, argv.data(), &options, &error)) {
    Check(!error.empty(), "a refusal says why");
    return;
  }
  Check(error.empty(), "no error on success");
  Check(!options.command.empty(), "a program to run");
  Check(!options.output.empty(), "an output path");
  uint32_t depth = 0;
  Check(options.depth.empty() || (absl::SimpleAtoi(options.depth, &depth) && depth <= 64),
        "depth is 0..64");
  uint64_t bytes = 0;
  Check(options.min_size.empty() || memtrace::ParseByteSize(options.min_size, &bytes),
        "min-size is a size (a number, or with K, M, G or T)");
  Check(options.unwind.empty() || options.unwind == "fp" || options.unwind == "dwarf",
        "unwind is fp or dwarf");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const memtrace::CommandSpec* const kSpecs[] = {
      &memtrace::kSummarySpec, &memtrace::kVerifySpec,    &memtrace::kTopSpec,
      &memtrace::kPeakSpec,    &memtrace::kRetentionSpec, &memtrace::kDiffSpec,
      &memtrace::kCoverageSpec, &memtrace::kExportSpec};
  constexpr size_t kParsers = sizeof(kSpecs) / sizeof(kSpecs[0]) + 1;  // + run
  if (size == 0) return 0;
  const size_t parser = data[0] % kParsers;
  // One argument per line; argv[0] is the subcommand's name, as the dispatcher passes it.
  std::vector<std::string> args;
  args.emplace_back(parser < kParsers - 1 ? kSpecs[parser]->name : "run");
  std::string current;
  for (size_t i = 1; i < size && args.size() < kMaxArgs; ++i) {
    if (data[i] == '\n') {
      args.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  if (size > 1 && args.size() < kMaxArgs) args.push_back(current);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (parser < kParsers - 1) {
    FuzzCommandFlags(*kSpecs[parser], argv);
  } else {
    FuzzRunOptions(argv);
  }
  return 0;
}
