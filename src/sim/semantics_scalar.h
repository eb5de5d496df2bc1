// src/sim/semantics_scalar.h — semantics of the scalar instructions.
#pragma once

#include "semantics.h"

namespace tilecore::sim {

namespace scalar {

inline int32_t s(uint32_t v) { return int32_t(v); }

#define TC1_ALU_R(Id, expr)                                 \
  template <>                                               \
  struct Semantics<Opcode::Id> {                            \
    static Outcome exec(Machine&, Core& c, const Inst& i) { \
      uint32_t a = c.x[i.b], b = c.x[i.c];                  \
      (void)a;                                              \
      (void)b;                                              \
      set_x(c, i.a, uint32_t(expr));                        \
      return {};                                            \
    }                                                       \
  };
#define TC1_ALU_I(Id, expr)                                 \
  template <>                                               \
  struct Semantics<Opcode::Id> {                            \
    static Outcome exec(Machine&, Core& c, const Inst& i) { \
      uint32_t a = c.x[i.b], b = uint32_t(i.imm);           \
      (void)a;                                              \
      (void)b;                                              \
      set_x(c, i.a, uint32_t(expr));                        \
      return {};                                            \
    }                                                       \
  };

inline uint32_t div_s(uint32_t a, uint32_t b) {
  if (b == 0) return 0xFFFFFFFFu;
  if (a == 0x80000000u && b == 0xFFFFFFFFu) return a;
  return uint32_t(s(a) / s(b));
}
inline uint32_t rem_s(uint32_t a, uint32_t b) {
  if (b == 0) return a;
  if (a == 0x80000000u && b == 0xFFFFFFFFu) return 0;
  return uint32_t(s(a) % s(b));
}

}  // namespace scalar

using scalar::s;
TC1_ALU_R(Add, a + b)
TC1_ALU_R(Sub, a - b)
TC1_ALU_R(Mul, a* b)
TC1_ALU_R(Mulh, uint64_t(int64_t(s(a)) * int64_t(s(b))) >> 32)
TC1_ALU_R(Mulhu, (uint64_t(a) * uint64_t(b)) >> 32)
TC1_ALU_R(Div, scalar::div_s(a, b))
TC1_ALU_R(Divu, b == 0 ? 0xFFFFFFFFu : a / b)
TC1_ALU_R(Rem, scalar::rem_s(a, b))
TC1_ALU_R(Remu, b == 0 ? a : a % b)
TC1_ALU_R(And, a& b)
TC1_ALU_R(Or, a | b)
TC1_ALU_R(Xor, a ^ b)
TC1_ALU_R(Sll, a << (b & 31))
TC1_ALU_R(Srl, a >> (b & 31))
TC1_ALU_R(Sra, uint32_t(s(a) >> (b & 31)))
TC1_ALU_R(Slt, s(a) < s(b) ? 1u : 0u)
TC1_ALU_R(Sltu, a < b ? 1u : 0u)
TC1_ALU_R(Min, s(a) < s(b) ? a : b)
TC1_ALU_R(Max, s(a) > s(b) ? a : b)
TC1_ALU_R(Minu, a < b ? a : b)
TC1_ALU_R(Maxu, a > b ? a : b)
TC1_ALU_I(Addi, a + b)
TC1_ALU_I(Andi, a& b)
TC1_ALU_I(Ori, a | b)
TC1_ALU_I(Xori, a ^ b)
TC1_ALU_I(Slli, a << (b & 31))
TC1_ALU_I(Srli, a >> (b & 31))
TC1_ALU_I(Srai, uint32_t(s(a) >> (b & 31)))
TC1_ALU_I(Slti, s(a) < s(b) ? 1u : 0u)
TC1_ALU_I(Sltiu, a < b ? 1u : 0u)
TC1_ALU_I(Muli, a* b)
TC1_ALU_I(Li, b)
#undef TC1_ALU_R
#undef TC1_ALU_I

template <>
struct Semantics<Opcode::Nop> {
  static Outcome exec(Machine&, Core&, const Inst&) { return {}; }
};
template <>
struct Semantics<Opcode::Halt> {
  static Outcome exec(Machine&, Core&, const Inst&) { return {Outcome::Halt}; }
};
template <>
struct Semantics<Opcode::Barrier> {
  static Outcome exec(Machine& m, Core& c, const Inst&) { return m.barrier(c); }
};
template <>
struct Semantics<Opcode::Fence> {
  static Outcome exec(Machine& m, Core& c, const Inst&) { return m.fence(c); }
};
template <>
struct Semantics<Opcode::Wait> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) { return m.wait_instruction(c, i); }
};
template <>
struct Semantics<Opcode::Hcall> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) {
    m.host_call(c, uint32_t(c.x[i.b] + uint32_t(i.imm)));
    set_x(c, i.a, 0);
    return {};
  }
};
template <>
struct Semantics<Opcode::Csrr> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) {
    set_x(c, i.a, m.csr(c, arch::Csr(i.imm)));
    return {};
  }
};

