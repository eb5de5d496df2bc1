/*
 * include/tilecore/ir/stmt.h — statements of the Kernel IR.
 *
 * Node list (type key "ir.<Name>"):
 *   BufferStore   buffer[indices] = value (optional predicate: a bool vector mask)
 *   LetStmt       let var = value; body
 *   For           for loop_var in range(min, min + extent): body, with a ForKind
 *   While         while condition: body
 *   IfThenElse    if condition: then_case else: else_case (else may be undefined)
 *   Allocate      a buffer in local (L1) or shared (L2) memory, live in body
 *   SeqStmt       statements in order
 *   Evaluate      an expression evaluated for its effect (intrinsic calls:
 *                 DMA, waits, barrier, tile commands — see intrinsics.h)
 */
#ifndef TILECORE_IR_STMT_H_
#define TILECORE_IR_STMT_H_

#include <string>

#include "tilecore/ir/expr.h"

namespace tilecore {
namespace ir {

class StmtNode : public Object {
 public:
  Span span;
  TILECORE_FFI_DECLARE_OBJECT_INFO("ir.Stmt", StmtNode, Object);
};
class Stmt : public ObjectRef {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Stmt, ObjectRef, StmtNode);
};

/*!
 * \brief `buffer[indices] = value`. A Ramp index stores a vector; `predicate`, when
 * defined, is a bool vector of the value's lanes and masks off lanes (TC1 `vst`
 * with a predicate register).
 */
class BufferStoreNode : public StmtNode {
 public:
  Buffer buffer;
  PrimExpr value;
  Array<PrimExpr> indices;
  PrimExpr predicate;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.BufferStore", BufferStoreNode, StmtNode);
};
class BufferStore : public Stmt {
 public:
  /*! \brief TypeError unless value's dtype is the buffer's dtype with the index lanes. */
  BufferStore(Buffer buffer, PrimExpr value, Array<PrimExpr> indices,
              PrimExpr predicate = PrimExpr(), Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(BufferStore, Stmt, BufferStoreNode);
};

class LetStmtNode : public StmtNode {
 public:
  Var var;
  PrimExpr value;
  Stmt body;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.LetStmt", LetStmtNode, StmtNode);
};
class LetStmt : public Stmt {
 public:
  LetStmt(Var var, PrimExpr value, Stmt body, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(LetStmt, Stmt, LetStmtNode);
};

/*!
 * \brief How a loop runs.
 *   serial      one iteration after another
 *   unrolled    to be unrolled (UnrollLoop); constant extent
 *   vectorized  to become SIMD lanes (VectorizeLoop); constant extent
 *   cores       one iteration per core of the cluster: loop_var is the core id
 *               (iterations beyond the core count are an error at codegen)
 */
enum class ForKind : int32_t { kSerial = 0, kUnrolled = 1, kVectorized = 2, kCores = 3 };
const char* ForKindName(ForKind kind);
/*! \brief ValueError naming the accepted kinds otherwise. */
ForKind ForKindFromName(std::string_view name);

class ForNode : public StmtNode {
 public:
  Var loop_var;
  PrimExpr min;
  PrimExpr extent;
  ForKind kind{ForKind::kSerial};
  Stmt body;
  /*! \brief Free-form hints for passes (e.g. "pragma_unroll_max"). */
  Map<String, Any> annotations;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.For", ForNode, StmtNode);
};
class For : public Stmt {
 public:
  /*! \brief TypeError unless loop_var, min and extent have one integer dtype. */
  For(Var loop_var, PrimExpr min, PrimExpr extent, ForKind kind, Stmt body,
      Map<String, Any> annotations = Map<String, Any>(), Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(For, Stmt, ForNode);
};

class WhileNode : public StmtNode {
 public:
  PrimExpr condition;
  Stmt body;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.While", WhileNode, StmtNode);
};
class While : public Stmt {
 public:
  While(PrimExpr condition, Stmt body, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(While, Stmt, WhileNode);
};

class IfThenElseNode : public StmtNode {
 public:
  PrimExpr condition;
  Stmt then_case;
  Stmt else_case;  // may be undefined
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.IfThenElse", IfThenElseNode, StmtNode);
};
class IfThenElse : public Stmt {
 public:
  /*! \brief TypeError unless condition is a scalar bool. */
  IfThenElse(PrimExpr condition, Stmt then_case, Stmt else_case = Stmt(), Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(IfThenElse, Stmt, IfThenElseNode);
};

/*!
 * \brief Allocates `buffer` (scope local or shared) for the duration of `body`.
 * Its shape must become constant before PlanLocalMemory, which assigns it an
 * address. Allocations in local scope inside a `cores` loop exist once per core.
 */
class AllocateNode : public StmtNode {
 public:
  Buffer buffer;
  Stmt body;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Allocate", AllocateNode, StmtNode);
};
class Allocate : public Stmt {
 public:
  /*! \brief ValueError if the buffer's scope is global (global memory comes from params). */
  Allocate(Buffer buffer, Stmt body, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Allocate, Stmt, AllocateNode);
};

class SeqStmtNode : public StmtNode {
 public:
  Array<Stmt> seq;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.SeqStmt", SeqStmtNode, StmtNode);
};
class SeqStmt : public Stmt {
 public:
  explicit SeqStmt(Array<Stmt> seq, Span span = Span());
  /*! \brief Flattens nested SeqStmts, drops no-ops, and returns the one statement
   * when only one is left (an empty SeqStmt if none). */
  static Stmt Flatten(const Array<Stmt>& seq);
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(SeqStmt, Stmt, SeqStmtNode);
};

class EvaluateNode : public StmtNode {
 public:
  PrimExpr value;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Evaluate", EvaluateNode, StmtNode);
};
class Evaluate : public Stmt {
 public:
  explicit Evaluate(PrimExpr value, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Evaluate, Stmt, EvaluateNode);
};

/*! \brief Whether `s` does nothing (Evaluate of a constant, or an empty SeqStmt). */
bool IsNoOp(const Stmt& s);

}  // namespace ir

namespace ffi {
/*! \brief ForKind travels as its name ("serial", "unrolled", "vectorized", "cores"). */
template <>
struct TypeTraits<ir::ForKind> {
  static constexpr bool enabled = true;
  static void CopyToAnyView(const ir::ForKind& v, TCFFIAny* out) {
    out->type_index = kTCFFIRawStr;
    out->zero_padding = 0;
    out->v_c_str = ir::ForKindName(v);
  }
  static void MoveToAny(ir::ForKind v, TCFFIAny* out) {
    details::MakeOwnedString(ir::ForKindName(v), out);
  }
  static bool CheckAnyStrict(const TCFFIAny* v) {
    std::string_view s;
    return details::AnyGetStringView(v, &s);
  }
  static std::optional<ir::ForKind> TryCastFromAnyView(const TCFFIAny* v) {
    std::string_view s;
    if (details::AnyGetStringView(v, &s)) return ir::ForKindFromName(s);
    return std::nullopt;
  }
  static std::string TypeStr() { return "ForKind"; }
};
}  // namespace ffi
}  // namespace tilecore
#endif  // TILECORE_IR_STMT_H_
