// src/arch/arch_ffi.cc — the arch layer's functions in the global registry (`arch.*`).
//
// Python's tilecore.arch is a thin layer over these. A Program crosses as an
// `arch.Program` object (arch/program_object.h). Assembler mistakes become errors of
// kind "AsmError" (Python: tilecore.arch.AsmError, a ValueError) whose message
// starts with "line N:"; malformed images become "ProgramFormatError" naming the
// byte offset. Neither ever crashes the process.
#include <cstring>
#include <string>

#include "tilecore/arch/assembler.h"
#include "tilecore/arch/disassembler.h"
#include "tilecore/arch/isa.h"
#include "tilecore/arch/params.h"
#include "tilecore/arch/program_object.h"
#include "tilecore/arch/tile_ops.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/ndarray.h"
#include "tilecore/ffi/string.h"

namespace tilecore::arch {
namespace {

using ffi::Any;
using ffi::Array;
using ffi::Map;
using ffi::String;

const char* SpaceName(Space s) {
  switch (s) {
    case Space::DDR:
      return "ddr";
    case Space::L2:
      return "l2";
    case Space::L1:
      return "l1";
  }
  return "?";
}

Array<Any> CoresOf(uint32_t mask) {
  Array<Any> cores;
  for (int c = 0; c < 32; ++c) {
    if (mask & (1u << c)) cores.push_back(Any(int64_t{c}));
  }
  return cores;
}

ProgramRef Assemble(const std::string& text) {
  try {
    return ProgramRef(assemble(text));
  } catch (const AsmError& e) {
    TILECORE_THROW(AsmError) << e.what();
  }
}

// The bytes of a `bytes`/`bytearray` argument (borrowed or owned) or of a uint8 host NDArray.
std::span<const uint8_t> BytesArg(const ffi::AnyView& v) {
  const TCFFIAny* raw = v.raw();
  switch (raw->type_index) {
    case kTCFFIByteArrayPtr: {
      const auto* b = static_cast<const TCFFIByteArray*>(raw->v_ptr);
      return {reinterpret_cast<const uint8_t*>(b->data), b->size};
    }
    case kTCFFISmallBytes:
      return {reinterpret_cast<const uint8_t*>(raw->v_bytes), raw->small_len};
    case kTCFFIBytes: {
      const auto* cell = reinterpret_cast<const TCFFIStrCell*>(
          reinterpret_cast<const char*>(raw->v_obj) + sizeof(TCFFIObject));
      return {reinterpret_cast<const uint8_t*>(cell->bytes.data), cell->bytes.size};
    }
    default:
      break;
  }
  if (auto a = v.is_none() ? std::nullopt : v.try_cast<ffi::NDArray>()) {
    const DLTensor& t = a->tensor();
    if (t.device.device_type == kDLCPU && t.dtype.bits == 8 && t.dtype.lanes == 1 &&
        a->IsContiguous()) {
      return {a->data<const uint8_t>(), static_cast<size_t>(a->NumElements())};
    }
  }
  TILECORE_THROW(TypeError) << "arch.ProgramFromBytes: expected bytes, got `"
                            << ffi::details::AnyTypeName(raw) << "`";
}

void FromBytes(ffi::PackedArgs args, Any* rv) {
  if (args.size() != 1)
    TILECORE_THROW(TypeError) << "arch.ProgramFromBytes(bytes) takes 1 argument";
  std::span<const uint8_t> data = BytesArg(args[0]);
  try {
    *rv = Any(ProgramRef(Program::from_bytes(data)));
  } catch (const ProgramFormatError& e) {
    TILECORE_THROW(ProgramFormatError) << e.what();
  }
}

Array<Any> Sections(const ProgramRef& p) {
  Array<Any> out;
  for (const TextSection& s : p->program.text) {
    Map<String, Any> m;
    m.Set("core_mask", Any(int64_t{s.core_mask}));
    m.Set("cores", Any(CoresOf(s.core_mask)));
    m.Set("words", Any(static_cast<int64_t>(s.words.size())));
    out.push_back(Any(m));
  }
  return out;
}

Array<Any> DataSegments(const ProgramRef& p) {
  Array<Any> out;
  for (const DataSegment& d : p->program.data) {
    Map<String, Any> m;
    m.Set("space", Any(String(SpaceName(d.space))));
    m.Set("address", Any(static_cast<int64_t>(d.addr)));
    m.Set("size", Any(static_cast<int64_t>(d.bytes.size())));
    m.Set("core_mask", Any(int64_t{d.core_mask}));
    out.push_back(Any(m));
  }
  return out;
}

const TextSection& SectionAt(const ProgramRef& p, int64_t index) {
  if (index < 0 || index >= static_cast<int64_t>(p->program.text.size())) {
    TILECORE_THROW(IndexError) << "text section " << index << " does not exist (the program has "
                               << p->program.text.size() << ")";
  }
  return p->program.text[index];
}

// The table of tile operations (tile_ops.def), for the DSL: one map per row.
Array<Any> TileOps() {
  static constexpr const char* kForms[] = {"binary", "scalar",  "unary",
                                           "reduce", "convert", "requant"};
  static constexpr const char* kTypes[] = {"numeric", "float", "any", "integer"};
  Array<Any> out;
  for (const TileOpInfo& r : kTileOpRows) {
    Map<String, Any> m;
    m.Set("name", Any(String(std::string(r.name))));
    m.Set("mnemonic", Any(String(std::string(r.mnemonic))));
    m.Set("form", Any(String(kForms[int(r.form)])));
    m.Set("types", Any(String(kTypes[int(r.types)])));
    m.Set("summary", Any(String(std::string(r.summary))));
    out.push_back(Any(m));
  }
  return out;
}

}  // namespace

// arch.Params() -> {name: value}: the numbers of arch/params.h, for Python (tilecore.arch.params).
TILECORE_REGISTER_GLOBAL("arch.Params").set_body_typed([]() {
  ffi::Map<String, Any> m;
  auto put = [&](const char* name, int64_t v) { m.Set(name, Any(v)); };
  put("default_cores", tc1::kDefaultCores);
  put("max_cores", tc1::kMaxCores);
  put("clock_hz", int64_t(tc1::kClockHz));
  put("max_ddr_bytes", int64_t(tc1::kMaxDdrBytes));
  put("default_ddr_bytes", int64_t(tc1::kDefaultDdrBytes));
  put("l2_bytes", int64_t(tc1::kL2Bytes));
  put("l1_bytes", int64_t(tc1::kL1Bytes));
  put("l1_banks", tc1::kL1Banks);
  put("l1_bank_bytes", int64_t(tc1::kL1BankBytes));
  put("ddr_bytes_per_cycle", tc1::kDdrBytesPerCycle);
  put("l2_bytes_per_cycle", tc1::kL2BytesPerCycle);
  put("l1_bank_bytes_per_cycle", tc1::kL1BankBytesPerCycle);
  put("ddr_latency", tc1::kDdrLatency);
  put("l2_latency", tc1::kL2Latency);
  put("l1_latency", tc1::kL1Latency);
  put("dma_bytes_per_cycle", tc1::kDmaBytesPerCycle);
  put("vec_bytes_per_cycle", tc1::kVecBytesPerCycle);
  put("vec_latency", tc1::kVecLatency);
  put("vec_slow_factor", tc1::kVecSlowFactor);
  put("mm_latency", tc1::kMmLatency);
  put("mm_epilogue_elems_per_cycle", tc1::kMmEpilogueElemsPerCycle);
  put("barrier_latency", tc1::kBarrierLatency);
  put("bank_conflict_factor", tc1::kBankConflictFactor);
  for (auto [name, b] : {std::pair{"i8", tc1::kMmBlockI8}, std::pair{"f16", tc1::kMmBlockF16},
                         std::pair{"f32", tc1::kMmBlockF32}}) {
    put((std::string("mm_block_") + name + "_m").c_str(), b.m);
    put((std::string("mm_block_") + name + "_n").c_str(), b.n);
    put((std::string("mm_block_") + name + "_k").c_str(), b.k);
  }
  put("max_tile_elements", int64_t(tc1::kMaxTileElements));
  put("max_mm_dim", int64_t(tc1::kMaxMmDim));
  put("simd_bytes", tc1::kSimdBytes);
  put("x_regs", tc1::kNumXRegs);
  put("v_regs", tc1::kNumVRegs);
  put("p_regs", tc1::kNumPRegs);
  return m;
});
TILECORE_REGISTER_GLOBAL("arch.TileOps").set_body_typed(TileOps);
TILECORE_REGISTER_GLOBAL("arch.Assemble").set_body_typed(Assemble);
TILECORE_REGISTER_GLOBAL("arch.Disassemble").set_body_typed([](ProgramRef p) {
  return String(disassemble(p->program));
});
TILECORE_REGISTER_GLOBAL("arch.DisassembleWord").set_body_typed([](int64_t word, int64_t pc) {
  return String(disassemble_word(static_cast<uint64_t>(word), pc));
});
TILECORE_REGISTER_GLOBAL("arch.ProgramToBytes").set_body_typed([](ProgramRef p) {
  std::vector<uint8_t> b = p->program.to_bytes();
  return ffi::Bytes(std::string(b.begin(), b.end()));
});
TILECORE_REGISTER_GLOBAL("arch.ProgramFromBytes").set_body(FromBytes);
TILECORE_REGISTER_GLOBAL("arch.ProgramEqual").set_body_typed([](ProgramRef a, ProgramRef b) {
  return a->program == b->program;
});
TILECORE_REGISTER_GLOBAL("arch.ProgramSections").set_body_typed(Sections);
TILECORE_REGISTER_GLOBAL("arch.ProgramDataSegments").set_body_typed(DataSegments);
TILECORE_REGISTER_GLOBAL("arch.ProgramWords").set_body_typed([](ProgramRef p, int64_t section) {
  Array<Any> out;
  for (uint64_t w : SectionAt(p, section).words) out.push_back(Any(static_cast<int64_t>(w)));
  return out;
});
TILECORE_REGISTER_GLOBAL("arch.ProgramLines").set_body_typed([](ProgramRef p, int64_t section) {
  Array<Any> out;
  for (int line : SectionAt(p, section).lines) out.push_back(Any(int64_t{line}));
  return out;
});

}  // namespace tilecore::arch
