// Copyright 2026 The memtrace Authors.

#include "analysis/function_names.h"

#include <array>

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
// operator's symbol is copied as it is: the '<' of "operator<" opens nothing.
std::string WithoutTemplateArguments(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (OperatorAt(s, i)) {
      const size_t end = i + kOperator.size() + OperatorSymbolLength(s, i + kOperator.size());
      out.append(s.substr(i, end - i));
      i = end;
    } else if (s[i] == '<') {
      i = AfterTemplateArguments(s, i);
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

}  // namespace

std::string_view WithoutCloneSuffix(std::string_view function) {
  const size_t clone = function.find(" [clone ");
  return clone == std::string_view::npos ? function : function.substr(0, clone);
}

std::string ShortFunctionName(std::string_view function) {
  const std::string bare = WithoutTemplateArguments(WithoutCloneSuffix(function));
  const std::string_view name = WithoutParameters(bare);
  const std::string_view out = StripSpaces(name.substr(NameStart(name)));
  // Text that is not a demangled name ("<", "( )") may leave nothing: keep it as it was.
  return out.empty() ? std::string(function) : std::string(out);
}

bool IsStandardLibraryFunction(std::string_view function) {
  const std::string name = ShortFunctionName(function);
  const std::string_view view = name;
  return view.substr(0, 5) == "std::" || view.substr(0, 11) == "__gnu_cxx::";
}

}  // namespace memtrace
