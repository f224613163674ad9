// Copyright 2026 The memtrace Authors.
//
// The .eh_frame reader: find the FDE that covers a pc through the binary search table of
// .eh_frame_hdr, read its CIE, run the call frame instructions up to the pc, and keep the
// three rules a walk needs (CFA, return address, rbp). Formats: the DWARF 4 standard,
// section 6.4 (call frame information), and the LSB's .eh_frame / .eh_frame_hdr
// description (pointer encodings, augmentations).

#include "preload/eh_frame.h"

#include <dlfcn.h>

#include <cstring>

namespace memtrace::preload_internal {
namespace {

// DWARF register numbers on x86-64.
constexpr uint64_t kRbp = 6;
constexpr uint64_t kRsp = 7;
constexpr uint64_t kReturnAddress = 16;

// Pointer encodings (DW_EH_PE_*).
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPeAbsptr = 0x00;
constexpr uint8_t kPeUleb128 = 0x01;
constexpr uint8_t kPeUdata2 = 0x02;
constexpr uint8_t kPeUdata4 = 0x03;
constexpr uint8_t kPeUdata8 = 0x04;
constexpr uint8_t kPeSleb128 = 0x09;
constexpr uint8_t kPeSdata2 = 0x0a;
constexpr uint8_t kPeSdata4 = 0x0b;
constexpr uint8_t kPeSdata8 = 0x0c;
constexpr uint8_t kPePcrel = 0x10;
constexpr uint8_t kPeDatarel = 0x30;
constexpr uint8_t kPeIndirect = 0x80;
// .eh_frame_hdr's table as every linker writes it: datarel | sdata4 pairs.
constexpr uint8_t kPeTable = kPeDatarel | kPeSdata4;

template <typename T>
T Load(const uint8_t* p) {
  T v;
  memcpy(&v, p, sizeof(v));
  return v;
}

// Reads unwind table bytes within [p_, end_); any read past the end makes ok() false.
class Reader {
 public:
  Reader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}

  const uint8_t* position() const { return p_; }
  bool ok() const { return ok_; }
  bool at_end() const { return p_ >= end_; }

  bool Has(size_t n) {
    if (ok_ && static_cast<size_t>(end_ - p_) >= n) return true;
    ok_ = false;
    return false;
  }
  uint8_t U8() { return Has(1) ? *p_++ : 0; }
  template <typename T>
  T Fixed() {
    if (!Has(sizeof(T))) return 0;
    const T v = Load<T>(p_);
    p_ += sizeof(T);
    return v;
  }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (!Has(1)) return 0;
      const uint8_t b = *p_++;
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok_ = false;
    return 0;
  }
  int64_t Sleb() {
    uint64_t v = 0;
    int shift = 0;
    uint8_t b = 0;
    do {
      if (!Has(1) || shift >= 64) {
        ok_ = false;
        return 0;
      }
      b = *p_++;
      v |= uint64_t{b & 0x7fu} << shift;
      shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= ~uint64_t{0} << shift;
    return static_cast<int64_t>(v);
  }
  void Skip(uint64_t n) {
    if (Has(n)) p_ += n;
  }
  // A pointer in `encoding`; `data_base` serves datarel. Indirect and the rarer bases
  // (textrel, funcrel, aligned) fail the reader.
  uint64_t Pointer(uint8_t encoding, uint64_t data_base) {
    if (encoding == kPeOmit) return 0;
    const uint64_t here = reinterpret_cast<uint64_t>(p_);
    uint64_t v = 0;
    switch (encoding & 0x0f) {
      case kPeAbsptr:
      case kPeUdata8:
      case kPeSdata8:
        v = Fixed<uint64_t>();
        break;
      case kPeUleb128:
        v = Uleb();
        break;
      case kPeUdata2:
        v = Fixed<uint16_t>();
        break;
      case kPeUdata4:
        v = Fixed<uint32_t>();
        break;
      case kPeSleb128:
        v = static_cast<uint64_t>(Sleb());
        break;
      case kPeSdata2:
        v = static_cast<uint64_t>(int64_t{Fixed<int16_t>()});
        break;
      case kPeSdata4:
        v = static_cast<uint64_t>(int64_t{Fixed<int32_t>()});
        break;
      default:
        ok_ = false;
        return 0;
    }
    if (encoding & kPeIndirect) {
      ok_ = false;
      return 0;
    }
    switch (encoding & 0x70) {
      case 0:
        return v;
      case kPePcrel:
        return v + here;
      case kPeDatarel:
        if (data_base != 0) return v + data_base;
        [[fallthrough]];
      default:
        ok_ = false;
        return 0;
    }
  }

 private:
  const uint8_t* p_;
  const uint8_t* const end_;
  bool ok_ = true;
};

// What a CIE says that its FDEs need.
struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t return_register = kReturnAddress;
  uint8_t fde_encoding = kPeAbsptr;
  bool has_augmentation_data = false;
  bool signal_frame = false;
  const uint8_t* instructions = nullptr;
  const uint8_t* end = nullptr;
};

