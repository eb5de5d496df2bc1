// include/tilecore/arch/isa.h — the TC1 instruction set, derived from isa.def.
//
// An instruction is one 64-bit little-endian word:
//
//   63            32 31  28 27  23 22  18 17  13 12   8 7      0
//  +----------------+------+------+------+------+------+--------+
//  |      imm       |  e   |  d   |  c   |  b   |  a   | opcode |
//  +----------------+------+------+------+------+------+--------+
//
// Each Format says which fields carry which operands (see kFormats); fields a
// format does not use must be zero, so decode(encode(i)) == i and every word has
// at most one spelling (what makes assemble -> disassemble -> assemble stable).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tilecore/arch/dtype.h"

namespace tilecore::arch {

enum class Opcode : uint8_t {
#define TC1_INST(Id, mn, fmt, unit, dts, cost, summary) Id,
#include "tilecore/arch/isa.def"
#undef TC1_INST
  kCount
};
inline constexpr int kNumOpcodes = int(Opcode::kCount);

/// Where an instruction executes. Tile units are the four per-core queues.
enum class Unit : uint8_t { Scalar, Simd, DmaIn, DmaOut, Matrix, Vector };

/// Cost class: selects the formula in cost.h.
enum class CostClass : uint8_t {
  Scalar,
  ScalarMem,
  Branch,
  Barrier,
  Wait,
  Simd,
  SimdMem,
  Dma,
  Matrix,
  Vector,
  VectorSlow
};

enum class Format : uint8_t {
  None,
  R,
  I,
  LI,
  Load,
  Store,
  Branch,
  Jal,
  Jalr,
  Csr,
  Wait,
  VR,
  VSplat,
  VLoad,
  VStore,
  VCmp,
  VSel,
  VRed,
  VExt,
  VCvt,
  PWhile,
  PLogic,
  PNot,
  Dma,
  Tile3,
  Tile2,
  TileCvt,
  kCount
};

/// Instruction word fields.
enum class Field : uint8_t { A, B, C, D, E, Imm };

/// What an assembly operand looks like and where it goes.
enum class OperandKind : uint8_t {
  XReg,       // xN                         -> f0
  VReg,       // vN                         -> f0
  PReg,       // pN                         -> f0
  PredOpt,    // optional trailing pN       -> f0 (omitted means p0, all lanes)
  Imm,        // signed 32-bit expression   -> imm
  Lane,       // lane index expression      -> imm
  Label,      // branch target              -> imm (relative to this pc)
  Csr,        // CSR name                   -> imm
  Mem,        // [space: xB + imm]          -> f0 = base, f1 = space
  Desc,       // [xB + imm] (local L1)      -> f0 = base, imm
  SpaceAddr,  // space:xN                   -> f0 = reg, f1 = space (bits at `shift`)
  Queue,      // sc | din | dout | mm | vec -> f0
  Engine,     // din | dout | mm | vec      -> f0
  Count,      // xN | imm | xN+imm          -> f0 = reg, imm
};

struct OperandSpec {
  OperandKind kind;
  Field f0 = Field::A;
  Field f1 = Field::A;
  uint8_t shift = 0;
};

struct FormatInfo {
  std::string_view name;
  int num_dtypes;  // dtype suffixes: 0, 1 (field e) or 2 (.dst in e, .src in c)
  std::array<OperandSpec, 4> operands;
  int num_operands;
  uint8_t used_fields;      // bit per Field A..E (imm is always allowed)
  std::string_view syntax;  // for docs
};

const FormatInfo& format_info(Format f);

struct InstrInfo {
  Opcode op;
  std::string_view mnemonic;
  Format format;
  Unit unit;
  DTypeMask dtypes;
  CostClass cost;
  std::string_view summary;
};

/// The table, indexed by opcode.
std::span<const InstrInfo> instruction_table();
inline const InstrInfo& info(Opcode op) { return instruction_table()[size_t(op)]; }
std::optional<Opcode> find_opcode(std::string_view mnemonic);

bool is_tile_unit(Unit u);

/// Memory spaces. The value is the 2-bit space field of the encoding.
enum class Space : uint8_t { DDR = 0, L2 = 1, L1 = 2 };
inline constexpr int kNumSpaces = 3;
std::string_view space_name(Space s);
std::optional<Space> parse_space(std::string_view s);

/// The four tile engines of a core; value = engine index in counters and the
/// `wait` encoding minus one (0 in the queue field names the front end, "sc").
enum class Engine : uint8_t { DmaIn = 0, DmaOut = 1, Matrix = 2, Vector = 3 };
inline constexpr int kNumEngines = 4;
std::string_view engine_name(Engine e);  // din dout mm vec
std::optional<Engine> parse_engine(std::string_view s);
std::optional<Engine> unit_engine(Unit u);

/// Control and status registers (csrr).
enum class Csr : uint8_t { CoreId, NCores, Cycle, Instret, CntDin, CntDout, CntMm, CntVec };
inline constexpr int kNumCsrs = 8;
std::string_view csr_name(Csr c);
std::optional<Csr> parse_csr(std::string_view s);

/// A decoded instruction: the opcode and raw fields.
struct Inst {
  Opcode op = Opcode::Nop;
  uint8_t a = 0, b = 0, c = 0, d = 0, e = 0;
  int32_t imm = 0;
  bool operator==(const Inst&) const = default;

  DType dtype() const { return DType(e); }
  DType src_dtype() const { return DType(c); }
};

uint64_t encode(const Inst& inst);

/// Decodes one word. On failure returns nullopt and, if `why` is given, the
/// reason (unknown opcode, reserved field set, bad dtype/space/register...).
std::optional<Inst> decode(uint64_t word, std::string* why = nullptr);

/// Renders one instruction as assembly. `pc` resolves branch targets; if
/// `label_of` is given it names the target, else the target prints as `@N`.
std::string format_instruction(const Inst& inst, int64_t pc = 0,
                               std::string (*label_of)(int64_t target, void* ctx) = nullptr,
                               void* ctx = nullptr);

}  // namespace tilecore::arch
