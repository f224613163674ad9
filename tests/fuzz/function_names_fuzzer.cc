// Copyright 2026 The memtrace Authors.
//
// libFuzzer target for demangling symbols and reading demangled function names
// (analysis/function_names.h). Names come from the symbol tables and DWARF of whatever
// program was traced, so any bytes are a name. Demangle() must give a name for any
// symbol (C++, either Rust mangling, or neither), and ShortFunctionName() a non-empty
// part of any non-empty input, never a crash, undefined behaviour or a read past its
// end; IsStandardLibraryFunction() must agree with the short name's namespace.
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
  // As a symbol: a C string, up to its first NUL.
  const std::string symbol(name.substr(0, name.find('\0')));
  const std::string demangled = memtrace::Demangle(symbol.c_str());
  if (!symbol.empty() && demangled.empty()) abort();
  memtrace::ShortFunctionName(demangled);
  return 0;
}
