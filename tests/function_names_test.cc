// Copyright 2026 The memtrace Authors.
//
// Demangling, short names of demangled C++ and Rust functions, and which are the C++
// standard library's (analysis/function_names.h). The C++ names are as
// abi::__cxa_demangle and GCC 12 give them; the Rust symbols are rustc 1.95's.

#include "analysis/function_names.h"

#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace memtrace {
namespace {

TEST(FunctionNamesTest, DemanglesCppAndBothRustManglings) {
  const struct {
    const char* symbol;
    std::string_view demangled;
  } cases[] = {
      {"malloc", "malloc"},
      {"_Znwm", "operator new(unsigned long)"},
      {"_ZNSt6vectorIiSaIiEE9push_backERKi",
       "std::vector<int, std::allocator<int> >::push_back(int const&)"},
      // Rust v0, as Rust's standard library is built.
      {"_RNvNtCslNYArtu3iFV_5alloc5alloc5alloc", "alloc::alloc::alloc"},
      {"_RNvXs_NtCslNYArtu3iFV_5alloc5allocNtB4_6GlobalNtNtCsgEmfK2I1SDS_4core5alloc9"
       "Allocator8allocate",
       "<alloc::alloc::Global as core::alloc::Allocator>::allocate"},
      {"_RNvMs3_NtCslNYArtu3iFV_5alloc7raw_vecINtB5_6RawVechE16with_capacity_inB7_",
       "<alloc::raw_vec::RawVec<u8>>::with_capacity_in"},
      // Rust legacy, as a program's own crate is built: no hash, no $LT$ escapes.
      {"_ZN1r5names17hc16ca60aee9bc205E", "r::names"},
      {"_ZN5alloc7raw_vec19RawVec$LT$T$C$A$GT$8grow_one17h76111196bd863648E",
       "alloc::raw_vec::RawVec<T,A>::grow_one"},
      {"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17ha86af84d9cc65291E",
       "std::rt::lang_start::{{closure}}"},
      // Not valid in either: as given.
      {"_Zxyz", "_Zxyz"},
      {"_RXYZ", "_RXYZ"},
      {"_R", "_R"},
      {"_", "_"},
      {"", ""},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Demangle(c.symbol), c.demangled) << c.symbol;
  }
}

TEST(FunctionNamesTest, RustShortNamesDropGenericsAndInherentBrackets) {
  const struct {
    std::string_view demangled;
    std::string_view short_name;
  } cases[] = {
      {"r::names", "r::names"},
      {"alloc::alloc::alloc", "alloc::alloc::alloc"},
      {"<alloc::raw_vec::RawVec<u8>>::with_capacity_in", "alloc::raw_vec::RawVec::with_capacity_in"},
      {"alloc::raw_vec::RawVec<T,A>::grow_one", "alloc::raw_vec::RawVec::grow_one"},
      {"<alloc::alloc::Global as core::alloc::Allocator>::allocate",
       "<alloc::alloc::Global as core::alloc::Allocator>::allocate"},
      {"<alloc::vec::Vec<T,A> as alloc::vec::spec_extend::SpecExtend<T,I>>::spec_extend",
       "<alloc::vec::Vec as alloc::vec::spec_extend::SpecExtend>::spec_extend"},
      {"<std::io::error::Error>::new::<&str>", "std::io::error::Error::new"},
      {"<std::sync::once_lock::OnceLock<std::fs::File>>::initialize::<std::sys::random::linux::"
       "getrandom::{closure#0}, std::io::error::Error>",
       "std::sync::once_lock::OnceLock::initialize"},
      {"core::ptr::drop_in_place<alloc::vec::Vec<alloc::string::String>>",
       "core::ptr::drop_in_place"},
      {"r::names::{closure#0}", "r::names::{closure#0}"},
      {"<[u8]>::copy_within::<core::ops::range::RangeInclusive<usize>>", "[u8]::copy_within"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ShortFunctionName(c.demangled), c.short_name) << c.demangled;
  }
}

