// src/arch/isa.cc — the instruction table, formats, encoder, decoder and the
// one-instruction printer. Everything here is derived from isa.def.
#include "tilecore/arch/isa.h"

#include <unordered_map>

namespace tilecore::arch {

namespace {

using OK = OperandKind;
using F = Field;

constexpr uint8_t bits(std::initializer_list<Field> fs) {
  uint8_t m = 0;
  for (Field f : fs) m |= uint8_t(1u << unsigned(f));
  return m;
}
constexpr uint8_t kImm = 1u << unsigned(Field::Imm);

// clang-format off
constexpr std::array<FormatInfo, size_t(Format::kCount)> kFormats = {{
  {"None",   0, {}, 0, 0, ""},
  {"R",      0, {{{OK::XReg, F::A}, {OK::XReg, F::B}, {OK::XReg, F::C}}}, 3, bits({F::A, F::B, F::C}), "xd, xs1, xs2"},
  {"I",      0, {{{OK::XReg, F::A}, {OK::XReg, F::B}, {OK::Imm}}}, 3, uint8_t(bits({F::A, F::B}) | kImm), "xd, xs1, imm"},
  {"LI",     0, {{{OK::XReg, F::A}, {OK::Imm}}}, 2, uint8_t(bits({F::A}) | kImm), "xd, imm"},
  {"Load",   0, {{{OK::XReg, F::A}, {OK::Mem, F::B, F::E}}}, 2, uint8_t(bits({F::A, F::B, F::E}) | kImm), "xd, [space: xbase + imm]"},
  {"Store",  0, {{{OK::XReg, F::A}, {OK::Mem, F::B, F::E}}}, 2, uint8_t(bits({F::A, F::B, F::E}) | kImm), "xs, [space: xbase + imm]"},
  {"Branch", 0, {{{OK::XReg, F::B}, {OK::XReg, F::C}, {OK::Label}}}, 3, uint8_t(bits({F::B, F::C}) | kImm), "xs1, xs2, label"},
  {"Jal",    0, {{{OK::XReg, F::A}, {OK::Label}}}, 2, uint8_t(bits({F::A}) | kImm), "xd, label"},
  {"Jalr",   0, {{{OK::XReg, F::A}, {OK::XReg, F::B}, {OK::Imm}}}, 3, uint8_t(bits({F::A, F::B}) | kImm), "xd, xs1, imm"},
  {"Csr",    0, {{{OK::XReg, F::A}, {OK::Csr}}}, 2, uint8_t(bits({F::A}) | kImm), "xd, csr"},
  {"Wait",   0, {{{OK::Queue, F::A}, {OK::Engine, F::B}, {OK::Count, F::C}}}, 3, uint8_t(bits({F::A, F::B, F::C}) | kImm), "queue, engine, count"},
  {"VR",     1, {{{OK::VReg, F::A}, {OK::VReg, F::B}, {OK::VReg, F::C}, {OK::PredOpt, F::D}}}, 4, bits({F::A, F::B, F::C, F::D, F::E}), ".dt vd, va, vb [, pm]"},
  {"VSplat", 1, {{{OK::VReg, F::A}, {OK::XReg, F::B}, {OK::PredOpt, F::D}}}, 3, bits({F::A, F::B, F::D, F::E}), ".dt vd, xs [, pm]"},
  {"VLoad",  0, {{{OK::VReg, F::A}, {OK::Mem, F::B, F::C}}}, 2, uint8_t(bits({F::A, F::B, F::C}) | kImm), "vd, [space: xbase + imm]"},
  {"VStore", 1, {{{OK::VReg, F::A}, {OK::Mem, F::B, F::C}, {OK::PredOpt, F::D}}}, 3, uint8_t(bits({F::A, F::B, F::C, F::D, F::E}) | kImm), ".dt vs, [space: xbase + imm] [, pm]"},
  {"VCmp",   1, {{{OK::PReg, F::A}, {OK::VReg, F::B}, {OK::VReg, F::C}, {OK::PredOpt, F::D}}}, 4, bits({F::A, F::B, F::C, F::D, F::E}), ".dt pd, va, vb [, pm]"},
  {"VSel",   1, {{{OK::VReg, F::A}, {OK::VReg, F::B}, {OK::VReg, F::C}, {OK::PReg, F::D}}}, 4, bits({F::A, F::B, F::C, F::D, F::E}), ".dt vd, va, vb, ps"},
  {"VRed",   1, {{{OK::VReg, F::A}, {OK::VReg, F::B}, {OK::PredOpt, F::D}}}, 3, bits({F::A, F::B, F::D, F::E}), ".dt vd, va [, pm]"},
  {"VExt",   1, {{{OK::XReg, F::A}, {OK::VReg, F::B}, {OK::Lane}}}, 3, uint8_t(bits({F::A, F::B, F::E}) | kImm), ".dt xd, va, lane"},
  {"VCvt",   2, {{{OK::VReg, F::A}, {OK::VReg, F::B}}}, 2, bits({F::A, F::B, F::C, F::E}), ".dst.src vd, va"},
  {"PWhile", 1, {{{OK::PReg, F::A}, {OK::XReg, F::B}}}, 2, bits({F::A, F::B, F::E}), ".dt pd, xs"},
  {"PLogic", 0, {{{OK::PReg, F::A}, {OK::PReg, F::B}, {OK::PReg, F::C}}}, 3, bits({F::A, F::B, F::C}), "pd, pa, pb"},
  {"PNot",   0, {{{OK::PReg, F::A}, {OK::PReg, F::B}}}, 2, bits({F::A, F::B}), "pd, pa"},
  {"Dma",    0, {{{OK::SpaceAddr, F::A, F::D, 0}, {OK::SpaceAddr, F::B, F::D, 2}, {OK::Desc, F::C}}}, 3, uint8_t(bits({F::A, F::B, F::C, F::D}) | kImm), "dspace:xdst, sspace:xsrc, [xdesc + imm]"},
  {"Tile3",  1, {{{OK::XReg, F::A}, {OK::XReg, F::B}, {OK::XReg, F::C}, {OK::Desc, F::D}}}, 4, uint8_t(bits({F::A, F::B, F::C, F::D, F::E}) | kImm), ".dt xd, xa, xb, [xdesc + imm]"},
  {"Tile2",  1, {{{OK::XReg, F::A}, {OK::XReg, F::B}, {OK::Desc, F::D}}}, 3, uint8_t(bits({F::A, F::B, F::D, F::E}) | kImm), ".dt xd, xa, [xdesc + imm]"},
  {"TileCvt",2, {{{OK::XReg, F::A}, {OK::XReg, F::B}, {OK::Desc, F::D}}}, 3, uint8_t(bits({F::A, F::B, F::C, F::D, F::E}) | kImm), ".dst.src xd, xa, [xdesc + imm]"},
}};

constexpr std::array<InstrInfo, kNumOpcodes> kTable = {{
#define TC1_INST(Id, mn, fmt, unit, dts, cost, summary) \
  {Opcode::Id, mn, Format::fmt, Unit::unit, dts, CostClass::cost, summary},
#include "tilecore/arch/isa.def"
#undef TC1_INST
}};
// clang-format on

// Rationale: the table is the single source; check at compile time that it is
// indexed by opcode and that every dtype'd format has dtypes and vice versa.
constexpr bool table_is_consistent() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (size_t(kTable[i].op) != i) return false;
    bool wants_dt = kFormats[size_t(kTable[i].format)].num_dtypes > 0;
    if (wants_dt != (kTable[i].dtypes != kNoDType)) return false;
  }
  return true;
}
static_assert(table_is_consistent(),
              "isa.def: row order or dtype column disagrees with its format");
