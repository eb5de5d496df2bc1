// examples/device_plugin/src/codegen.cc — step 3: Kernel IR -> toyacc bytecode.
//
// `tilecore.build(f, target="toyacc ...")` calls the global function
// `codegen.build_<kind>`; this file registers `codegen.build_toyacc`. It walks each
// PrimFunc with an ir::IRVisitor and emits stack code: an expression pushes its
// value, a statement leaves the stack as it found it.
//
// In: scalar Kernel IR over the parameters' buffers — loops of any kind (run one
// iteration after another), if/else, while, let, loads and stores with any number
// of indices, arithmetic, comparisons, select and casts on int8..int64,
// uint8..uint64, float32, float64 and bool. Anything else (vectors, intrinsics,
// local allocations, float16) is a ValueError naming the node, the kernel and the
// source location.
#include <sstream>
#include <unordered_map>

#include "tilecore/codegen/lowering.h"  // codegen::AsIRModule, codegen::KernelParams
#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ir/functor.h"
#include "tilecore/target/target.h"
#include "toyacc.h"

namespace toyacc {
namespace {

using namespace tilecore;      // NOLINT
using namespace tilecore::ir;  // NOLINT

// Each occurrence of a shared subexpression pushes its value again, so the visitor asks
// for every occurrence (IRVisitor visits a shared node once per expression by default).
class Emitter : public IRVisitor {
 public:
  explicit Emitter(const PrimFunc& f, std::string name)
      : IRVisitor(Sharing::kEachOccurrence), f_(f) {
    k_.name = std::move(name);
    k_.params = codegen::KernelParams(f);
    for (size_t i = 0; i < f->params.size(); ++i) {
      const Var& p = f->params[i];
      k_.slots.push_back(std::string(p->name.view()));
      if (f->buffer_map.count(p)) {
        buffers_[f->buffer_map[p]->data.get()] = int64_t(i);
        k_.params[i].written = false;  // until a store says otherwise
      } else if (p->dtype.is_handle()) {
        Unsupported(p.get(), p->span, "a pointer parameter without a buffer");
      } else {
        Check(p->dtype, p.get(), p->span);
        slots_[p.get()] = int64_t(i);
        k_.params[i].written = false;  // scalars are passed by value
      }
    }
  }

  Kernel Emit() {
    VisitStmt(f_->body);
    Push({Op::kRet}, 0);
    return std::move(k_);
  }