// A record's length and body: [body, end). False at a terminator or on nonsense.
bool Record(const uint8_t* p, const uint8_t** body, const uint8_t** end) {
  uint64_t length = Load<uint32_t>(p);
  p += 4;
  if (length == 0xffffffffu) {
    length = Load<uint64_t>(p);
    p += 8;
  }
  if (length == 0 || length > (uint64_t{1} << 30)) return false;
  *body = p;
  *end = p + length;
  return true;
}

bool ParseCie(const uint8_t* cie, Cie* out) {
  const uint8_t* body;
  const uint8_t* end;
  if (!Record(cie, &body, &end)) return false;
  Reader r(body, end);
  if (r.Fixed<uint32_t>() != 0) return false;  // the CIE id: 0 in .eh_frame
  const uint8_t version = r.U8();
  if (version != 1 && version != 3) return false;
  const char* augmentation = reinterpret_cast<const char*>(r.position());
  while (r.U8() != 0) {
    if (!r.ok()) return false;
  }
  out->code_align = r.Uleb();
  out->data_align = r.Sleb();
  out->return_register = version == 1 ? r.U8() : r.Uleb();
  if (augmentation[0] == 'z') {
    out->has_augmentation_data = true;
    const uint64_t length = r.Uleb();
    Reader data(r.position(), r.position() + length);
    for (const char* a = augmentation + 1; *a != 0; ++a) {
      switch (*a) {
        case 'R':
          out->fde_encoding = data.U8();
          break;
        case 'L':
          data.U8();  // the LSDA's encoding: not needed to unwind
          break;
        case 'P': {
          const uint8_t encoding = data.U8();
          // The personality routine's pointer, skipped by its size (indirect is fine:
          // it is not followed).
          data.Pointer(static_cast<uint8_t>(encoding & ~kPeIndirect), 0);
          break;
        }
        case 'S':
          out->signal_frame = true;
          break;
        default:
          return false;  // an augmentation we cannot size
      }
    }
    if (!data.ok()) return false;
    r.Skip(length);
  } else if (augmentation[0] != 0) {
    return false;  // "eh" and other pre-'z' forms
  }
  if (!r.ok()) return false;
  out->instructions = r.position();
  out->end = end;
  return true;
}

// The rules the walk needs, as the instructions leave them.
struct RegisterRule {
  enum Kind : uint8_t { kUnchanged, kOffset, kUndefined, kOther };
  Kind kind = kUnchanged;
  int64_t offset = 0;  // kOffset: saved at CFA + offset
};

struct FrameState {
  uint64_t cfa_register = kRsp;
  int64_t cfa_offset = 8;
  bool cfa_expression = false;
  RegisterRule rbp;
  RegisterRule ra;
  bool rsp_rule = false;  // a rule for rsp itself: not something we follow
};

class CfaProgram {
 public:
  CfaProgram(const Cie& cie, uint64_t pc) : cie_(cie), pc_(pc) {}

