// src/codegen/npu/emitter.h — the npu code generator's private interface: one
// NpuEmitter per kernel, its state, and which file implements which concern.
//
//   builder.cc     typed instructions, labels, data segment, line table (InstrBuilder)
//   emitter.cc     setup, registers, variables, addresses, statements and loops
//   scalar.cc      scalar selection: integer ALU, float arithmetic in SIMD lane 0, casts
//   simd.cc        SIMD selection: vector values, predicates, vector loads/stores
//   tile.cc        tile commands: DMA, matrix and vector-engine descriptors and commands
//   ordering.cc    engine ordering: per-buffer completion counters and waits
//   build.cc       the lowering entry (codegen.build_npu)
//
// Fixed registers: x0 zero, x1-x3 address scratch, x30 / x31 the issued vector /
// matrix command counts; v0-v2 scratch for scalar float arithmetic (TC1 has no
// scalar float unit: it runs in SIMD lane 0); p0 all lanes. The rest are pools, less the
// two a kernel that reads the DMA engines' issued counts (tc1.dma_issued) keeps for them.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilecore/arch/params.h"
#include "tilecore/codegen/codegen_npu.h"
#include "tilecore/codegen/npu/builder.h"
#include "tilecore/codegen/npu/registers.h"
#include "tilecore/ir/expr.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/stmt.h"
#include "tilecore/transform/analyzer.h"

namespace tilecore::codegen::npu {

using ir::DataType;
using ir::PrimExpr;
using O = Operand;
using Op = arch::Opcode;

inline constexpr int kScratch1 = 1, kScratch2 = 2, kScratch3 = 3;
inline constexpr int kMmCount = arch::tc1::kNumXRegs - 1;   // matrix-engine commands issued
inline constexpr int kVecCount = arch::tc1::kNumXRegs - 2;  // vector-engine commands issued
inline constexpr int kFirstPoolX = 4, kLastPoolX = kVecCount - 1;
inline constexpr int kFirstPoolV = 3;
inline constexpr int kFirstPoolP = 1;
inline constexpr int kMinFreeForTemps = 8;  // variables leave this many x registers to temporaries
inline constexpr int kSpillBelowX = 6;  // a held temporary spills when fewer x registers are free
inline constexpr int kSpillBelowV = 3;  // ... or fewer v registers
inline constexpr int kVecBytes = arch::tc1::kSimdBytes;
inline constexpr int kLaneSlots = 4;  // operands + result of a lane-wise fallback

/// The TC1 element type of an IR dtype; a ValueError for what TC1 lacks (64-bit).
arch::DType TC1Type(DataType t);
/// The memory space of a buffer scope ("local" L1, "shared" L2, else DDR).
arch::Space SpaceOf(const std::string& scope);
/// Bit pattern of constant `v` in dtype `t` (floats rounded to nearest even).
uint32_t ScalarBits(DataType t, double v);
int Log2(int64_t v);

/// A value in an x register (`tmp`: owned by the expression), or spilled to an L1 word.
struct XR {
  int r = 0;
  bool tmp = false;
  int64_t slot = -1;
};
struct VR {
  int r = 0;
  bool tmp = false;
  int64_t slot = -1;
};

struct VarLoc {
  int xreg = -1;
  int vreg = -1;
  int preg = -1;
  int64_t mem = -1;  // L1 address of a variable that lives in memory
};

/// A tensor operand of a tile command: address expression plus shape and strides.
struct Tensor {
  ir::Buffer buffer;
  DataType dtype;
  PrimExpr offset;  // elements from the buffer's data pointer
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

/// Where a buffer's compute-engine bookkeeping lives: `units` pairs of words
/// (last mm count, last vec count), one unit per slab of the outermost dimension.
struct Track {
  int64_t addr = 0;
  int64_t units = 1;
  int engines = 0;  // bit 0: some matrix command touches the buffer, bit 1: some vector command
};

/// Shape helpers of tile operands (tile.cc), public for tests.
int64_t Count(const Tensor& t);
void Squeeze(Tensor* t);
void MergeJoint(std::vector<Tensor*> ts);
bool Contiguous(const Tensor& t);

class NpuEmitter {
 public:
  NpuEmitter(const ir::PrimFunc& f, std::string name, int max_cores, int64_t l1_limit);
  NpuAssembly Run();

