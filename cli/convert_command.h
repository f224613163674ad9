// Copyright 2026 The memtrace Authors.
//
// convert_command.h: `memtrace convert IN OUT` (or `IN -o OUT`) rewrites a capture in the
// encoding OUT's name asks for: ".mtb" (or ".mtb.zst") binary, ".jsonl" or no extension
// JSONL; ".zst" compresses. Any other extension (".gz" among them) is a usage error, exit
// 2, before IN is read: convert never writes bytes its name does not promise. IN may be
// either encoding, plain or compressed. The JSONL it writes is what the sink
// would have written (analysis/capture_writer.h). On a read error the partial OUT is
// removed and the exit status is 2.
//
// Thread safety: called from main() only.

#ifndef MEMTRACE_CLI_CONVERT_COMMAND_H_
#define MEMTRACE_CLI_CONVERT_COMMAND_H_

#include "cli/command_line.h"

namespace memtrace {

extern const CommandSpec kConvertSpec;

int ConvertCommand(int argc, char** argv);

}  // namespace memtrace

#endif  // MEMTRACE_CLI_CONVERT_COMMAND_H_