// ---- loads and stores -------------------------------------------------------------------------

template <int Size, bool Signed>
Outcome scalar_load(Machine& m, Core& c, const Inst& i) {
  Space sp = Space(i.e);
  uint64_t addr = uint64_t(uint32_t(c.x[i.b] + uint32_t(i.imm)));
  const uint8_t* p = m.access(c, sp, addr, Size, Size, false);
  uint32_t v = 0;
  if (p) {
    if constexpr (Size == 1) v = Signed ? uint32_t(int32_t(int8_t(p[0]))) : p[0];
    if constexpr (Size == 2) {
      uint16_t h = uint16_t(p[0] | p[1] << 8);
      v = Signed ? uint32_t(int32_t(int16_t(h))) : h;
    }
    if constexpr (Size == 4)
      v = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  }
  set_x(c, i.a, v);
  return {Outcome::Next, 0, arch::cost::front_end(arch::CostClass::ScalarMem, sp), 0};
}

template <int Size>
Outcome scalar_store(Machine& m, Core& c, const Inst& i) {
  Space sp = Space(i.e);
  uint64_t addr = uint64_t(uint32_t(c.x[i.b] + uint32_t(i.imm)));
  uint8_t* p = m.access(c, sp, addr, Size, Size, true);
  uint32_t v = c.x[i.a];
  for (int k = 0; k < Size; ++k) p[k] = uint8_t(v >> (8 * k));
  return {Outcome::Next, 0, arch::cost::front_end(arch::CostClass::ScalarMem, sp), 0};
}

template <>
struct Semantics<Opcode::Lb> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) { return scalar_load<1, true>(m, c, i); }
};
template <>
struct Semantics<Opcode::Lbu> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) { return scalar_load<1, false>(m, c, i); }
};
template <>
struct Semantics<Opcode::Lh> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) { return scalar_load<2, true>(m, c, i); }
};
template <>
struct Semantics<Opcode::Lhu> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) { return scalar_load<2, false>(m, c, i); }
};
template <>
struct Semantics<Opcode::Lw> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) { return scalar_load<4, false>(m, c, i); }
};
template <>
struct Semantics<Opcode::Sb> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) { return scalar_store<1>(m, c, i); }
};
template <>
struct Semantics<Opcode::Sh> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) { return scalar_store<2>(m, c, i); }
};
template <>
struct Semantics<Opcode::Sw> {
  static Outcome exec(Machine& m, Core& c, const Inst& i) { return scalar_store<4>(m, c, i); }
};

// ---- control flow -----------------------------------------------------------------------------

#define TC1_BRANCH(Id, cond)                                                         \
  template <>                                                                        \
  struct Semantics<Opcode::Id> {                                                     \
    static Outcome exec(Machine&, Core& c, const Inst& i) {                          \
      uint32_t a = c.x[i.b], b = c.x[i.c];                                           \
      if (cond)                                                                      \
        return {Outcome::Jump, uint32_t(int64_t(c.pc) + i.imm),                      \
                arch::cost::front_end(arch::CostClass::Branch, Space::L1, true), 0}; \
      return {};                                                                     \
    }                                                                                \
  };
TC1_BRANCH(Beq, a == b)
TC1_BRANCH(Bne, a != b)
TC1_BRANCH(Blt, s(a) < s(b))
TC1_BRANCH(Bge, s(a) >= s(b))
TC1_BRANCH(Bltu, a < b)
TC1_BRANCH(Bgeu, a >= b)
#undef TC1_BRANCH

template <>
struct Semantics<Opcode::Jal> {
  static Outcome exec(Machine&, Core& c, const Inst& i) {
    uint32_t target = uint32_t(int64_t(c.pc) + i.imm);
    set_x(c, i.a, c.pc + 1);
    return {Outcome::Jump, target, arch::cost::front_end(arch::CostClass::Branch, Space::L1, true),
            0};
  }
};
template <>
struct Semantics<Opcode::Jalr> {
  static Outcome exec(Machine&, Core& c, const Inst& i) {
    uint32_t target = c.x[i.b] + uint32_t(i.imm);
    set_x(c, i.a, c.pc + 1);
    return {Outcome::Jump, target, arch::cost::front_end(arch::CostClass::Branch, Space::L1, true),
            0};
  }
};

}  // namespace tilecore::sim
