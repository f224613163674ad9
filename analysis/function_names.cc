// Copyright 2026 The memtrace Authors.

#include "analysis/function_names.h"

#include <cxxabi.h>

#include <array>
#include <cstdlib>

// libiberty.h declares basename() unless told that the C library does (glibc's differs in
// C++, and the two would clash).
#define HAVE_DECL_BASENAME 1
#include <libiberty/demangle.h>

#include "absl/strings/ascii.h"

namespace memtrace {
namespace {

constexpr std::string_view kOperator = "operator";
// The characters of an operator's symbol after "operator": "<<=", "->*", "!=".
constexpr std::string_view kOperatorSymbols = "<>=!+-*/%^&|~,";
// What may follow a member function's parameter list, outermost last as the demangler
// prints them ("f() const &&").
constexpr std::array<std::string_view, 6> kQualifiers = {
    " const", " volatile", " &&", " &", " noexcept", " transaction_safe"};

bool IsIdentifierChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '$'; }

// `s` without spaces at either end. (Debian's abseil has its own string_view, so
// absl::StripAsciiWhitespace does not take or give a std::string_view.)
std::string_view StripSpaces(std::string_view s) {
  while (!s.empty() && absl::ascii_isspace(s.front())) s.remove_prefix(1);
  while (!s.empty() && absl::ascii_isspace(s.back())) s.remove_suffix(1);
  return s;
}

// Whether the word "operator" starts at `i` (not inside a longer identifier).
bool OperatorAt(std::string_view s, size_t i) {
  if (s.substr(i, kOperator.size()) != kOperator) return false;
  if (i > 0 && IsIdentifierChar(s[i - 1])) return false;
  const size_t end = i + kOperator.size();
  return end == s.size() || !IsIdentifierChar(s[end]);
}

// The length of the operator's symbol at `at`, just after "operator": 2 for "()" and
// "[]", the run of symbol characters for the others ("<<", "->*"), 0 for a word ("new",
// a conversion's type), which is read as any other text.
size_t OperatorSymbolLength(std::string_view s, size_t at) {
  if (s.substr(at, 2) == "()" || s.substr(at, 2) == "[]") return 2;
  size_t n = 0;
  while (at + n < s.size() && kOperatorSymbols.find(s[at + n]) != std::string_view::npos) ++n;
  return n;
}

// The index just after the '>' that closes the '<' at `open`, or s.size() when none
// does. Angle brackets inside parentheses are an expression's ("(1>2)"), not nesting.
size_t AfterTemplateArguments(std::string_view s, size_t open) {
  int angles = 0;
  int parens = 0;
  for (size_t i = open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(') {
      ++parens;
    } else if (c == ')') {
      if (parens > 0) --parens;
    } else if (parens == 0 && c == '<') {
      ++angles;
    } else if (parens == 0 && c == '>') {
      if (--angles == 0) return i + 1;
    }
  }
  return s.size();
}

// `s` without template argument lists ("<...>") and ABI tags ("[abi:cxx11]"). An
// operator's symbol is copied as it is: the '<' of "operator<" opens nothing. A '<' at
// the start of the name (or of a path inside one) opens a Rust qualified path, "<Type>"
// or "<Type as Trait>", which is kept (without its own generic arguments); Rust's
// generic arguments on a function ("::<&str>") go with the "::" before them.
std::string WithoutTemplateArguments(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  int open_paths = 0;  // Rust qualified paths open in `out`
  size_t i = 0;
  while (i < s.size()) {
    if (OperatorAt(s, i)) {
      const size_t end = i + kOperator.size() + OperatorSymbolLength(s, i + kOperator.size());
      out.append(s.substr(i, end - i));
      i = end;
    } else if (s[i] == '<' && (out.empty() || out.back() == '<')) {
      out.push_back('<');
      ++open_paths;
      ++i;
    } else if (s[i] == '>' && open_paths > 0) {
      out.push_back('>');
      --open_paths;
      ++i;
    } else if (s[i] == '<') {
      i = AfterTemplateArguments(s, i);
      if (out.size() >= 2 && out.compare(out.size() - 2, 2, "::") == 0) out.resize(out.size() - 2);
    } else if (s.substr(i, 5) == "[abi:") {
      const size_t close = s.find(']', i);
      i = close == std::string_view::npos ? s.size() : close + 1;
    } else {
      out.push_back(s[i]);
      ++i;
    }
  }
  return out;
}

// Whether `s` ends in the word "operator" (so a "()" after it is the operator's name).
bool EndsInOperator(std::string_view s) {
  return s.size() >= kOperator.size() && OperatorAt(s, s.size() - kOperator.size());
}

// `s` without its trailing qualifiers and parameter list: "ns::f(int) const" gives
// "ns::f". "X::operator()" is a name without parameters and stays whole.
std::string_view WithoutParameters(std::string_view s) {
  for (bool again = true; again;) {
    again = false;
    s = StripSpaces(s);
    for (std::string_view qualifier : kQualifiers) {
      if (s.size() > qualifier.size() && s.substr(s.size() - qualifier.size()) == qualifier) {
        s.remove_suffix(qualifier.size());
        again = true;
      }
    }
  }
  if (s.empty() || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')') {
      ++depth;
    } else if (s[i] == '(' && --depth == 0) {
      return EndsInOperator(s.substr(0, i)) ? s : s.substr(0, i);
    }
  }
  return s;  // unbalanced: not a parameter list
}

