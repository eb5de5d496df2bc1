// src/arch/disassembler.cc — Program -> assembly that assembles back to it.
#include "tilecore/arch/disassembler.h"

#include <cstdio>
#include <set>

namespace tilecore::arch {

namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string mask_text(uint32_t mask) {
  if (mask == kAllCoresMask) return "all";
  std::string s;
  for (int c = 0; c < 16; ++c)
    if (mask >> c & 1) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

struct LabelCtx {
  size_t section;
};

std::string label_name(int64_t target, void* ctx) {
  auto* c = static_cast<LabelCtx*>(ctx);
  if (target < 0) return "@" + std::to_string(target);
  return "L" + std::to_string(c->section) + "_" + std::to_string(target);
}

}  // namespace

std::string disassemble_word(uint64_t word, int64_t pc) {
  auto inst = decode(word);
  if (!inst) return ".inst " + hex(word);
  return format_instruction(*inst, pc);
}

std::string disassemble(const Program& p) {
  std::string out = "# TC1 program: " + std::to_string(p.text.size()) + " text section(s), " +
                    std::to_string(p.data.size()) + " data segment(s)\n";
  for (size_t si = 0; si < p.text.size(); ++si) {
    const TextSection& t = p.text[si];
    // Targets that get labels; ones outside the section stay as @N.
    std::set<int64_t> targets;
    for (size_t pc = 0; pc < t.words.size(); ++pc) {
      auto inst = decode(t.words[pc]);
      if (!inst) continue;
      for (int k = 0; k < format_info(info(inst->op).format).num_operands; ++k)
        if (format_info(info(inst->op).format).operands[size_t(k)].kind == OperandKind::Label)
          targets.insert(int64_t(pc) + inst->imm);
    }
    out += "\n.core " + mask_text(t.core_mask) + "\n";
    LabelCtx ctx{si};
    for (size_t pc = 0; pc <= t.words.size(); ++pc) {
      if (targets.count(int64_t(pc))) out += label_name(int64_t(pc), &ctx) + ":\n";
      if (pc == t.words.size()) break;
      auto inst = decode(t.words[pc]);
      out += "    ";
      if (!inst) {
        out += ".inst " + hex(t.words[pc]) + "    # does not decode\n";
        continue;
      }
      // Targets beyond the section cannot carry a label; print them as @N.
      bool inside = true;
      for (int k = 0; k < format_info(info(inst->op).format).num_operands; ++k)
        if (format_info(info(inst->op).format).operands[size_t(k)].kind == OperandKind::Label) {
          int64_t tg = int64_t(pc) + inst->imm;
          inside = tg >= 0 && tg <= int64_t(t.words.size());
        }
      out += format_instruction(*inst, int64_t(pc), inside ? label_name : nullptr, &ctx) + "\n";
    }
  }
  for (const DataSegment& d : p.data) {
    out += "\n";
    if (d.space == Space::L1)
      out += ".core " + mask_text(d.core_mask ? d.core_mask : kAllCoresMask) + "\n";
    out += ".data " + std::string(space_name(d.space)) + ", " + hex(d.addr) + "\n";
    for (size_t i = 0; i < d.bytes.size(); i += 16) {
      out += "    .byte ";
      for (size_t j = i; j < std::min(d.bytes.size(), i + 16); ++j)
        out += (j > i ? ", " : "") + std::to_string(d.bytes[j]);
      out += "\n";
    }
  }
  return out;
}

}  // namespace tilecore::arch
