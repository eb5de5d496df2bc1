/*
 * include/tilecore/ir/expr.h — expressions of the Kernel IR (PrimExpr) and Buffer.
 *
 * Every expression has a `dtype` and a `span`. Constructors check types and raise
 * TypeError naming the node and the dtypes (`Add: operand dtypes differ: int32 vs
 * float32`); there are no implicit conversions inside the IR — insert a Cast. The
 * operator overloads in op.h are the convenient way to build expressions (they turn
 * C++ numbers into immediates of the other operand's dtype).
 *
 * Arithmetic follows C and TC1: Div and Mod truncate toward zero; FloorDiv and
 * FloorMod round toward negative infinity (the index arithmetic of tiled loops);
 * integer overflow wraps as in the scalar unit. A vector operand (lanes > 1) works
 * lane by lane; both operands must have the same lanes (Broadcast a scalar first).
 *
 * Node list (type key "ir.<Name>", Python `tilecore.ir.<Name>`):
 *   IntImm FloatImm StringImm Var
 *   Add Sub Mul Div Mod FloorDiv FloorMod Min Max     (BinaryOp, dtype of the operands)
 *   EQ NE LT LE GT GE                                 (BinaryOp, dtype bool with the lanes)
 *   And Or Not                                         (bool operands)
 *   Select Cast Let Ramp Broadcast Call
 *   BufferLoad (a Ramp index loads a vector)  BufferRegion (a window, for tile intrinsics)
 */
#ifndef TILECORE_IR_EXPR_H_
#define TILECORE_IR_EXPR_H_

#include <optional>
#include <string>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ir/type.h"

