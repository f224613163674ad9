// Copyright 2026 The memtrace Authors.

#include "analysis/internal/inline_index.h"

#include <dwarf.h>

#include <algorithm>

namespace memtrace::analysis_internal {

void InlineIndex::Walk(Dwarf_Die* parent, int depth, ptrdiff_t function,
                       const std::string& scope, Unit* unit) {
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    ptrdiff_t inside = function;
    // The scope of what is declared inside this DIE.
    const char* name = dwarf_diename(&child);
    std::string inner_scope;
    const std::string* child_scope = &scope;
    if (tag == DW_TAG_namespace) {
      inner_scope = scope + (name != nullptr ? name : "(anonymous namespace)") + "::";
      child_scope = &inner_scope;
    } else if ((tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                tag == DW_TAG_union_type || tag == DW_TAG_subprogram) &&
               name != nullptr && dwarf_haschildren(&child)) {
      inner_scope = scope + name + "::";
      child_scope = &inner_scope;
    }
    if (tag == DW_TAG_subprogram) {
      scopes_.try_emplace(dwarf_dieoffset(&child), scope);
      // A function with code (a declaration or an abstract instance has no ranges); its
      // inlined calls are listed under it.
      inside = -1;
      Dwarf_Addr base = 0, low = 0, high = 0;
      for (ptrdiff_t at = 0; (at = dwarf_ranges(&child, at, &base, &low, &high)) > 0;) {
        if (inside < 0) {
          inside = static_cast<ptrdiff_t>(unit->inlined.size());
          unit->inlined.emplace_back();
        }
        unit->ranges.push_back(FunctionRange{low, high, static_cast<size_t>(inside)});
      }
    } else if (tag == DW_TAG_inlined_subroutine && function >= 0) {
      Dwarf_Addr base = 0, low = 0, high = 0;
      for (ptrdiff_t at = 0; (at = dwarf_ranges(&child, at, &base, &low, &high)) > 0;) {
        unit->inlined[static_cast<size_t>(function)].push_back(Inlined{low, high, depth, child});
      }
    }
    if (dwarf_haschildren(&child)) Walk(&child, depth + 1, inside, *child_scope, unit);
  } while (dwarf_siblingof(&child, &child) == 0);
}

std::vector<Dwarf_Die> InlineIndex::At(Dwfl_Module* module, Dwarf_Addr addr, Dwarf_Die* cu) {
  Dwarf_Addr bias = 0;
  Dwarf_Die* unit_die = dwfl_module_addrdie(module, addr, &bias);
  if (unit_die == nullptr) return {};
  *cu = *unit_die;
  auto [it, added] = units_.try_emplace(dwarf_dieoffset(unit_die));
  Unit& unit = it->second;
  if (added) {
    Walk(unit_die, 0, -1, std::string(), &unit);
    std::sort(unit.ranges.begin(), unit.ranges.end(),
              [](const FunctionRange& a, const FunctionRange& b) { return a.low < b.low; });
  }
  const Dwarf_Addr pc = addr - bias;
  // The smallest function range that holds pc, among the few starting at or before it
  // (functions rarely nest: a nested one would be the smaller).
  auto after = std::upper_bound(unit.ranges.begin(), unit.ranges.end(), pc,
                                [](Dwarf_Addr a, const FunctionRange& r) { return a < r.low; });
  const FunctionRange* best = nullptr;
  for (int scanned = 0; after != unit.ranges.begin() && scanned < 16; ++scanned) {
    --after;
    if (pc < after->high && (best == nullptr || after->high - after->low < best->high - best->low)) {
      best = &*after;
    }
  }
  if (best == nullptr) return {};
  std::vector<const Inlined*> holding;
  for (const Inlined& in : unit.inlined[best->function]) {
    if (pc >= in.low && pc < in.high) holding.push_back(&in);
  }
  std::sort(holding.begin(), holding.end(),
            [](const Inlined* a, const Inlined* b) { return a->depth > b->depth; });
  std::vector<Dwarf_Die> out;
  out.reserve(holding.size());
  for (const Inlined* in : holding) out.push_back(in->die);
  return out;
}

const std::string* InlineIndex::ScopeOf(Dwarf_Off decl) const {
  auto it = scopes_.find(decl);
  return it != scopes_.end() ? &it->second : nullptr;
}

}  // namespace memtrace::analysis_internal
