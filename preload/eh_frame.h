// Copyright 2026 The memtrace Authors.
//
// eh_frame.h: what a binary's unwind tables (.eh_frame, found through .eh_frame_hdr) say
// about one return address on x86-64: how to find the caller's frame from it. The DWARF
// walk in unwind.h asks this for every frame of every recorded stack, so answers are
// cached by return address.
//
// A rule describes the frame of the function that contains `return_address - 1` (the
// call instruction) at that instruction:
//   - the CFA (canonical frame address: the stack pointer before the call that created
//     the frame) is rsp + offset or rbp + offset;
//   - the return address is saved at CFA - 8;
//   - the caller's rbp is either unchanged or saved at CFA - 8k.
// That covers the code compilers emit for ordinary functions, with or without frame
// pointers. Anything else yields kUnsupported: CFA expressions (PLT stubs, signal
// trampolines), a return address or rbp kept elsewhere, an encoding the parser does not
// know. The walk hands such stacks to libunwind. kEnd means the stack ends here: the
// return address is marked undefined (the outermost frame, _start or clone3), or no
// loaded object's tables cover it.
//
// The cache is shared by all threads: one 64-bit word per entry (return address and
// rule), loaded and stored relaxed, so a reader never sees half an entry, and a lost
// race only costs a second parse. Entries are never invalidated: a library unloaded and
// another loaded at the same address could be given the old library's rules. The walk
// bounds every read by the thread's stack, so that can mislabel frames but never fault.
//
// Thread safety: RuleFor() from any thread; no locks, no allocation, no system call
// (_dl_find_object() is lock-free in glibc 2.35 and later).

#ifndef MEMTRACE_PRELOAD_EH_FRAME_H_
#define MEMTRACE_PRELOAD_EH_FRAME_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/fibonacci_index.h"

namespace memtrace::preload_internal {

// A frame rule, packed in 17 bits so that it and a 47-bit return address fit one word:
//   bit 16      the CFA's base register: 0 rsp, 1 rbp
//   bits 4..15  the CFA's offset from it / 8 (0..4094: frames up to 32 KiB)
//   bits 0..3   where the caller's rbp is saved: 0 unchanged, k at CFA - 8k (k <= 15)
// Offset field 4095 marks the two answers that are not rules: End() and Unsupported().
class FrameRule {
 public:
  static constexpr uint32_t kBits = 17;
  static constexpr uint32_t kMaxOffsetUnits = 4094;
  static constexpr uint32_t kMaxRbpSlot = 15;

  static constexpr FrameRule End() { return FrameRule(kSpecialOffset << 4); }
  static constexpr FrameRule Unsupported() {
    return FrameRule((1u << 16) | (kSpecialOffset << 4));
  }
  // `rbp_slot` 0: rbp unchanged; k: saved at CFA - 8k. Needs offset_units <=
  // kMaxOffsetUnits and rbp_slot <= kMaxRbpSlot.
  static constexpr FrameRule Make(bool cfa_from_rbp, uint32_t offset_units, uint32_t rbp_slot) {
    return FrameRule((cfa_from_rbp ? 1u << 16 : 0u) | (offset_units << 4) | rbp_slot);
  }
  static constexpr FrameRule FromBits(uint32_t bits) { return FrameRule(bits); }

  constexpr uint32_t bits() const { return bits_; }
  constexpr bool is_end() const { return bits_ == End().bits_; }
  constexpr bool is_unsupported() const { return bits_ == Unsupported().bits_; }
  constexpr bool is_rule() const { return ((bits_ >> 4) & 0xfff) != kSpecialOffset; }
  constexpr bool cfa_from_rbp() const { return (bits_ >> 16) != 0; }
  constexpr uint64_t cfa_offset() const { return uint64_t{(bits_ >> 4) & 0xfff} * 8; }
  constexpr uint32_t rbp_slot() const { return bits_ & 0xf; }
  friend constexpr bool operator==(FrameRule a, FrameRule b) { return a.bits_ == b.bits_; }

 private:
  static constexpr uint32_t kSpecialOffset = 4095;
  explicit constexpr FrameRule(uint32_t bits) : bits_(bits) {}
  uint32_t bits_;
};

static_assert(FrameRule::Make(true, FrameRule::kMaxOffsetUnits, FrameRule::kMaxRbpSlot).bits() <
              (1u << FrameRule::kBits));
static_assert(!FrameRule::End().is_rule() && !FrameRule::Unsupported().is_rule());
static_assert(FrameRule::Make(false, 1, 0).cfa_offset() == 8);

// A return address and its rule in one word, the way the caches keep them (the shared
// one below, and the walk's per-thread predictor, runtime/internal/thread_state.h):
// (address << FrameRule::kBits) | rule bits. 0 is empty: no return address is 0.
struct RuleEntry {
  // Whether `address` can be kept: below 2^47, as user-space code is.
  static constexpr bool Fits(uint64_t address) {
    return address < (uint64_t{1} << (64 - FrameRule::kBits));
  }
  static constexpr uint64_t Make(uint64_t address, FrameRule rule) {
    return (address << FrameRule::kBits) | rule.bits();
  }
  static constexpr uint64_t Address(uint64_t entry) { return entry >> FrameRule::kBits; }
  static constexpr FrameRule Rule(uint64_t entry) {
    return FrameRule::FromBits(static_cast<uint32_t>(entry & ((1u << FrameRule::kBits) - 1)));
  }
};

// The same without the cache: parses the tables every time. For tests, and for return
// addresses the cache cannot hold (at or above 2^47).
FrameRule ParseRuleFor(uint64_t return_address) noexcept;

// The cache: 8192 RuleEntry words.
inline constexpr uint32_t kRuleCacheBits = 13;
inline std::atomic<uint64_t> rule_cache[size_t{1} << kRuleCacheBits];

// Parses, and caches the answer in `slot` when the address fits.
FrameRule RuleForMiss(uint64_t return_address, uint64_t slot) noexcept;

// The rule for the frame whose return address is `return_address` (nonzero), from the
// cache or, the first time, from the unwind tables of the object that holds it.
inline FrameRule RuleFor(uint64_t return_address) noexcept {
  const uint64_t slot = FibonacciIndex(return_address, kRuleCacheBits);
  // Relaxed: an entry is one self-contained word derived from read-only tables; there is
  // nothing else to order. Pairs with the relaxed store in RuleForMiss().
  const uint64_t entry = rule_cache[slot].load(std::memory_order_relaxed);
  if (RuleEntry::Address(entry) == return_address) return RuleEntry::Rule(entry);
  return RuleForMiss(return_address, slot);
}

}  // namespace memtrace::preload_internal

#endif  // MEMTRACE_PRELOAD_EH_FRAME_H_