namespace tilecore {
namespace ir {

using ffi::Any;
using ffi::Array;
using ffi::Map;

// ---------------------------------------------------------------------------
// PrimExpr
// ---------------------------------------------------------------------------
class PrimExprNode : public Object {
 public:
  DataType dtype;
  Span span;
  TILECORE_FFI_DECLARE_OBJECT_INFO("ir.PrimExpr", PrimExprNode, Object);
};

/*! \brief Any expression. C++ ints and floats convert to int32 / float32 immediates. */
class PrimExpr : public ObjectRef {
 public:
  PrimExpr(int32_t value);  // NOLINT(*)
  PrimExpr(float value);    // NOLINT(*)
  DataType dtype() const { return get()->dtype; }
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(PrimExpr, ObjectRef, PrimExprNode);
};

// ---------------------------------------------------------------------------
// Leaves
// ---------------------------------------------------------------------------
class IntImmNode : public PrimExprNode {
 public:
  int64_t value{0};
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.IntImm", IntImmNode, PrimExprNode);
};
/*! \brief An integer or bool constant; ValueError if `value` does not fit `dtype`. */
class IntImm : public PrimExpr {
 public:
  IntImm(DataType dtype, int64_t value, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(IntImm, PrimExpr, IntImmNode);
};

class FloatImmNode : public PrimExprNode {
 public:
  double value{0};
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.FloatImm", FloatImmNode, PrimExprNode);
};
class FloatImm : public PrimExpr {
 public:
  FloatImm(DataType dtype, double value, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(FloatImm, PrimExpr, FloatImmNode);
};

/*! \brief A string argument of an intrinsic (e.g. an engine name); dtype handle. */
class StringImmNode : public PrimExprNode {
 public:
  String value;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.StringImm", StringImmNode, PrimExprNode);
};
class StringImm : public PrimExpr {
 public:
  explicit StringImm(String value, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(StringImm, PrimExpr, StringImmNode);
};

/*!
 * \brief A variable. Identity is the object, not the name: two Vars named "i" are
 * different variables. Bound by PrimFunc params, For, Let/LetStmt, and buffers'
 * fields at Allocate / buffer_map. A pointer variable has dtype handle and a
 * PointerType annotation.
 */
class VarNode : public PrimExprNode {
 public:
  String name;
  /*! \brief PrimType or PointerType; may be undefined for scalars. */
  Type type_annotation;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Var", VarNode, PrimExprNode);
};
class Var : public PrimExpr {
 public:
  explicit Var(String name, DataType dtype = DataType::Int(32), Span span = Span());
  /*! \brief A pointer variable: dtype handle, annotation PointerType(element, scope). */
  Var(String name, Type type_annotation, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Var, PrimExpr, VarNode);
};

// ---------------------------------------------------------------------------
// Binary and logical operators
// ---------------------------------------------------------------------------
class BinaryOpNode : public PrimExprNode {
 public:
  PrimExpr a;
  PrimExpr b;
  TILECORE_FFI_DECLARE_OBJECT_INFO("ir.BinaryOp", BinaryOpNode, PrimExprNode);
};
class BinaryOp : public PrimExpr {
 public:
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(BinaryOp, PrimExpr, BinaryOpNode);
};

#define TILECORE_IR_DECLARE_BINARY(Name)                                           \
  class Name##Node : public BinaryOpNode {                                         \
   public:                                                                         \
    TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir." #Name, Name##Node, BinaryOpNode); \
  };                                                                               \
  class Name : public BinaryOp {                                                   \
   public:                                                                         \
    Name(PrimExpr a, PrimExpr b, Span span = Span());                              \
    TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Name, BinaryOp, Name##Node);            \
  };

// Arithmetic: operands of one dtype (not bool, not handle); result of that dtype.
TILECORE_IR_DECLARE_BINARY(Add)
TILECORE_IR_DECLARE_BINARY(Sub)
TILECORE_IR_DECLARE_BINARY(Mul)
TILECORE_IR_DECLARE_BINARY(Div)       // truncating for integers (C, TC1 `div`)
TILECORE_IR_DECLARE_BINARY(Mod)       // remainder of truncating division (C `%`); integers only
TILECORE_IR_DECLARE_BINARY(FloorDiv)  // integers only
TILECORE_IR_DECLARE_BINARY(FloorMod)  // integers only; result has the divisor's sign
TILECORE_IR_DECLARE_BINARY(Min)
TILECORE_IR_DECLARE_BINARY(Max)
// Comparisons: operands of one dtype; result bool with the operands' lanes.
TILECORE_IR_DECLARE_BINARY(EQ)
TILECORE_IR_DECLARE_BINARY(NE)
TILECORE_IR_DECLARE_BINARY(LT)
TILECORE_IR_DECLARE_BINARY(LE)
TILECORE_IR_DECLARE_BINARY(GT)
TILECORE_IR_DECLARE_BINARY(GE)
// Logic: bool operands of equal lanes.
TILECORE_IR_DECLARE_BINARY(And)
TILECORE_IR_DECLARE_BINARY(Or)
#undef TILECORE_IR_DECLARE_BINARY

class NotNode : public PrimExprNode {
 public:
  PrimExpr a;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Not", NotNode, PrimExprNode);
};
class Not : public PrimExpr {
 public:
  explicit Not(PrimExpr a, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Not, PrimExpr, NotNode);
};

// ---------------------------------------------------------------------------
// Other expressions
// ---------------------------------------------------------------------------
/*! \brief `condition ? true_value : false_value`; both values are evaluated. */
class SelectNode : public PrimExprNode {
 public:
  PrimExpr condition;
  PrimExpr true_value;
  PrimExpr false_value;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Select", SelectNode, PrimExprNode);
};
class Select : public PrimExpr {
 public:
  Select(PrimExpr condition, PrimExpr true_value, PrimExpr false_value, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Select, PrimExpr, SelectNode);
};

/*! \brief Conversion with TC1's rules (round to nearest even, saturate; docs/tc1.md). */
class CastNode : public PrimExprNode {
 public:
  PrimExpr value;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Cast", CastNode, PrimExprNode);
};
class Cast : public PrimExpr {
 public:
  /*! \brief TypeError if the lanes differ. */
  Cast(DataType dtype, PrimExpr value, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Cast, PrimExpr, CastNode);
};

/*! \brief `let var = value in body`. */
class LetNode : public PrimExprNode {
 public:
  Var var;
  PrimExpr value;
  PrimExpr body;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Let", LetNode, PrimExprNode);
};
class Let : public PrimExpr {
 public:
  Let(Var var, PrimExpr value, PrimExpr body, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Let, PrimExpr, LetNode);
};

/*! \brief The vector `base + stride * [0, 1, ..., lanes-1]`. */
class RampNode : public PrimExprNode {
 public:
  PrimExpr base;
  PrimExpr stride;
  int64_t lanes{1};
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Ramp", RampNode, PrimExprNode);
};
class Ramp : public PrimExpr {
 public:
  Ramp(PrimExpr base, PrimExpr stride, int64_t lanes, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Ramp, PrimExpr, RampNode);
};

/*! \brief A vector whose every lane is the scalar `value`. */
class BroadcastNode : public PrimExprNode {
 public:
  PrimExpr value;
  int64_t lanes{1};
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Broadcast", BroadcastNode, PrimExprNode);
};
class Broadcast : public PrimExpr {
 public:
  Broadcast(PrimExpr value, int64_t lanes, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Broadcast, PrimExpr, BroadcastNode);
};

/*!
 * \brief A call of an intrinsic by name ("tir.core_id", "tile.dma_copy", ...). The
 * name must be in the intrinsic table (intrinsics.h), which also checks the
 * arguments; the dtype is `void` for intrinsics evaluated for their effect.
 */
class CallNode : public PrimExprNode {
 public:
  String op;
  Array<PrimExpr> args;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Call", CallNode, PrimExprNode);
};
class Call : public PrimExpr {
 public:
  /*! \brief `dtype` may be left void to take the intrinsic's result rule. */
  Call(DataType dtype, String op, Array<PrimExpr> args, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Call, PrimExpr, CallNode);
};

// ---------------------------------------------------------------------------
// Buffers
// ---------------------------------------------------------------------------
/*!
 * \brief A multi-dimensional view of memory: element (i0, ..., in) lives at
 * `data + (elem_offset + sum(ik * strides[k])) * sizeof(dtype)`; empty strides
 * mean row-major contiguous. `scope` is global, shared or local.
 */
class BufferNode : public Object {
 public:
  Var data;
  DataType dtype;
  Array<PrimExpr> shape;
  Array<PrimExpr> strides;
  PrimExpr elem_offset;
  String scope;
  String name;
  Span span;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.Buffer", BufferNode, Object);
};
class Buffer : public ObjectRef {
 public:
  /*! \brief Checks: data is a handle Var, strides empty or of the shape's rank,
   * scope valid, shape/strides integers. */
  Buffer(Var data, DataType dtype, Array<PrimExpr> shape, Array<PrimExpr> strides,
         PrimExpr elem_offset, String scope, String name, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Buffer, ObjectRef, BufferNode);
};

/*! \brief A new buffer with a fresh data var (pointer in `scope`), contiguous, offset 0. */
Buffer DeclBuffer(Array<PrimExpr> shape, DataType dtype, String name, String scope = "global",
                  Span span = Span());

/*!
 * \brief `buffer[indices]`. A Ramp index (at most one, usually the last) loads a
 * vector: dtype is the buffer's dtype with the Ramp's lanes.
 */
class BufferLoadNode : public PrimExprNode {
 public:
  Buffer buffer;
  Array<PrimExpr> indices;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.BufferLoad", BufferLoadNode, PrimExprNode);
};
class BufferLoad : public PrimExpr {
 public:
  BufferLoad(Buffer buffer, Array<PrimExpr> indices, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(BufferLoad, PrimExpr, BufferLoadNode);
};

/*!
 * \brief The window `buffer[begin[0] : begin[0] + extents[0], ...]`, an operand of
 * tile intrinsics (DMA, matrix and vector-engine commands); dtype handle.
 */
class BufferRegionNode : public PrimExprNode {
 public:
  Buffer buffer;
  Array<PrimExpr> begin;
  Array<PrimExpr> extents;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.BufferRegion", BufferRegionNode, PrimExprNode);
};
class BufferRegion : public PrimExpr {
 public:
  /*! \brief TypeError if the ranks differ from the buffer's. */
  BufferRegion(Buffer buffer, Array<PrimExpr> begin, Array<PrimExpr> extents, Span span = Span());
  /*! \brief The whole buffer. */
  static BufferRegion Full(Buffer buffer, Span span = Span());
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(BufferRegion, PrimExpr, BufferRegionNode);
};

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_IR_EXPR_H_
