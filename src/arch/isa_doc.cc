// src/arch/isa_doc.cc — generates the instruction reference of docs/tc1.md from the table.
#include "tilecore/arch/isa_doc.h"

#include <cstdio>

namespace tilecore::arch {

namespace {

const char* unit_text(Unit u) {
  switch (u) {
    case Unit::Scalar:
      return "front end (scalar)";
    case Unit::Simd:
      return "front end (SIMD)";
    case Unit::DmaIn:
      return "DMA-in queue";
    case Unit::DmaOut:
      return "DMA-out queue";
    case Unit::Matrix:
      return "matrix queue";
    case Unit::Vector:
      return "vector queue";
  }
  return "?";
}

std::string dtypes_text(DTypeMask m) {
  if (m == kNoDType) return "—";
  std::string s;
  for (int t = 0; t < kNumDTypes; ++t)
    if (m >> t & 1) s += (s.empty() ? "" : " ") + std::string(dtype_name(DType(t)));
  return s;
}

std::string fields_text(const FormatInfo& f) {
  static const char* names[] = {"a", "b", "c", "d", "e", "imm"};
  std::string s;
  for (int k = 0; k < f.num_operands; ++k) {
    const OperandSpec& o = f.operands[size_t(k)];
    std::string what;
    switch (o.kind) {
      case OperandKind::XReg:
        what = "x reg";
        break;
      case OperandKind::VReg:
        what = "v reg";
        break;
      case OperandKind::PReg:
        what = "p reg";
        break;
      case OperandKind::PredOpt:
        what = "mask p reg (0 = all)";
        break;
      case OperandKind::Imm:
        what = "imm32";
        break;
      case OperandKind::Lane:
        what = "lane";
        break;
      case OperandKind::Label:
        what = "target - pc";
        break;
      case OperandKind::Csr:
        what = "CSR number";
        break;
      case OperandKind::Mem:
        what = "base x reg, space";
        break;
      case OperandKind::Desc:
        what = "descriptor base x reg, offset";
        break;
      case OperandKind::SpaceAddr:
        what = "address x reg, space";
        break;
      case OperandKind::Queue:
        what = "queue (0 sc, 1 din, 2 dout, 3 mm, 4 vec)";
        break;
      case OperandKind::Engine:
        what = "engine (0 din, 1 dout, 2 mm, 3 vec)";
        break;
      case OperandKind::Count:
        what = "count x reg (+ imm)";
        break;
    }
    std::string where = names[unsigned(o.f0)];
    if (o.kind == OperandKind::Mem) where += ", " + std::string(names[unsigned(o.f1)]) + ", imm";
    if (o.kind == OperandKind::SpaceAddr)
      where += ", " + std::string(names[unsigned(o.f1)]) + "[" + std::to_string(o.shift + 1) + ":" +
               std::to_string(o.shift) + "]";
    if (o.kind == OperandKind::Desc || o.kind == OperandKind::Count) where += ", imm";
    if (o.kind == OperandKind::Imm || o.kind == OperandKind::Lane || o.kind == OperandKind::Label ||
        o.kind == OperandKind::Csr)
      where = "imm";
    s += (s.empty() ? "" : "; ") + where + ": " + what;
  }
  if (f.num_dtypes >= 1) s += (s.empty() ? "" : "; ") + std::string("e: dtype");
  if (f.num_dtypes == 2) s += "; c: source dtype";
  return s.empty() ? "—" : s;
}

}  // namespace

std::string_view cost_text(CostClass c) {
  switch (c) {
    case CostClass::Scalar:
      return "1 cycle";
    case CostClass::ScalarMem:
      return "1 cycle from l1, 20 from l2, 200 from ddr";
    case CostClass::Branch:
      return "1 cycle; 2 when taken";
    case CostClass::Barrier:
      return "1 cycle + the wait; released 8 cycles after the last active core arrives";
    case CostClass::Wait:
      return "sc: 1 cycle + stall until the count is reached; a queue: 1 front-end cycle, the "
             "queue stalls";
    case CostClass::Simd:
      return "1 cycle";
    case CostClass::SimdMem:
      return "1 cycle from l1, 20 from l2, 200 from ddr";
    case CostClass::Dma:
      return "front end 1 cycle; engine beats + latency, beats = rows x ceil(row bytes / 64) "
             "(contiguous) or one per "
             "element (strided innermost), latency = 200 (ddr) / 20 (l2) / 2 (l1) of the farther "
             "side, plus waiting for "
             "shared ddr (64 B/cycle) / l2 (256 B/cycle) bandwidth";
    case CostClass::Matrix:
      return "front end 1 cycle; engine 16 + ceil(M/16) x ceil(N/bn) x ceil(K/bk) x conflict (+ "
             "ceil(M x N / 64) with "
             "an epilogue, + ceil(4 N / 64) with per-channel scales, + ceil(M x N x residual "
             "element bytes / 64) with a "
             "residual); (bn, bk) = (32, 4) i8, (32, 2) f16/bf16, (16, 1) f32; conflict = 2 if A "
             "and B start in the "
             "same L1 bank";
    case CostClass::Vector:
      return "front end 1 cycle; engine 8 + ceil(elements / (256 / widest element bytes)) x "
             "conflict; conflict = 2 if "
             "the two sources start in the same L1 bank";
    case CostClass::VectorSlow:
      return "front end 1 cycle; engine 8 + 4 x ceil(elements / (256 / element bytes)) x conflict";
  }
  return "?";
}

std::string isa_reference_markdown() {
  std::string s;
  s += "### Formats\n\n| format | syntax | fields |\n|---|---|---|\n";
  for (int f = 0; f < int(Format::kCount); ++f) {
    const FormatInfo& fi = format_info(Format(f));
    s += "| " + std::string(fi.name) + " | `" +
         (fi.syntax.empty() ? std::string("(none)") : std::string(fi.syntax)) + "` | " +
         fields_text(fi) + " |\n";
  }
  s += "\nFields a format does not list must be zero; a word with a non-zero reserved field is "
       "illegal.\n";
  const char* group = "";
  for (const InstrInfo& row : instruction_table()) {
    const char* g = row.unit == Unit::Scalar ? "Scalar instructions"
                    : row.unit == Unit::Simd ? "SIMD and predicate instructions"
                    : (row.unit == Unit::DmaIn || row.unit == Unit::DmaOut) ? "DMA commands"
                    : row.unit == Unit::Matrix ? "Matrix-engine commands"
                                               : "Vector-engine commands";
    if (std::string(g) != group) {
      s += "\n### " + std::string(g) + "\n";
      group = g;
    }
    const FormatInfo& fi = format_info(row.format);
    char op[16];
    std::snprintf(op, sizeof op, "0x%02x", unsigned(row.op));
    std::string syntax =
        std::string(row.mnemonic) +
        (fi.syntax.empty() ? "" : (fi.syntax[0] == '.' ? "" : " ") + std::string(fi.syntax));
    s += "\n#### `" + std::string(row.mnemonic) + "`\n\n";
    s += std::string(row.summary) + ".\n\n";
    s += "- syntax: `" + syntax + "`\n";
    s += "- encoding: opcode " + std::string(op) + ", format " + std::string(fi.name) + "\n";
    s += "- dtypes: " + dtypes_text(row.dtypes) + "\n";
    s += "- unit: " + std::string(unit_text(row.unit)) + "\n";
    s += "- cost: " + std::string(cost_text(row.cost)) + "\n";
  }
  return s;
}

}  // namespace tilecore::arch