TEST(FunctionNamesTest, ShortNamesDropTemplatesParametersAndReturnTypes) {
  const struct {
    std::string_view demangled;
    std::string_view short_name;
  } cases[] = {
      {"malloc", "malloc"},
      {"??", "??"},
      {"operator new(unsigned long)", "operator new"},
      {"operator delete[](void*, std::align_val_t)", "operator delete[]"},
      {"std::_Vector_base<P, std::allocator<P> >::_M_allocate(unsigned long)",
       "std::_Vector_base::_M_allocate"},
      // A member template: the demangler gives its return type first.
      {"void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>("
       "__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int "
       "const&)",
       "std::vector::_M_realloc_insert"},
      {"std::__allocated_ptr<std::allocator<std::_Sp_counted_ptr_inplace<P, "
       "std::allocator<void>, (__gnu_cxx::_Lock_policy)2> > > "
       "std::__allocate_guarded<std::allocator<std::_Sp_counted_ptr_inplace<P, "
       "std::allocator<void>, (__gnu_cxx::_Lock_policy)2> > >(std::allocator<"
       "std::_Sp_counted_ptr_inplace<P, std::allocator<void>, (__gnu_cxx::_Lock_policy)2> >&)",
       "std::__allocate_guarded"},
      {"std::map<int, int, std::less<int>, std::allocator<std::pair<int const, int> > "
       ">::operator[](int const&)",
       "std::map::operator[]"},
      {"std::basic_ostream<char, std::char_traits<char> >& std::operator<< "
       "<std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> >&, char "
       "const*)",
       "std::operator<<"},
      {"bool std::operator< <int>(std::vector<int> const&, std::vector<int> const&)",
       "std::operator<"},
      {"Grid::operator<=>(Grid const&) const", "Grid::operator<=>"},
      {"Node::operator->() const", "Node::operator->"},
      {"Handle::operator unsigned long() const", "Handle::operator unsigned long"},
      {"Text::operator std::basic_string<char, std::char_traits<char>, std::allocator<char> "
       ">() const &&",
       "Text::operator std::basic_string"},
      {"main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()"},
      // A name from DWARF, without a parameter list.
      {"ns::Parser::operator()", "ns::Parser::operator()"},
      {"(anonymous namespace)::Inner(unsigned long) [clone .constprop.0]",
       "(anonymous namespace)::Inner"},
      {"Name[abi:cxx11](int)", "Name"},
      {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
       ">::basic_string<std::allocator<char> >(char const*, std::allocator<char> const&)",
       "std::__cxx11::basic_string::basic_string"},
      {"std::_Function_handler<void (int), main::{lambda(int)#1}>::_M_invoke(std::_Any_data "
       "const&, int&&)",
       "std::_Function_handler::_M_invoke"},
      {"Buffer<((4)>(2))>::size() const", "Buffer::size"},  // an expression as argument
      {"non-virtual thunk to Derived::Run()", "Derived::Run"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ShortFunctionName(c.demangled), c.short_name) << c.demangled;
  }
}

// Names come from whatever binary was traced: text that is not a demangled name gives
// some part of it, or itself, never nothing and never a read past its end.
TEST(FunctionNamesTest, MalformedNamesComeBackWhole) {
  for (std::string_view text :
       {"", "<", ">", "(", ")", "()", "( )", "<<<", "f<", "f(", "f)", "operator",
        "operator<", "operator(", " ", "a b c", "[abi:", "x [clone ", "{", "}"}) {
    const std::string name = ShortFunctionName(text);
    if (!text.empty()) {
      EXPECT_FALSE(name.empty()) << "'" << text << "'";
    }
    EXPECT_LE(name.size(), text.size()) << "'" << text << "'";
  }
  EXPECT_EQ(ShortFunctionName("f<"), "f");
  EXPECT_EQ(ShortFunctionName("<"), "<");
  EXPECT_EQ(ShortFunctionName("operator<"), "operator<");
}

TEST(FunctionNamesTest, KnowsTheStandardLibrarysFunctions) {
  for (std::string_view f :
       {"std::vector<int, std::allocator<int> >::push_back(int const&)",
        "void std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(int&&)",
        "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
        ">::_M_mutate(unsigned long, unsigned long, char const*, unsigned long)",
        "std::__1::vector<int, std::__1::allocator<int> >::__push_back_slow_path<int>(int&&)",
        "__gnu_cxx::new_allocator<char>::allocate(unsigned long, void const*)",
        "std::locale::classic()", "std::make_shared"}) {
    EXPECT_TRUE(IsStandardLibraryFunction(f)) << f;
  }
  for (std::string_view f :
       {"main", "??", "operator new(unsigned long)", "Parser::Grow()",
        "stdio_alloc(unsigned long)", "my::std::vector::push_back()",
        "std_alloc", "main::{lambda()#1}::operator()() const",
        "std::vector<int> Parse(char const*)"}) {
    EXPECT_FALSE(IsStandardLibraryFunction(f)) << f;
  }
}

}  // namespace
}  // namespace memtrace