static_assert(kNumOpcodes <= 256, "opcode is 8 bits");

constexpr std::array<std::string_view, kNumSpaces> kSpaceNames = {"ddr", "l2", "l1"};
constexpr std::array<std::string_view, kNumEngines> kEngineNames = {"din", "dout", "mm", "vec"};
constexpr std::array<std::string_view, kNumCsrs> kCsrNames = {
    "coreid", "ncores", "cycle", "instret", "cnt.din", "cnt.dout", "cnt.mm", "cnt.vec"};

uint8_t get_field(const Inst& i, Field f) {
  switch (f) {
    case F::A:
      return i.a;
    case F::B:
      return i.b;
    case F::C:
      return i.c;
    case F::D:
      return i.d;
    case F::E:
      return i.e;
    case F::Imm:
      return 0;
  }
  return 0;
}

int lanes_of(DType t) { return 32 / dtype_size(t); }

std::string reg(char k, unsigned n) { return std::string(1, k) + std::to_string(n); }

std::string offset_text(int32_t imm) {
  if (imm == 0) return "";
  if (imm < 0) return " - " + std::to_string(-int64_t(imm));
  return " + " + std::to_string(imm);
}

}  // namespace

const FormatInfo& format_info(Format f) { return kFormats[size_t(f)]; }
std::span<const InstrInfo> instruction_table() { return kTable; }