 private:
  friend struct EmitterAccess;
  // ---- emitter.cc: output helpers ---------------------------------------------------------
  void E(Op op, std::initializer_list<O> ops, arch::DType dt = arch::DType::I8,
         arch::DType src = arch::DType::I8) {
    b_.Emit(op, ops, dt, src);
  }
  void R3(Op op, int d, int a, int c) { E(op, {O::X(d), O::X(a), O::X(c)}); }
  void RI(Op op, int d, int a, int64_t imm) { E(op, {O::X(d), O::X(a), O::Imm(imm)}); }
  void Li(int d, int64_t v) { E(Op::Li, {O::X(d), O::Imm(v)}); }
  void Mov(int d, int s) { R3(Op::Add, d, s, 0); }
  void LdL1(Op op, int d, int64_t addr, int base = 0) {
    E(op, {O::X(d), O::Mem(arch::Space::L1, base, addr)});
  }
  void StL1(Op op, int s, int64_t addr, int base = 0) {
    E(op, {O::X(s), O::Mem(arch::Space::L1, base, addr)});
  }
  // (control flow: the bookkeeping stores held back are made first, on every path)
  void Branch(Op op, int a, int c, Label l) {
    FlushRecords();
    E(op, {O::X(a), O::X(c), O::To(l)});
  }
  void Jump(Label l) {
    FlushRecords();
    E(Op::Jal, {O::X(0), O::To(l)});
  }
  void Place(Label l) {
    FlushRecords();
    b_.Bind(l);
  }
  void WaitFor(O queue, arch::Engine e, int count_reg) {
    E(Op::Wait, {queue, O::Engine(e), O::Count(count_reg)});
  }

  [[noreturn]] void Fail(const std::string& what, const ir::Span& span = ir::Span());
  int64_t Descriptor(std::span<const uint8_t> bytes, bool shared, const std::string& note) {
    return b_.Data(bytes, shared, note);
  }
  int64_t IotaTable(DataType t);

  // ---- emitter.cc: setup, registers, variables ----------------------------------------------
  void ReadPlan();
  void CheckConstants();
  int CountCores(const ir::Stmt& s);
  // the buffers the engines and the front end touch (tile_bufs_, engines_, one_slab_,
  // front_end_bufs_): one walk
  void CollectBufferUses();
  int FreeX() const { return xpool_.FreeCount(); }
  int AllocX();
  int AllocV();
  int AllocP();
  void Free(XR r);
  void Free(VR r);
  void FreeP(int p) { ppool_.Free(p); }
  int Dest(XR a) { return a.tmp ? a.r : AllocX(); }
  int Dest(XR a, XR b);
  XR Hold(XR x);    // spills a temporary when registers run short
  XR Reload(XR x);  // back into a register
  VR HoldV(VR x);
  VR ReloadV(VR x);
  void Normalize(int r, DataType t);
  VarLoc BindScalar(const ir::Var& v);
  void Unbind(const ir::Var& v);
  void SetVar(const VarLoc& loc, XR value);
  XR GetVar(const ir::VarNode* v);
  XR GetLoc(const VarLoc& l);
  void BindLet(const ir::Var& v, const PrimExpr& value);

  // ---- emitter.cc: addresses ----------------------------------------------------------------
  struct Addr {
    XR base;
    int64_t imm = 0;
    arch::Space space = arch::Space::DDR;
  };
  Addr BufferBase(const ir::Buffer& b);
  Addr ElementAddr(const ir::Buffer& b, const PrimExpr& index);
  static O Mem(const Addr& a) { return O::Mem(a.space, a.base.r, a.imm); }
  XR TensorAddr(const Tensor& t);

