// Copyright 2026 The memtrace Authors.
//
// function_names.h: demangling symbols, and reading the demangled names of C++ and Rust
// functions, as the Symbolizer gives them.
//
// Demangle() turns a symbol table's or DWARF's linkage name into source form: C++ names
// (_Z...) with the C++ ABI's demangler, Rust names with GNU libiberty's, which reads both
// Rust manglings (v0, _R..., which Rust's standard library is built with, and the legacy
// one, _ZN...17h<hash>E, which a C++ demangler leaves as `Vec$LT$T$GT$::push::h5e3...`).
//
// A demangled name says much more than a reader needs to recognize the function. The
// vector growth that most C++ programs allocate through is
//
//   void std::vector<Particle, std::allocator<Particle> >::_M_realloc_insert<Particle
//       const&>(__gnu_cxx::__normal_iterator<Particle*, std::vector<Particle,
//       std::allocator<Particle> > >, Particle const&)
//
// and ShortFunctionName() gives "std::vector::_M_realloc_insert": the qualified name
// without its return type, template arguments, parameter list, qualifiers, ABI tags and
// clone suffixes. IsStandardLibraryFunction() says whether a name is the C++ standard
// library's (namespace std or __gnu_cxx), whatever its return type.
//
// Names come from the symbol tables and DWARF of whatever program was traced, so any
// string is valid input: one that is not a well-formed demangled name gives some
// substring of it, never a crash.
//
// Thread safety: pure functions.
//
// Example:
//
//   ShortFunctionName("std::map<int, int>::operator[](int const&)")  // "std::map::operator[]"
//   ShortFunctionName("main::{lambda()#1}::operator()() const")
//       // "main::{lambda()#1}::operator()"
//   IsStandardLibraryFunction("void std::vector<int>::_M_realloc_insert<int>(int&&)")  // true
//   Demangle("_RNvNtCslNYArtu3iFV_5alloc5alloc5alloc")  // "alloc::alloc::alloc"

#ifndef MEMTRACE_ANALYSIS_FUNCTION_NAMES_H_
#define MEMTRACE_ANALYSIS_FUNCTION_NAMES_H_

#include <string>
#include <string_view>

namespace memtrace {

// `symbol` demangled: a C++ or Rust linkage name in source form ("operator new(unsigned
// long)", "alloc::raw_vec::RawVec<T,A>::grow_one"), anything else (a C function's name, a
// malformed mangled name) as it is.
std::string Demangle(const char* symbol);

// The function's name without the suffixes GCC gives the copies it specializes
// ("xmalloc [clone .constprop.0]", "Grow() [clone .cold]"): a copy is the function.
std::string_view WithoutCloneSuffix(std::string_view function);

// The qualified name of a demangled function: "ns::Class::member" for
// "int const& ns::Class<int>::member<char>(char*) const [clone .cold]". Operators keep
// their symbol ("std::map::operator[]", "Foo::operator unsigned long"); lambdas and
// anonymous namespaces keep their braces and parentheses. A name without any of the parts
// it drops (a C function, "??") comes back as it is.
std::string ShortFunctionName(std::string_view function);

// True for a function of the C++ standard library: its qualified name
// (ShortFunctionName) is inside namespace std (libstdc++'s std::__cxx11, libc++'s
// std::__1 too) or libstdc++'s __gnu_cxx.
bool IsStandardLibraryFunction(std::string_view function);

// The same for a name ShortFunctionName already gave, for a caller that has it.
bool IsStandardLibraryName(std::string_view short_name);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_FUNCTION_NAMES_H_