std::optional<Opcode> find_opcode(std::string_view mnemonic) {
  static const std::unordered_map<std::string_view, Opcode> map = [] {
    std::unordered_map<std::string_view, Opcode> m;
    for (const auto& row : kTable) m.emplace(row.mnemonic, row.op);
    return m;
  }();
  auto it = map.find(mnemonic);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

bool is_tile_unit(Unit u) { return u != Unit::Scalar && u != Unit::Simd; }

std::string_view space_name(Space s) {
  return unsigned(s) < kNumSpaces ? kSpaceNames[size_t(s)] : "?";
}
std::optional<Space> parse_space(std::string_view s) {
  for (size_t i = 0; i < kSpaceNames.size(); ++i)
    if (kSpaceNames[i] == s) return Space(i);
  return std::nullopt;
}
std::string_view engine_name(Engine e) {
  return unsigned(e) < kNumEngines ? kEngineNames[size_t(e)] : "?";
}
std::optional<Engine> parse_engine(std::string_view s) {
  for (size_t i = 0; i < kEngineNames.size(); ++i)
    if (kEngineNames[i] == s) return Engine(i);
  return std::nullopt;
}
std::optional<Engine> unit_engine(Unit u) {
  switch (u) {
    case Unit::DmaIn:
      return Engine::DmaIn;
    case Unit::DmaOut:
      return Engine::DmaOut;
    case Unit::Matrix:
      return Engine::Matrix;
    case Unit::Vector:
      return Engine::Vector;
    default:
      return std::nullopt;
  }
}
std::string_view csr_name(Csr c) { return unsigned(c) < kNumCsrs ? kCsrNames[size_t(c)] : "?"; }
std::optional<Csr> parse_csr(std::string_view s) {
  for (size_t i = 0; i < kCsrNames.size(); ++i)
    if (kCsrNames[i] == s) return Csr(i);
  return std::nullopt;
}

uint64_t encode(const Inst& i) {
  return uint64_t(uint8_t(i.op)) | uint64_t(i.a & 31) << 8 | uint64_t(i.b & 31) << 13 |
         uint64_t(i.c & 31) << 18 | uint64_t(i.d & 31) << 23 | uint64_t(i.e & 15) << 28 |
         uint64_t(uint32_t(i.imm)) << 32;
}

std::optional<Inst> decode(uint64_t w, std::string* why) {
  auto fail = [&](std::string msg) -> std::optional<Inst> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  unsigned opc = unsigned(w & 0xFF);
  if (opc >= unsigned(kNumOpcodes)) return fail("unknown opcode " + std::to_string(opc));
  Inst i;
  i.op = Opcode(opc);
  i.a = uint8_t(w >> 8 & 31);
  i.b = uint8_t(w >> 13 & 31);
  i.c = uint8_t(w >> 18 & 31);
  i.d = uint8_t(w >> 23 & 31);
  i.e = uint8_t(w >> 28 & 15);
  i.imm = int32_t(uint32_t(w >> 32));
  const InstrInfo& row = kTable[opc];
  const FormatInfo& fmt = kFormats[size_t(row.format)];
  const char* fnames = "abcde";
  for (int f = 0; f < 5; ++f)
    if (!(fmt.used_fields >> f & 1) && get_field(i, Field(f)) != 0)
      return fail(std::string(row.mnemonic) + ": reserved field '" + fnames[f] + "' is not zero");
  if (!(fmt.used_fields & kImm) && i.imm != 0)
    return fail(std::string(row.mnemonic) + ": reserved immediate is not zero");
  if (fmt.num_dtypes >= 1 && !(is_valid_dtype(i.e) && (row.dtypes >> i.e & 1)))
    return fail(std::string(row.mnemonic) + ": dtype code " + std::to_string(i.e) + " not allowed");
  if (fmt.num_dtypes == 2 && !is_valid_dtype(i.c))
    return fail(std::string(row.mnemonic) + ": source dtype code " + std::to_string(i.c) +
                " is invalid");
  if (row.op == Opcode::Trequant && i.c != uint8_t(DType::I32))
    return fail("trequant: source dtype must be i32");
  if (row.op == Opcode::Tquant && i.c != uint8_t(DType::F32))
    return fail("tquant: source dtype must be f32");
  for (int k = 0; k < fmt.num_operands; ++k) {
    const OperandSpec& o = fmt.operands[size_t(k)];
    uint8_t v0 = get_field(i, o.f0);
    switch (o.kind) {
      case OK::PReg:
      case OK::PredOpt:
        if (v0 >= 8)
          return fail(std::string(row.mnemonic) + ": predicate register p" + std::to_string(v0) +
                      " does not exist");
        break;
      case OK::Mem:
        if (get_field(i, o.f1) >= kNumSpaces)
          return fail(std::string(row.mnemonic) + ": bad memory space code");
        break;
      case OK::SpaceAddr:
        if ((get_field(i, o.f1) >> o.shift & 3) >= kNumSpaces)
          return fail(std::string(row.mnemonic) + ": bad memory space code");
        break;
      case OK::Queue:
        if (v0 > kNumEngines) return fail("wait: bad queue code " + std::to_string(v0));
        break;
      case OK::Engine:
        if (v0 >= kNumEngines) return fail("wait: bad engine code " + std::to_string(v0));
        break;
      case OK::Csr:
        if (uint32_t(i.imm) >= uint32_t(kNumCsrs))
          return fail("csrr: unknown CSR " + std::to_string(i.imm));
        break;
      case OK::Lane:
        if (i.imm < 0 || i.imm >= lanes_of(i.dtype()))
          return fail(std::string(row.mnemonic) + ": lane " + std::to_string(i.imm) +
                      " out of range");
        break;
      default:
        break;
    }
  }
  if (row.format == Format::Dma && (i.d >> 4) != 0)
    return fail("dma: reserved space bits are not zero");
  return i;
}

std::string format_instruction(const Inst& i, int64_t pc, std::string (*label_of)(int64_t, void*),
                               void* ctx) {
  const InstrInfo& row = info(i.op);
  const FormatInfo& fmt = format_info(row.format);
  std::string s(row.mnemonic);
  if (fmt.num_dtypes >= 1) s += "." + std::string(dtype_name(i.dtype()));
  if (fmt.num_dtypes == 2) s += "." + std::string(dtype_name(i.src_dtype()));
  bool first = true;
  for (int k = 0; k < fmt.num_operands; ++k) {
    const OperandSpec& o = fmt.operands[size_t(k)];
    uint8_t v0 = get_field(i, o.f0);
    if (o.kind == OK::PredOpt && v0 == 0) continue;
    s += first ? " " : ", ";
    first = false;
    switch (o.kind) {
      case OK::XReg:
        s += reg('x', v0);
        break;
      case OK::VReg:
        s += reg('v', v0);
        break;
      case OK::PReg:
      case OK::PredOpt:
        s += reg('p', v0);
        break;
      case OK::Imm:
      case OK::Lane:
        s += std::to_string(i.imm);
        break;
      case OK::Label: {
        int64_t target = pc + i.imm;
        s += label_of ? label_of(target, ctx) : "@" + std::to_string(target);
        break;
      }
      case OK::Csr:
        s += csr_name(Csr(i.imm));
        break;
      case OK::Mem:
        s += "[" + std::string(space_name(Space(get_field(i, o.f1)))) + ": " + reg('x', v0) +
             offset_text(i.imm) + "]";
        break;
      case OK::Desc:
        s += "[" + reg('x', v0) + offset_text(i.imm) + "]";
        break;
      case OK::SpaceAddr:
        s += std::string(space_name(Space(get_field(i, o.f1) >> o.shift & 3))) + ":" + reg('x', v0);
        break;
      case OK::Queue:
        s += v0 == 0 ? std::string("sc") : std::string(engine_name(Engine(v0 - 1)));
        break;
      case OK::Engine:
        s += engine_name(Engine(v0));
        break;
      case OK::Count:
        if (v0 == 0)
          s += std::to_string(i.imm);
        else
          s += reg('x', v0) + offset_text(i.imm);
        break;
    }
  }
  return s;
}

}  // namespace tilecore::arch