  // Runs [p, end) from location `loc`; stops once the location passes the pc. False on
  // an instruction it does not know or a malformed stream.
  bool Run(const uint8_t* p, const uint8_t* end, uint64_t loc) {
    loc_ = loc;
    Reader r(p, end);
    while (!r.at_end() && loc_ <= pc_) {
      const uint8_t op = r.U8();
      switch (op >> 6) {
        case 1:
          Advance(op & 0x3f);
          continue;
        case 2:
          SetOffset(op & 0x3f, static_cast<int64_t>(r.Uleb()) * cie_.data_align);
          continue;
        case 3:
          Restore(op & 0x3f);
          continue;
        default:
          break;
      }
      switch (op) {
        case 0x00:  // nop
          break;
        case 0x01:  // set_loc
          loc_ = r.Pointer(cie_.fde_encoding, 0);
          break;
        case 0x02:  // advance_loc1
          Advance(r.U8());
          break;
        case 0x03:  // advance_loc2
          Advance(r.Fixed<uint16_t>());
          break;
        case 0x04:  // advance_loc4
          Advance(r.Fixed<uint32_t>());
          break;
        case 0x05: {  // offset_extended
          const uint64_t reg = r.Uleb();
          SetOffset(reg, static_cast<int64_t>(r.Uleb()) * cie_.data_align);
          break;
        }
        case 0x06:  // restore_extended
          Restore(r.Uleb());
          break;
        case 0x07:  // undefined
          Set(r.Uleb(), RegisterRule{RegisterRule::kUndefined, 0});
          break;
        case 0x08:  // same_value
          Set(r.Uleb(), RegisterRule{RegisterRule::kUnchanged, 0});
          break;
        case 0x09: {  // register
          const uint64_t reg = r.Uleb();
          r.Uleb();
          Set(reg, RegisterRule{RegisterRule::kOther, 0});
          break;
        }
        case 0x0a:  // remember_state
          if (depth_ == kMaxRemembered) return false;
          remembered_[depth_++] = state_;
          break;
        case 0x0b:  // restore_state
          if (depth_ == 0) return false;
          state_ = remembered_[--depth_];
          break;
        case 0x0c:  // def_cfa
          state_.cfa_register = r.Uleb();
          state_.cfa_offset = static_cast<int64_t>(r.Uleb());
          state_.cfa_expression = false;
          break;
        case 0x0d:  // def_cfa_register
          state_.cfa_register = r.Uleb();
          break;
        case 0x0e:  // def_cfa_offset
          state_.cfa_offset = static_cast<int64_t>(r.Uleb());
          break;
        case 0x0f:  // def_cfa_expression
          r.Skip(r.Uleb());
          state_.cfa_expression = true;
          break;
        case 0x10:    // expression
        case 0x11: {  // offset_extended_sf
          const uint64_t reg = r.Uleb();
          SetOffset(reg, r.Sleb() * cie_.data_align);
          break;
        }
        case 0x12:  // def_cfa_sf
          state_.cfa_register = r.Uleb();
          state_.cfa_offset = r.Sleb() * cie_.data_align;
          state_.cfa_expression = false;
          break;
        case 0x13:  // def_cfa_offset_sf
          state_.cfa_offset = r.Sleb() * cie_.data_align;
          break;
        case 0x14:    // val_offset
        case 0x15: {  // val_offset_sf
          const uint64_t reg = r.Uleb();
          if (op == 0x14) {
            r.Uleb();
          } else {
            r.Sleb();
          }
          Set(reg, RegisterRule{RegisterRule::kOther, 0});
          break;
        }
        case 0x2e:  // GNU_args_size
          r.Uleb();
          break;
        case 0x2f: {  // GNU_negative_offset_extended
          const uint64_t reg = r.Uleb();
          SetOffset(reg, -static_cast<int64_t>(r.Uleb()) * cie_.data_align);
          break;
        }
        default:
          return false;
      }
      if (!r.ok()) return false;
    }
    return r.ok();
  }

  // The state after the CIE's instructions: what DW_CFA_restore goes back to.
  void MarkInitial() { initial_ = state_; }
  const FrameState& state() const { return state_; }

 private:
  static constexpr int kMaxRemembered = 8;

  void Advance(uint64_t delta) { loc_ += delta * cie_.code_align; }
  void SetOffset(uint64_t reg, int64_t offset) {
    Set(reg, RegisterRule{RegisterRule::kOffset, offset});
  }
  void Set(uint64_t reg, RegisterRule rule) {
    if (reg == kRbp) state_.rbp = rule;
    if (reg == cie_.return_register) state_.ra = rule;
    if (reg == kRsp) state_.rsp_rule = true;
  }
  void Restore(uint64_t reg) {
    if (reg == kRbp) state_.rbp = initial_.rbp;
    if (reg == cie_.return_register) state_.ra = initial_.ra;
    if (reg == kRsp) state_.rsp_rule = initial_.rsp_rule;
  }

  const Cie& cie_;
  const uint64_t pc_;
  uint64_t loc_ = 0;
  FrameState state_;
  FrameState initial_;
  FrameState remembered_[kMaxRemembered];
  int depth_ = 0;
};

