// include/tilecore/codegen/npu/builder.h — typed TC1 instructions for the npu code generator.
//
// The instruction builder is the only place the npu code generator turns into
// machine words. An instruction is an arch::Opcode (a row of isa.def) plus typed
// operands; Emit checks the operands against the row's format (kind, count,
// accepted dtypes) and fails as an InternalError on a mismatch, so a renamed or
// re-formatted instruction is a compile error (opcode) or the first test that
// emits it (operands), never "generated assembly does not assemble".
//
// The builder also owns
//   - labels and their fixups (branch offsets resolved in Finish),
//   - the L1 data segment above the planned buffers (words, aligned blocks and
//     descriptors; identical shared descriptors are emitted once),
//   - the line table (the IR location of each instruction).
// Text assembly is produced from the typed instructions by the disassembler's
// formatter (arch::format_instruction), for get_source() only; it assembles back
// to the same program.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tilecore/arch/isa.h"
#include "tilecore/arch/program.h"

namespace tilecore::codegen::npu {

/// A branch target; made by InstrBuilder::NewLabel, placed by Bind.
struct Label {
  int id = -1;
};

/// One assembly operand, of one of the kinds of arch::OperandKind.
struct Operand {
  arch::OperandKind kind = arch::OperandKind::Imm;
  int reg = 0;      // XReg/VReg/PReg/Mem/Desc/SpaceAddr/Count register; Queue/Engine/Csr code
  int64_t imm = 0;  // Imm/Lane value, Mem/Desc/Count offset
  arch::Space space = arch::Space::DDR;
  int label = -1;

  static Operand X(int r) { return {arch::OperandKind::XReg, r}; }
  static Operand V(int r) { return {arch::OperandKind::VReg, r}; }
  static Operand P(int r) { return {arch::OperandKind::PReg, r}; }
  static Operand Imm(int64_t v) { return {arch::OperandKind::Imm, 0, v}; }
  static Operand To(Label l) { return {arch::OperandKind::Label, 0, 0, arch::Space::DDR, l.id}; }
  static Operand Csr(arch::Csr c) { return {arch::OperandKind::Csr, int(c)}; }
  /// [space: x`base` + imm]
  static Operand Mem(arch::Space s, int base, int64_t imm) {
    return {arch::OperandKind::Mem, base, imm, s};
  }
  /// [x`base` + imm], a descriptor in local L1
  static Operand Desc(int base, int64_t imm) { return {arch::OperandKind::Desc, base, imm}; }
  /// space:x`r`, a DMA address
  static Operand At(arch::Space s, int r) { return {arch::OperandKind::SpaceAddr, r, 0, s}; }
  /// The front end's queue ("sc") or an engine's queue.
  static Operand FrontEnd() { return {arch::OperandKind::Queue, 0}; }
  static Operand Queue(arch::Engine e) { return {arch::OperandKind::Queue, int(e) + 1}; }
  static Operand Engine(arch::Engine e) { return {arch::OperandKind::Engine, int(e)}; }
  /// x`r` + imm, a completion count
  static Operand Count(int r, int64_t imm = 0) { return {arch::OperandKind::Count, r, imm}; }
};

class InstrBuilder {
 public:
  /// `data_base`: the first L1 byte of the data segment (above the planned buffers).
  explicit InstrBuilder(int64_t data_base = 0) : data_base_(data_base), data_top_(data_base) {}

  // ---- instructions -------------------------------------------------------------------------
  /// Appends `op` with `ops` in the order of its format's operands; `dt` / `src`
  /// are the dtype suffixes of formats that take one or two.
  void Emit(arch::Opcode op, std::initializer_list<Operand> ops, arch::DType dt = arch::DType::I8,
            arch::DType src = arch::DType::I8);
  /// A comment before the next instruction (source only).
  void Comment(std::string text) { comments_[int64_t(insts_.size())].push_back(std::move(text)); }
  /// The IR location ("file:line", or "") of the instructions emitted from now on.
  void SetLocation(std::string loc) { loc_ = std::move(loc); }
  const std::string& location() const { return loc_; }
  int64_t size() const { return int64_t(insts_.size()); }
  const std::vector<arch::Inst>& instructions() const { return insts_; }

  Label NewLabel(std::string stem);
  /// Places `l` at the next instruction.
  void Bind(Label l);
  /// The pc of the last label placed (-1 before any): code from there on may be reached
  /// by a jump.
  int64_t last_bind() const { return last_bind_; }

  // ---- the L1 data segment ------------------------------------------------------------------
  /// `n` zeroed 32-bit words; returns the address of the first.
  int64_t Words(int64_t n);
  /// `bytes` zeroed bytes at an `align`-aligned address.
  int64_t Block(int64_t bytes, int64_t align);
  /// Initialised bytes (descriptors, tables). A `shared` block with the same bytes
  /// as an earlier shared one is not emitted again. `note` goes into the source.
  int64_t Data(std::span<const uint8_t> bytes, bool shared, std::string note = "",
               int64_t align = 4);
  int64_t data_base() const { return data_base_; }
  int64_t data_top() const { return data_top_; }

  // ---- results ------------------------------------------------------------------------------
  /// Resolves labels and returns the program: one text section run by cores
  /// 0..cores-1 and the data segment in the L1 of each of them.
  arch::Program Finish(int cores);
  /// Assembly text of the program Finish returned, with labels, comments and the
  /// data segment; assembles back to the same program.
  std::string Source(const std::string& header) const;
  /// IR location of each instruction (index = pc).
  const std::vector<std::string>& line_table() const { return locs_; }

 private:
  struct LabelInfo {
    std::string name;
    int64_t pc = -1;
  };
  struct DataNote {
    int64_t addr;
    std::string text;
  };
  std::vector<arch::Inst> insts_;
  std::vector<std::string> locs_;
  std::vector<std::pair<int64_t, int>> fixups_;  // (pc, label id)
  std::vector<LabelInfo> labels_;
  std::map<int64_t, std::vector<std::string>> comments_;
  std::string loc_;
  int64_t data_base_, data_top_;
  std::vector<uint8_t> data_;
  std::vector<DataNote> notes_;
  std::map<std::string, int64_t> shared_;  // key: the bytes
  int cores_ = 1;
  int64_t last_bind_ = -1;
};

}  // namespace tilecore::codegen::npu