// Where the name starts in `s` (no template arguments or parameters left): after the
// return type, which ends at the last space outside brackets ("unsigned long ns::f").
// The spaces of an operator's name ("operator new", "operator unsigned long") are its own.
size_t NameStart(std::string_view s) {
  // A Rust qualified path ("<Type as Trait>::f") has no return type before it.
  if (!s.empty() && s.front() == '<') return 0;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (depth == 0 && OperatorAt(s, i)) break;
    const char c = s[i];
    if (c == '(' || c == '{' || c == '[') {
      ++depth;
    } else if (c == ')' || c == '}' || c == ']') {
      if (depth > 0) --depth;
    } else if (c == ' ' && depth == 0) {
      start = i + 1;
    }
  }
  return start;
}

// "<alloc::vec::Vec>::push" as "alloc::vec::Vec::push": an inherent impl's path needs no
// brackets once its generic arguments are gone. A trait impl's ("<T as Trait>::f") keeps
// them.
std::string_view WithoutInherentBrackets(std::string_view s, std::string* storage) {
  if (s.empty() || s.front() != '<') return s;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') {
      ++depth;
    } else if (s[i] == '>' && --depth == 0) {
      const std::string_view inside = s.substr(1, i - 1);
      if (inside.find(" as ") != std::string_view::npos || inside.empty()) return s;
      *storage = std::string(inside) + std::string(s.substr(i + 1));
      return *storage;
    }
  }
  return s;
}

}  // namespace

std::string Demangle(const char* symbol) {
  if (symbol[0] != '_' || (symbol[1] != 'R' && symbol[1] != 'Z')) return symbol;
  // Rust first: its legacy names are valid C++ ones too, which the C++ demangler leaves
  // with the escapes and the hash ("Vec$LT$T$GT$::push::h5e3..."). libiberty answers null
  // for anything that is not Rust.
  std::string out;
  if (char* rust = rust_demangle(symbol, DMGL_PARAMS | DMGL_ANSI)) {
    out = rust;
    free(rust);
  } else if (symbol[1] == 'Z') {
    int status = 0;
    if (char* cpp = abi::__cxa_demangle(symbol, nullptr, nullptr, &status)) {
      if (status == 0) out = cpp;
      free(cpp);
    }
  }
  return out.empty() ? std::string(symbol) : out;
}

std::string_view WithoutCloneSuffix(std::string_view function) {
  const size_t clone = function.find(" [clone ");
  return clone == std::string_view::npos ? function : function.substr(0, clone);
}

std::string ShortFunctionName(std::string_view function) {
  const std::string bare = WithoutTemplateArguments(WithoutCloneSuffix(function));
  const std::string_view name = WithoutParameters(bare);
  std::string storage;
  const std::string_view out =
      WithoutInherentBrackets(StripSpaces(name.substr(NameStart(name))), &storage);
  // Text that is not a demangled name ("<", "( )") may leave nothing: keep it as it was.
  return out.empty() ? std::string(function) : std::string(out);
}

bool IsStandardLibraryFunction(std::string_view function) {
  return IsStandardLibraryName(ShortFunctionName(function));
}

bool IsStandardLibraryName(std::string_view short_name) {
  return short_name.substr(0, 5) == "std::" || short_name.substr(0, 11) == "__gnu_cxx::";
}

}  // namespace memtrace