// The FDE in the object whose .eh_frame_hdr is at `hdr` that may cover `pc`: the last
// table entry starting at or below it. Null when there is none or the table is not the
// standard sorted one.
const uint8_t* FindFde(const uint8_t* hdr, uint64_t pc) {
  if (hdr[0] != 1) return nullptr;  // version
  const uint8_t eh_frame_encoding = hdr[1];
  const uint8_t count_encoding = hdr[2];
  const uint8_t table_encoding = hdr[3];
  if (table_encoding != kPeTable) return nullptr;
  const auto base = reinterpret_cast<uint64_t>(hdr);
  Reader r(hdr + 4, hdr + 4 + 32);
  r.Pointer(eh_frame_encoding, base);
  const uint64_t count = r.Pointer(count_encoding, base);
  if (!r.ok() || count == 0) return nullptr;
  const uint8_t* table = r.position();
  // Entries: (initial location, FDE address), each an int32 relative to `hdr`.
  const int64_t target = static_cast<int64_t>(pc - base);
  uint64_t lo = 0;
  uint64_t hi = count;  // the answer is in [lo, hi)
  if (Load<int32_t>(table) > target) return nullptr;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (Load<int32_t>(table + 8 * mid) <= target) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return hdr + Load<int32_t>(table + 8 * lo + 4);
}

FrameRule Describe(const FrameState& s) {
  if (s.ra.kind == RegisterRule::kUndefined) return FrameRule::End();
  if (s.cfa_expression || s.rsp_rule) return FrameRule::Unsupported();
  if (s.cfa_register != kRsp && s.cfa_register != kRbp) return FrameRule::Unsupported();
  if (s.cfa_offset < 0 || s.cfa_offset % 8 != 0 ||
      s.cfa_offset / 8 > FrameRule::kMaxOffsetUnits) {
    return FrameRule::Unsupported();
  }
  if (s.ra.kind != RegisterRule::kOffset || s.ra.offset != -8) return FrameRule::Unsupported();
  uint32_t rbp_slot = 0;
  if (s.rbp.kind == RegisterRule::kOffset) {
    if (s.rbp.offset >= 0 || s.rbp.offset % 8 != 0 ||
        -s.rbp.offset / 8 > FrameRule::kMaxRbpSlot) {
      return FrameRule::Unsupported();
    }
    rbp_slot = static_cast<uint32_t>(-s.rbp.offset / 8);
  } else if (s.rbp.kind != RegisterRule::kUnchanged) {
    return FrameRule::Unsupported();
  }
  return FrameRule::Make(s.cfa_register == kRbp, static_cast<uint32_t>(s.cfa_offset / 8),
                         rbp_slot);
}

}  // namespace

FrameRule ParseRuleFor(uint64_t return_address) noexcept {
  // The call instruction ends just before the return address; a call that ends its
  // function (to a noreturn callee) has a return address in the next function.
  const uint64_t pc = return_address - 1;
  dl_find_object object;
  if (_dl_find_object(reinterpret_cast<void*>(pc), &object) != 0) return FrameRule::End();
  if (object.dlfo_eh_frame == nullptr) return FrameRule::End();
  const uint8_t* fde = FindFde(static_cast<const uint8_t*>(object.dlfo_eh_frame), pc);
  if (fde == nullptr) return FrameRule::End();
  const uint8_t* body;
  const uint8_t* end;
  if (!Record(fde, &body, &end)) return FrameRule::End();
  const uint32_t cie_offset = Load<uint32_t>(body);
  if (cie_offset == 0) return FrameRule::Unsupported();  // a CIE, not an FDE
  Cie cie;
  if (!ParseCie(body - cie_offset, &cie)) return FrameRule::Unsupported();
  if (cie.signal_frame) return FrameRule::Unsupported();
  Reader r(body + 4, end);
  const uint64_t pc_begin = r.Pointer(cie.fde_encoding, 0);
  const uint64_t pc_range = r.Pointer(cie.fde_encoding & 0x0f, 0);
  if (!r.ok()) return FrameRule::Unsupported();
  if (pc < pc_begin || pc - pc_begin >= pc_range) return FrameRule::End();  // a gap
  if (cie.has_augmentation_data) r.Skip(r.Uleb());
  if (!r.ok()) return FrameRule::Unsupported();
  CfaProgram program(cie, pc);
  if (!program.Run(cie.instructions, cie.end, 0)) return FrameRule::Unsupported();
  program.MarkInitial();
  if (!program.Run(r.position(), end, pc_begin)) return FrameRule::Unsupported();
  return Describe(program.state());
}

FrameRule RuleForMiss(uint64_t return_address, uint64_t slot) noexcept {
  const FrameRule rule = ParseRuleFor(return_address);
  if (RuleEntry::Fits(return_address)) {
    // Relaxed: see RuleFor().
    rule_cache[slot].store(RuleEntry::Make(return_address, rule), std::memory_order_relaxed);
  }
  return rule;
}

}  // namespace memtrace::preload_internal
