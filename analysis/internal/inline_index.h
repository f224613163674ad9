// Copyright 2026 The memtrace Authors.
//
// inline_index.h: which functions the compiler inlined at an address of a module, found
// without walking a compile unit's DWARF tree for every address.
//
// libdw's dwarf_getscopes() answers "which DIEs contain this address" by walking the
// compile unit's tree from its root each time: for a unit of a few thousand functions
// that is tens of milliseconds an address, and `memtrace top` over a capture of a few
// thousand call sites took a minute. An InlineIndex walks each unit once, the first time
// an address in it is asked about, and keeps the address ranges of its functions and of
// the DW_TAG_inlined_subroutine DIEs inside each; an address then costs a binary search
// among the functions and a scan of one function's inlined ranges.
//
//   unit (walked once) ──► functions, by range start ──► a function's inlined ranges
//                                                         (nested ones deeper)
//
// Thread safety: one thread uses an InlineIndex, as its Symbolizer.
//
// The same walk notes, for each function DIE, the namespaces and classes around it
// (ScopeOf()), to name inlined functions that have no linkage name.
//
// Example:
//   InlineIndex index;
//   Dwarf_Die cu;
//   for (const Dwarf_Die& die : index.At(module, addr, &cu)) ...  // innermost first

#ifndef MEMTRACE_ANALYSIS_INTERNAL_INLINE_INDEX_H_
#define MEMTRACE_ANALYSIS_INTERNAL_INLINE_INDEX_H_

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace memtrace::analysis_internal {

class InlineIndex {
 public:
  // The DW_TAG_inlined_subroutine DIEs whose ranges hold `addr` (a dwfl address of
  // `module`), innermost first; `*cu` is then the compile unit's DIE. Empty when the
  // address is in no unit, or nothing was inlined there.
  std::vector<Dwarf_Die> At(Dwfl_Module* module, Dwarf_Addr addr, Dwarf_Die* cu);

  // The namespaces, classes and functions around the function declared at `decl` (a DIE
  // offset in a unit At() has walked), as a prefix of its name: "ns::Parser::", "" at
  // the top level; null when the walks have not met it. For naming inlined functions the
  // DWARF gives no linkage name for, without a second walk of the unit.
  const std::string* ScopeOf(Dwarf_Off decl) const;

 private:
  struct Inlined {
    Dwarf_Addr low, high;  // [low, high), DWARF addresses
    int depth;             // in the unit's tree: a nested inlined call is deeper
    Dwarf_Die die;
  };
  struct FunctionRange {
    Dwarf_Addr low, high;
    size_t function;  // index into Unit::inlined
  };
  struct Unit {
    std::vector<FunctionRange> ranges;         // sorted by low
    std::vector<std::vector<Inlined>> inlined;  // per function
  };
  void Walk(Dwarf_Die* parent, int depth, ptrdiff_t function, const std::string& scope,
            Unit* unit);

  std::map<Dwarf_Off, Unit> units_;  // by the unit DIE's offset
  std::unordered_map<Dwarf_Off, std::string> scopes_;  // function DIE -> ScopeOf()
};

}  // namespace memtrace::analysis_internal

#endif  // MEMTRACE_ANALYSIS_INTERNAL_INLINE_INDEX_H_