  // ---- emitter.cc: statements ---------------------------------------------------------------
  std::string Location(const ir::Stmt& s);
  bool HasCores(const ir::Stmt& s);
  bool HasCompute(const ir::Stmt& s);
  void Stmt(const ir::Stmt& s);
  void StmtInner(const ir::Stmt& s);
  void Store(const ir::BufferStoreNode* st);
  /// Constant scalar stores from seq[i] on into consecutive elements of an L1 buffer (a
  /// lookup table filled at a member's start: 64 words), as 32-byte chunks: each chunk's
  /// bytes in the data segment, one vld and one vst where a li and a store took each
  /// element. The count of stores taken (whole chunks from an aligned first element), 0 for none.
  size_t StoreConstantRun(const ffi::Array<ir::Stmt>& seq, size_t i);
  void Loop(const ir::ForNode* f);
  void CoresLoop(const ir::ForNode* f);
  void EffectCall(const ir::CallNode* c);

  // ---- scalar.cc ----------------------------------------------------------------------------
  XR Imm(int64_t v);
  XR Eval(const PrimExpr& e);
  XR FloatBinary(Op op, XR a, XR b, DataType t);
  XR Arith(ir::NodeKind k, const ir::BinaryOpNode* b);
  XR Compare(ir::NodeKind k, const ir::BinaryOpNode* b);
  XR CastScalar(XR v, DataType from, DataType to);
  XR TileScalar(Op op, std::vector<PrimExpr> args, DataType t);
  XR CallScalar(const ir::CallNode* c);

  // ---- simd.cc ------------------------------------------------------------------------------
  void CheckFull(DataType t, const ir::Span& sp);
  VR EvalV(const PrimExpr& e);
  VR VBin(Op op, const PrimExpr& a, const PrimExpr& b, arch::DType dt);
  VR TileVector(Op op, std::vector<PrimExpr> args, DataType t);
  int EvalP(const PrimExpr& e);
  VR VectorLoad(const ir::BufferLoadNode* l, DataType t, const ir::Span& sp);
  // Lane-wise fallback for what TC1's SIMD unit lacks: the operands go to L1
  // scratch, `scalar` computes one lane from scalar variables bound to that lane's
  // elements, and the lanes come back as one register.
  // Lane variables are 32-bit (the element sign- or zero-extended, as loaded); the
  // result's low bits are stored. `expr` builds the lane's value as scalar IR.
  VR LaneWiseRegs(DataType t, const std::vector<PrimExpr>& vargs,
                  const std::function<XR(const std::vector<ir::Var>&)>& scalar);
  VR LaneWise(DataType t, const std::vector<PrimExpr>& vargs,
              const std::function<PrimExpr(const std::vector<ir::Var>&)>& expr);
  XR SaturatingShiftLeft(DataType t, const ir::Var& a, const ir::Var& b);
  VR ConvertPart(const ir::CallNode* c, DataType t);
  VR StridedLoad(const ir::BufferLoadNode* l, const ir::RampNode* rp, DataType t);
  int64_t LaneScratch();
  void VectorStore(const ir::BufferStoreNode* st);

  // ---- tile.cc ------------------------------------------------------------------------------
  Tensor Region(const PrimExpr& e, const ir::CallNode* c);
  void Align(std::vector<Tensor*> ts, const ir::CallNode* c);
  void Dma(const ir::CallNode* c, const std::string& op);
  void Matmul(const ir::CallNode* c);
  void CallPacked(const ir::CallNode* c);
  void VecOp(const ir::CallNode* c, const std::string& op);
  void LutOp(const ir::CallNode* c);

  // ---- ordering.cc --------------------------------------------------------------------------
  struct Unit {
    const Track* track = nullptr;
    PrimExpr index;  // undefined: every unit
  };
  void MakeTrack(const ir::Buffer& b);
  Unit UnitOf(const PrimExpr& region);
  void WaitUnit(const Unit& u, O queue, arch::Engine engine);
  void WaitWord(O queue, arch::Engine engine, int64_t addr);
  bool QueueWaitedFor(O queue, int slot, int64_t issued);
  void CountIssued(arch::Engine engine);
  void FlushRecords(int64_t lo = 0, int64_t hi = INT64_MAX);
  void RecordUnit(const Unit& u, arch::Engine engine);
  void Compute(arch::Engine engine, const std::vector<PrimExpr>& regions,
               const std::function<void()>& issue);
  void SyncFrontEnd(const ir::Buffer& b);
  void CollectReuse();
  void OrderAfterReuse(const ir::Buffer& b);

