// Copyright 2026 The memtrace Authors.
//
// libFuzzer target for reading demangled function names (analysis/function_names.h).
// Names come from the symbol tables and DWARF of whatever program was traced, so any
// bytes are a name. ShortFunctionName() must give a non-empty part of any non-empty
// input, never a crash, undefined behaviour or a read past its end, and
// IsStandardLibraryFunction() must agree with the short name's namespace.
//
// Input: the name's bytes. Built and run by tools/fuzz (clang 14,
// -fsanitize=fuzzer,address,undefined); seeds in tests/fuzz/function_names_corpus.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "analysis/function_names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view name(reinterpret_cast<const char*>(data), size);
  const std::string short_name = memtrace::ShortFunctionName(name);
  if (!name.empty() && short_name.empty()) abort();
  if (short_name.size() > name.size()) abort();
  const bool in_std = std::string_view(short_name).substr(0, 5) == "std::" ||
                      std::string_view(short_name).substr(0, 11) == "__gnu_cxx::";
  if (memtrace::IsStandardLibraryFunction(name) != in_std) abort();
  return 0;
}
