// Copyright 2026 The memtrace Authors.

#include "cli/command_line.h"

#include <algorithm>
#include <cstdio>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

ABSL_FLAG(std::string, output, "", "write the output to this file (also -o FILE)");
ABSL_FLAG(bool, json, false, "print one JSON object instead of text");

namespace memtrace {
namespace {

std::string Dashed(const std::string& name) { return absl::StrReplaceAll(name, {{"_", "-"}}); }

std::string FlagList(const CommandSpec& spec) {
  std::vector<std::string> names;
  for (const std::string& f : spec.flags) names.push_back("--" + Dashed(f));
  return names.empty() ? "it takes none" : absl::StrJoin(names, ", ");
}

}  // namespace

std::string CommandUsage(const CommandSpec& spec) {
  std::string out = absl::StrCat("usage: ", spec.synopsis, "\n\n", spec.description, "\n");
  if (!spec.flags.empty()) absl::StrAppend(&out, "\nflags:\n");
  for (const std::string& name : spec.flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;  // a spec naming an undefined flag: shown nowhere
    std::string spelling = "--" + Dashed(name);
    if (name == "output") spelling = "-o FILE, --output=FILE";
    const std::string def = flag->DefaultValue();
    absl::StrAppend(&out, "  ", spelling, "\n      ", flag->Help(),
                    def.empty() || flag->IsOfType<bool>() ? "" : absl::StrCat(" (default ", def, ")"),
                    "\n");
  }
  absl::StrAppend(&out, "  --help\n      this text\n");
  return out;
}

int UsageError(const char* command, const std::string& message) {
  fprintf(stderr, "memtrace %s: %s\nrun `memtrace %s --help` for the options\n", command,
          message.c_str(), command);
  return 2;
}

int UsageError(const CommandSpec& spec, const std::string& message) {
  return UsageError(spec.name, message);
}

int InputError(const CommandSpec& spec, const std::string& message) {
  fprintf(stderr, "memtrace %s: %s\n", spec.name, message.c_str());
  return 2;
}

std::optional<FlagArgument> ReadFlagArgument(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-' || arg == "--") return std::nullopt;
  std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
  FlagArgument flag;
  flag.name = body;
  if (const size_t eq = body.find('='); eq != std::string::npos) {
    flag.name = body.substr(0, eq);
    flag.value = body.substr(eq + 1);
    flag.has_value = true;
  }
  flag.name = flag.name == "o" ? "output" : absl::StrReplaceAll(flag.name, {{"-", "_"}});
  return flag;
}

bool TakeFlagValue(const FlagArgument& flag, int argc, char** argv, int* i, std::string* value,
                   std::string* error) {
  if (flag.has_value) {
    // An empty value would read as the flag not given at all: the snapshot point, the
    // scope or the limit asked for would silently be the default.
    if (flag.value.empty()) {
      const std::string dashed = Dashed(flag.name);
      *error = absl::StrCat("flag --", dashed, "= has an empty value: give one (--", dashed,
                            "=VALUE), or leave the flag out");
      return false;
    }
    *value = flag.value;
    return true;
  }
  if (*i + 1 >= argc) {
    const std::string dashed = Dashed(flag.name);
    *error = absl::StrCat("flag --", dashed, " needs a value (--", dashed, "=VALUE)");
    return false;
  }
  *value = argv[++*i];
  return true;
}

std::optional<int> ParseCommandFlags(const CommandSpec& spec, int argc, char** argv,
                                     ParsedArgs* out) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (out->dashdash) {
      out->after_dashdash.push_back(arg);
      continue;
    }
    if (arg == "--") {
      out->dashdash = true;
      continue;
    }
    if (arg == "--help" || arg == "-h" || arg == "-help" || arg == "--helpfull") {
      fputs(CommandUsage(spec).c_str(), stdout);
      return 0;
    }
    const std::optional<FlagArgument> read = ReadFlagArgument(arg);
    if (!read) {
      out->positional.push_back(arg);
      continue;
    }
    std::string name = read->name, value = read->value;
    const bool has_value = read->has_value;
    bool negated = false;
    auto accepts = [&](const std::string& n) {
      return std::find(spec.flags.begin(), spec.flags.end(), n) != spec.flags.end();
    };
    if (!accepts(name) && name.rfind("no", 0) == 0 && accepts(name.substr(2)) && !has_value) {
      name = name.substr(2);
      negated = true;
    }
    if (!accepts(name)) {
      return UsageError(spec, absl::StrCat("unknown flag '", arg, "' (the flags of ", spec.name,
                                           ": ", FlagList(spec), ")"));
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) {
      return UsageError(spec, absl::StrCat("flag --", Dashed(name),
                                           " is listed but not defined (a bug in memtrace)"));
    }
    if (flag->IsOfType<bool>()) {
      if (negated) {
        value = "false";
      } else if (!has_value) {
        value = "true";
      }
    } else if (negated) {
      return UsageError(spec, absl::StrCat("'", arg, "': only true/false flags take a 'no' prefix"));
    }
    std::string error;
    if (!flag->IsOfType<bool>() && !TakeFlagValue(*read, argc, argv, &i, &value, &error)) {
      return UsageError(spec, error);
    }
    if (!flag->ParseFrom(value, &error)) {
      return UsageError(spec, absl::StrCat("bad value for --", Dashed(name), ": ", error));
    }
  }
  return std::nullopt;
}

}  // namespace memtrace