 private:
  // ---- expressions -------------------------------------------------------------------------
  void VisitExpr(const PrimExpr& e) override {
    Check(e.dtype(), e.get(), e->span);
    IRVisitor::VisitExpr(e);
  }
  void VisitExpr_(const IntImmNode* op) override {
    Push({Op::kPush, op->dtype, op->dtype, op->value}, +1);
  }
  void VisitExpr_(const FloatImmNode* op) override {
    Push({Op::kPush, op->dtype, op->dtype, 0, op->value}, +1);
  }
  void VisitExpr_(const VarNode* op) override {
    auto it = slots_.find(op);
    if (it == slots_.end())
      Unsupported(op, op->span, "variable `" + std::string(op->name.view()) + "`");
    Push({Op::kGet, op->dtype, op->dtype, it->second}, +1);
  }
#define TOYACC_BINARY(Name) \
  void VisitExpr_(const Name##Node* op) override { Binary(#Name, op); }
  TILECORE_IR_FOR_EACH_BINARY(TOYACC_BINARY)
#undef TOYACC_BINARY
  void VisitExpr_(const NotNode* op) override {
    VisitExpr(op->a);
    Push({Op::kNot, op->dtype, op->dtype}, 0);
  }
  void VisitExpr_(const SelectNode* op) override {
    VisitExpr(op->condition);
    VisitExpr(op->true_value);
    VisitExpr(op->false_value);
    Push({Op::kSelect, op->dtype, op->dtype}, -2);
  }
  void VisitExpr_(const CastNode* op) override {
    VisitExpr(op->value);
    Push({Op::kCast, op->dtype, op->value.dtype()}, 0);
  }
  void VisitExpr_(const LetNode* op) override {
    Bind(op->var, op->value);
    VisitExpr(op->body);
  }
  void VisitExpr_(const BufferLoadNode* op) override {
    int64_t param = Index(op->buffer, op->indices, op);
    Push({Op::kLoad, op->dtype, op->dtype, param}, 0);
  }
  void VisitExpr_(const StringImmNode* op) override { Unsupported(op, op->span); }
  void VisitExpr_(const RampNode* op) override { Unsupported(op, op->span); }
  void VisitExpr_(const BroadcastNode* op) override { Unsupported(op, op->span); }
  void VisitExpr_(const CallNode* op) override {
    Unsupported(op, op->span, "intrinsic `" + std::string(op->op.view()) + "`");
  }
  void VisitExpr_(const BufferRegionNode* op) override { Unsupported(op, op->span); }

  // ---- statements --------------------------------------------------------------------------
  void VisitStmt_(const BufferStoreNode* op) override {
    if (op->predicate.defined()) Unsupported(op, op->span, "a predicated store");
    int64_t param = Index(op->buffer, op->indices, op);
    VisitExpr(op->value);
    Push({Op::kStore, op->buffer->dtype, op->buffer->dtype, param}, -2);
    k_.params[size_t(param)].written = true;
  }
  void VisitStmt_(const LetStmtNode* op) override {
    Bind(op->var, op->value);
    VisitStmt(op->body);
  }
  // [toyacc.codegen_for.begin]
  void VisitStmt_(const ForNode* op) override {  // every kind runs serially
    DataType t = op->loop_var->dtype;
    int64_t var = Bind(op->loop_var, op->min);
    int64_t end = NewSlot(std::string(op->loop_var->name.view()) + "_end");
    const auto *lo = op->min.as<IntImmNode>(), *n = op->extent.as<IntImmNode>();
    if (lo && n) {
      Push({Op::kPush, t, t, lo->value + n->value}, +1);
    } else {
      VisitExpr(op->min);
      VisitExpr(op->extent);
      Push({Op::kBinary, t, t, BinaryIndex("add")}, -1);
    }
    Push({Op::kSet, t, t, end}, -1);
    size_t top = k_.code.size();
    Push({Op::kGet, t, t, var}, +1);
    Push({Op::kGet, t, t, end}, +1);
    Push({Op::kBinary, t, t, BinaryIndex("lt")}, -1);
    size_t exit = Push({Op::kJumpZero, t, t}, -1);
    VisitStmt(op->body);
    Push({Op::kGet, t, t, var}, +1);
    Push({Op::kPush, t, t, 1}, +1);
    Push({Op::kBinary, t, t, BinaryIndex("add")}, -1);
    Push({Op::kSet, t, t, var}, -1);
    Push({Op::kJump, t, t, int64_t(top)}, 0);
    k_.code[exit].operand = int64_t(k_.code.size());
  }
  // [toyacc.codegen_for.end]
  void VisitStmt_(const WhileNode* op) override {
    size_t top = k_.code.size();
    VisitExpr(op->condition);
    size_t exit = Push({Op::kJumpZero}, -1);
    VisitStmt(op->body);
    Push({Op::kJump, {}, {}, int64_t(top)}, 0);
    k_.code[exit].operand = int64_t(k_.code.size());
  }
  void VisitStmt_(const IfThenElseNode* op) override {
    VisitExpr(op->condition);
    size_t to_else = Push({Op::kJumpZero}, -1);
    VisitStmt(op->then_case);
    if (!op->else_case.defined()) {
      k_.code[to_else].operand = int64_t(k_.code.size());
      return;
    }
    size_t to_end = Push({Op::kJump}, 0);
    k_.code[to_else].operand = int64_t(k_.code.size());
    VisitStmt(op->else_case);
    k_.code[to_end].operand = int64_t(k_.code.size());
  }
  void VisitStmt_(const EvaluateNode* op) override {
    if (NodeKindOf(op->value.get()) == NodeKind::kIntImm) return;  // a no-op
    auto* call = op->value.as<CallNode>();
    if (call && call->op == "tir.barrier") return;  // iterations run one after another
    Unsupported(op->value.get(), op->span,
                call ? "intrinsic `" + std::string(call->op.view()) + "`" : "");
  }
  void VisitStmt_(const AllocateNode* op) override {
    Unsupported(op, op->span, "an allocation (toyacc kernels use their parameters' buffers only)");
  }

  // ---- helpers -----------------------------------------------------------------------------
  // Appends `in`, which changes the stack depth by `delta`; returns its pc.
  size_t Push(Insn in, int delta) {
    depth_ += delta;
    if (depth_ > k_.stack_size) k_.stack_size = depth_;
    k_.code.push_back(in);
    return k_.code.size() - 1;
  }

  static int64_t BinaryIndex(const std::string& name) {
    for (size_t i = 0; i < std::size(kBinaryOps); ++i) {
      if (name == kBinaryOps[i]) return int64_t(i);
    }
    TILECORE_THROW(InternalError) << "toyacc: no binary operator `" << name << "`";
  }

  void Binary(std::string name, const BinaryOpNode* op) {  // "FloorDiv" -> floordiv
    for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    VisitExpr(op->a);
    VisitExpr(op->b);
    Push({Op::kBinary, op->a.dtype(), op->a.dtype(), BinaryIndex(name)}, -1);
  }

  int64_t NewSlot(const std::string& name) {
    k_.slots.push_back(name);
    return int64_t(k_.slots.size()) - 1;
  }

  // Evaluates `value` into a new slot for `var`.
  int64_t Bind(const Var& var, const PrimExpr& value) {
    int64_t slot = NewSlot(std::string(var->name.view()));
    VisitExpr(value);
    Push({Op::kSet, var->dtype, var->dtype, slot}, -1);
    slots_[var.get()] = slot;
    return slot;
  }

  // Pushes the flat element index of buffer[indices]; returns the buffer's parameter.
  int64_t Index(const Buffer& b, const Array<PrimExpr>& indices, const Object* node) {
    auto it = buffers_.find(b->data.get());
    if (it == buffers_.end())
      Unsupported(node, Span(), "buffer `" + std::string(b->name.view()) + "`");
    DataType t = indices.size() ? indices[0].dtype() : DataType::Int(32);
    auto add = [&] { Push({Op::kBinary, t, t, BinaryIndex("add")}, -1); };
    auto mul = [&] { Push({Op::kBinary, t, t, BinaryIndex("mul")}, -1); };
    if (indices.size() == 0) Push({Op::kPush, t, t, 0}, +1);
    for (size_t d = 0; d < indices.size(); ++d) {
      if (b->strides.size()) {  // explicit strides: i0 * s0 + i1 * s1 + ...
        VisitExpr(indices[d]);
        VisitExpr(b->strides[d]);
        mul();
        if (d > 0) add();
      } else {  // row-major: ((i0 * n1 + i1) * n2 + i2) ...
        if (d > 0) {
          VisitExpr(b->shape[d]);
          mul();
        }
        VisitExpr(indices[d]);
        if (d > 0) add();
      }
    }
    const auto* offset = b->elem_offset.as<IntImmNode>();
    if (b->elem_offset.defined() && !(offset && offset->value == 0)) {
      VisitExpr(b->elem_offset);
      add();
    }
    return it->second;
  }

  void Check(DataType t, const Object* node, const Span& span) {
    bool ok = t.is_scalar() && (t.is_bool() || (t.is_integer() && t.bits() >= 8) ||
                                (t.code == kDLFloat && (t.bits() == 32 || t.bits() == 64)));
    if (!ok) Unsupported(node, span, "dtype " + ffi::DLDataTypeToString(t));
  }

  [[noreturn]] void Unsupported(const Object* node, const Span& span,
                                const std::string& what = "") {
    std::ostringstream os;
    os << "toyacc codegen: kernel `" << k_.name << "`: cannot emit `" << node->GetTypeKey() << "`";
    if (!what.empty()) os << " (" << what << ")";
    if (span.defined()) os << " at " << span->file.view() << ":" << span->line;
    TILECORE_THROW(ValueError) << os.str();
  }

  PrimFunc f_;
  Kernel k_;
  int depth_ = 0;
  std::unordered_map<const Object*, int64_t> slots_;    // scalar Var -> slot
  std::unordered_map<const Object*, int64_t> buffers_;  // buffer data Var -> parameter
};

}  // namespace

// [toyacc.codegen.begin]
tilecore::runtime::Module Build(const tilecore::ir::IRModule& mod,
                                const tilecore::target::Target& target) {
  std::vector<Kernel> kernels;
  for (const auto& [name, func] : mod->functions.items()) {
    Kernel k = Emitter(func, std::string(name.view())).Emit();
    if (k.stack_size > target.GetInt("stack")) {
      TILECORE_THROW(ValueError) << "toyacc codegen: kernel `" << k.name << "` needs "
                                 << k.stack_size << " stack slots; the target allows -stack="
                                 << target.GetInt("stack");
    }
    kernels.push_back(std::move(k));
  }
  return ModuleCreate(std::move(kernels), static_cast<int32_t>(target.GetInt("device")));
}

}  // namespace toyacc

TILECORE_REGISTER_GLOBAL("codegen.build_toyacc")
    .set_body_typed([](tilecore::ffi::Any mod, tilecore::target::Target target) {
      return toyacc::Build(tilecore::codegen::AsIRModule(mod), target);
    });
// [toyacc.codegen.end]