  ir::PrimFunc f_;
  std::string name_;
  int max_cores_;
  int64_t l1_limit_;
  int cores_ = 1;
  bool in_cores_ = false;
  std::vector<MemberCode> members_;  // the code of each layer-group member's cores loops
  bool pending_compute_ = false;
  InstrBuilder b_;
  ir::Span span_;
  // the last cores loop was a handoff (kCoresHandoffAnnotation): the next opens without a
  // barrier
  bool handed_off_ = false;
  int64_t scratch_ = 0;
  int64_t lane_scratch_ = 0;  // kLaneSlots vector slots for the lane-wise fallback
  std::map<int, int64_t> iota_;
  std::unordered_map<const ir::Object*, int64_t> plan_;
  std::unordered_map<const ir::Object*, int64_t> plan_bytes_;
  std::unordered_map<const ir::Object*, VarLoc> vars_;
  std::unordered_set<const ir::Object*> tile_bufs_;
  // buffers some compute command or DMA touches one slab of (its outermost dimension's
  // extent 1): only those keep a count per slab (MakeTrack)
  std::unordered_set<const ir::Object*> one_slab_;
  std::unordered_map<const ir::Object*, int> engines_;
  std::unordered_map<const ir::Object*, Track> tracks_;
  std::unordered_map<const ir::Object*, size_t> track_shape0_;
  // (queue, engine, bookkeeping word) -> the pc of a wait of that queue for the count in
  // that word: until the word is written or a label is placed after it, a repeat waits for
  // what the queue has waited for already (WaitWord)
  std::map<std::tuple<int, int, int64_t>, int64_t> waited_;
  // bookkeeping words whose store is held back (RecordUnit): word -> (engine slot, the
  // engine's commands issued when recorded). A later record of the word replaces it (the
  // earlier store was dead), a wait reads the count from the counter register, and the
  // store is made before control flow or an access by a computed index (FlushRecords).
  std::map<int64_t, std::pair<int, int64_t>> held_;
  // the ranges of the loop, core and let variables in scope: a floor division of
  // operands it proves non-negative is a plain one (Arith)
  transform::Analyzer ranges_;
  int64_t issued_[2] = {0, 0};  // commands issued by the code emitted so far, mm and vec
  // the registers counting the commands issued to DMA-in and DMA-out, when the kernel reads
  // them (tc1.dma_issued; -1: not counted)
  int dma_issued_reg_[2] = {-1, -1};
  // (queue, engine slot) -> (the engine's commands issued, the pc) of the queue's last wait
  // for a held count: the queue has waited for that many commands (if no label since)
  std::map<std::pair<int, int>, std::pair<int64_t, int64_t>> waited_upto_;
  // an allocation -> the engines (bit 0 matrix, bit 1 vector) that touch allocations whose
  // planned memory overlaps it and may run before it (PlanLocalMemory reuses the memory of
  // a scope that has ended; the engines may still be reading it); the buffers the front
  // end loads or stores
  std::unordered_map<const ir::Object*, int> reused_;
  std::unordered_set<const ir::Object*> front_end_bufs_;
  RegisterPool xpool_{kFirstPoolX, kLastPoolX};
  RegisterPool vpool_{kFirstPoolV, arch::tc1::kNumVRegs - 1};
  RegisterPool ppool_{kFirstPoolP, arch::tc1::kNumPRegs - 1};
  SpillSlots xslots_{[this] { return b_.Words(1); }};
  SpillSlots vslots_{[this] { return b_.Block(kVecBytes, kVecBytes); }};
};

}  // namespace tilecore::codegen::npu
