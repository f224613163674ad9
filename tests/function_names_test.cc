// Copyright 2026 The memtrace Authors.
//
// Short names of demangled C++ functions, and which are the standard library's
// (analysis/function_names.h). The names are as abi::__cxa_demangle and GCC 12 give them.

#include "analysis/function_names.h"

#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace memtrace {
namespace {

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
