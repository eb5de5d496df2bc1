// src/codegen/npu/builder.cc — typed TC1 instructions, labels, data segment (see
// codegen/npu/builder.h).
#if TILECORE_ENABLE_NPU
#include "tilecore/codegen/npu/builder.h"

#include <cstring>
#include <sstream>

#include "tilecore/arch/params.h"
#include "tilecore/ffi/error.h"

namespace tilecore::codegen::npu {
namespace {

using arch::OperandKind;

void SetField(arch::Inst* i, arch::Field f, unsigned v) {
  switch (f) {
    case arch::Field::A:
      i->a = uint8_t(v);
      break;
    case arch::Field::B:
      i->b = uint8_t(v);
      break;
    case arch::Field::C:
      i->c = uint8_t(v);
      break;
    case arch::Field::D:
      i->d = uint8_t(v);
      break;
    case arch::Field::E:
      i->e = uint8_t(v);
      break;
    case arch::Field::Imm:
      i->imm = int32_t(v);
      break;
  }
}
unsigned GetField(const arch::Inst& i, arch::Field f) {
  switch (f) {
    case arch::Field::A:
      return i.a;
    case arch::Field::B:
      return i.b;
    case arch::Field::C:
      return i.c;
    case arch::Field::D:
      return i.d;
    case arch::Field::E:
      return i.e;
    case arch::Field::Imm:
      return unsigned(i.imm);
  }
  return 0;
}

bool Accepts(OperandKind spec, OperandKind given) {
  switch (spec) {
    case OperandKind::PredOpt:
      return given == OperandKind::PReg;
    case OperandKind::Lane:
      return given == OperandKind::Imm;
    default:
      return spec == given;
  }
}

int RegLimit(OperandKind k) {
  switch (k) {
    case OperandKind::VReg:
      return arch::tc1::kNumVRegs;
    case OperandKind::PReg:
      return arch::tc1::kNumPRegs;
    default:
      return arch::tc1::kNumXRegs;
  }
}

}  // namespace

void InstrBuilder::Emit(arch::Opcode op, std::initializer_list<Operand> ops, arch::DType dt,
                        arch::DType src) {
  const arch::InstrInfo& row = arch::info(op);
  const arch::FormatInfo& fmt = arch::format_info(row.format);
  auto bug = [&](const std::string& why) {
    TILECORE_THROW(InternalError) << "npu codegen: `" << row.mnemonic << "` (" << fmt.syntax
                                  << "): " << why;
  };
  arch::Inst inst;
  inst.op = op;
  if (fmt.num_dtypes >= 1) {
    if (!(row.dtypes >> unsigned(dt) & 1))
      bug("dtype " + std::string(arch::dtype_name(dt)) + " not accepted");
    inst.e = uint8_t(dt);
  }
  if (fmt.num_dtypes == 2) inst.c = uint8_t(src);
  int required = 0;
  for (int k = 0; k < fmt.num_operands; ++k)
    required += fmt.operands[size_t(k)].kind != OperandKind::PredOpt;
  if (int(ops.size()) < required || int(ops.size()) > fmt.num_operands) {
    bug(std::to_string(ops.size()) + " operands given");
  }
  int k = 0;
  for (const Operand& o : ops) {
    const arch::OperandSpec& spec = fmt.operands[size_t(k++)];
    if (!Accepts(spec.kind, o.kind)) bug("operand " + std::to_string(k) + " has the wrong kind");
    switch (o.kind) {
      case OperandKind::XReg:
      case OperandKind::VReg:
      case OperandKind::PReg:
        if (o.reg < 0 || o.reg >= RegLimit(o.kind))
          bug("register " + std::to_string(o.reg) + " out of range");
        SetField(&inst, spec.f0, unsigned(o.reg));
        break;
      case OperandKind::Imm:
        if (o.imm < INT32_MIN || o.imm > int64_t(UINT32_MAX))
          bug("immediate " + std::to_string(o.imm) + " beyond 32 bits");
        inst.imm = int32_t(uint32_t(o.imm));
        break;
      case OperandKind::Label:
        if (o.label < 0 || size_t(o.label) >= labels_.size()) bug("unknown label");
        fixups_.emplace_back(int64_t(insts_.size()), o.label);
        break;
      case OperandKind::Csr:
        inst.imm = o.reg;
        break;
      case OperandKind::Mem:
        SetField(&inst, spec.f1, unsigned(o.space));
        [[fallthrough]];
      case OperandKind::Desc:
      case OperandKind::Count:
        if (o.reg < 0 || o.reg >= arch::tc1::kNumXRegs) bug("base register out of range");
        if (o.imm < INT32_MIN || o.imm > INT32_MAX)
          bug("offset " + std::to_string(o.imm) + " beyond 32 bits");
        SetField(&inst, spec.f0, unsigned(o.reg));
        inst.imm = int32_t(o.imm);
        break;
      case OperandKind::SpaceAddr:
        SetField(&inst, spec.f1, GetField(inst, spec.f1) | unsigned(o.space) << spec.shift);
        SetField(&inst, spec.f0, unsigned(o.reg));
        break;
      case OperandKind::Queue:
      case OperandKind::Engine:
        SetField(&inst, spec.f0, unsigned(o.reg));
        break;
      default:
        bug("operand kind");
    }
  }
  insts_.push_back(inst);
  locs_.push_back(loc_);
}

Label InstrBuilder::NewLabel(std::string stem) {
  labels_.push_back(LabelInfo{"Lk_" + stem + "_" + std::to_string(labels_.size()), -1});
  return Label{int(labels_.size()) - 1};
}

void InstrBuilder::Bind(Label l) {
  labels_[size_t(l.id)].pc = int64_t(insts_.size());
  last_bind_ = labels_[size_t(l.id)].pc;
}

int64_t InstrBuilder::Words(int64_t n) { return Block(4 * n, 4); }

int64_t InstrBuilder::Block(int64_t bytes, int64_t align) {
  int64_t pad = (align - data_top_ % align) % align;
  int64_t a = data_top_ + pad;
  data_.resize(size_t(a + bytes - data_base_), 0);
  data_top_ = a + bytes;
  return a;
}

int64_t InstrBuilder::Data(std::span<const uint8_t> bytes, bool shared, std::string note,
                           int64_t align) {
  std::string key(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (shared) {
    auto it = shared_.find(key);
    if (it != shared_.end()) return it->second;
  }
  int64_t a = Block(int64_t(bytes.size()), align);
  std::memcpy(data_.data() + (a - data_base_), bytes.data(), bytes.size());
  if (!note.empty()) notes_.push_back(DataNote{a, std::move(note)});
  if (shared) shared_[std::move(key)] = a;
  return a;
}

arch::Program InstrBuilder::Finish(int cores) {
  cores_ = cores;
  for (const auto& [pc, id] : fixups_) {
    int64_t target = labels_[size_t(id)].pc;
    if (target < 0)
      TILECORE_THROW(InternalError)
          << "npu codegen: label " << labels_[size_t(id)].name << " never placed";
    insts_[size_t(pc)].imm = int32_t(target - pc);
  }
  arch::Program p;
  uint32_t mask = cores >= 32 ? ~0u : (1u << cores) - 1;
  arch::TextSection sec;
  sec.core_mask = mask;
  sec.words.reserve(insts_.size());
  for (const arch::Inst& i : insts_) sec.words.push_back(arch::encode(i));
  p.text.push_back(std::move(sec));
  if (!data_.empty())
    p.data.push_back(arch::DataSegment{mask, arch::Space::L1, uint64_t(data_base_), data_});
  return p;
}

std::string InstrBuilder::Source(const std::string& header) const {
  std::ostringstream os;
  os << "# " << header << "\n";
  os << (cores_ > 1 ? ".core 0-" + std::to_string(cores_ - 1) : std::string(".core 0")) << "\n";
  if (!data_.empty()) {
    os << ".data l1, " << data_base_ << "\n";
    size_t note = 0;
    size_t i = 0;
    while (i < data_.size()) {
      int64_t addr = data_base_ + int64_t(i);
      while (note < notes_.size() && notes_[note].addr <= addr)
        os << "        # " << notes_[note++].text << "\n";
      int64_t next_note =
          note < notes_.size() ? notes_[note].addr - data_base_ : int64_t(data_.size());
      size_t end = std::min(data_.size(), size_t(next_note));
      size_t z = i;
      while (z < end && data_[z] == 0) ++z;
      if (z > i) {
        os << "        .zero " << (z - i) << "\n";
        i = z;
        continue;
      }
      os << "        .byte ";
      size_t stop = std::min(end, i + 16);
      for (size_t j = i; j < stop; ++j) os << (j > i ? ", " : "") << int(data_[j]);
      os << "\n";
      i = stop;
    }
    os << ".text\n";
  }
  std::map<int64_t, std::vector<const LabelInfo*>> at;
  for (const LabelInfo& l : labels_) at[l.pc].push_back(&l);
  struct Ctx {
    const std::map<int64_t, std::vector<const LabelInfo*>>* at;
  } ctx{&at};
  auto label_of = [](int64_t target, void* c) -> std::string {
    const auto& m = *static_cast<Ctx*>(c)->at;
    auto it = m.find(target);
    return it == m.end() ? "@" + std::to_string(target) : it->second.front()->name;
  };
  for (size_t pc = 0; pc <= insts_.size(); ++pc) {
    if (auto it = comments_.find(int64_t(pc)); it != comments_.end()) {
      for (const std::string& c : it->second) os << "        # " << c << "\n";
    }
    if (auto it = at.find(int64_t(pc)); it != at.end()) {
      for (const LabelInfo* l : it->second) os << l->name << ":\n";
    }
    if (pc == insts_.size()) break;
    os << "        " << arch::format_instruction(insts_[pc], int64_t(pc), label_of, &ctx) << "\n";
  }
  return os.str();
}

}  // namespace tilecore::codegen::npu
#endif  // TILECORE_ENABLE_NPU
