// src/ir/load_checks.cc — the IR constructors' checks, run on every IR node JSON load builds.
//
// LoadJSON sets fields one by one (it refuses None where a field may not be None); a
// node whose fields disagree (an Add of int32 and float32, a buffer in scope
// "no_such_scope", an IntImm that does not fit its dtype) is refused here by building the
// same node with its constructor, which checks, and comparing the dtype it derives.
#include "tilecore/ffi/dtype.h"
#include "tilecore/ffi/error.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/ffi/serialization.h"
#include "tilecore/ir/function.h"
#include "tilecore/ir/functor.h"

namespace tilecore {
namespace ir {
namespace {

void CheckDType(const DataType& t, const char* field = "dtype") {
  const DLDataType& d = static_cast<const DLDataType&>(t);
  auto bad = [&]() {
    TILECORE_THROW(ValueError) << "field `" << field << "`: not a dtype (code " << int(d.code)
                               << ", bits " << int(d.bits) << ", lanes " << d.lanes << ")";
  };
  if (d.code == kDLOpaqueHandle)
    return;  // a pointer or void: "handle", whatever its bits and lanes
  if (d.bits == 0 || d.lanes == 0) bad();
  DLDataType back{};
  try {
    back = ffi::StringToDLDataType(ffi::DLDataTypeToString(d));
  } catch (const ffi::Error&) {
    bad();
  }
  if (!ffi::operator==(back, d)) bad();
}

// An expression node: its dtype must be valid and the one its constructor derives.
void SameDType(const PrimExprNode* n, const PrimExpr& rebuilt) {
  if (!ffi::operator==(static_cast<const DLDataType&>(rebuilt.dtype()),
                       static_cast<const DLDataType&>(n->dtype))) {
    TILECORE_THROW(TypeError) << "dtype " << ffi::DLDataTypeToString(n->dtype)
                              << " does not match its operands ("
                              << ffi::DLDataTypeToString(rebuilt.dtype()) << ")";
  }
}

template <typename TNode>
const TNode* As(const ffi::Object* o) {
  return static_cast<const TNode*>(o);
}

#define TILECORE_IR_BINARY_CHECK(Name)     \
  void Check##Name(const ffi::Object* o) { \
    const auto* n = As<Name##Node>(o);     \
    CheckDType(n->dtype);                  \
    SameDType(n, Name(n->a, n->b));        \
  }
TILECORE_IR_FOR_EACH_BINARY(TILECORE_IR_BINARY_CHECK)
#undef TILECORE_IR_BINARY_CHECK

void CheckIntImm(const ffi::Object* o) {
  const auto* n = As<IntImmNode>(o);
  CheckDType(n->dtype);
  IntImm(n->dtype, n->value);
}
void CheckFloatImm(const ffi::Object* o) {
  const auto* n = As<FloatImmNode>(o);
  CheckDType(n->dtype);
  FloatImm(n->dtype, n->value);
}
void CheckVar(const ffi::Object* o) {
  const auto* n = As<VarNode>(o);
  CheckDType(n->dtype);
  if (n->type_annotation.defined()) {
    SameDType(n, Var(n->name, n->type_annotation));
  } else {
    SameDType(n, Var(n->name, n->dtype));
  }
}
void CheckNot(const ffi::Object* o) {
  const auto* n = As<NotNode>(o);
  SameDType(n, Not(n->a));
}
void CheckSelect(const ffi::Object* o) {
  const auto* n = As<SelectNode>(o);
  SameDType(n, Select(n->condition, n->true_value, n->false_value));
}
void CheckCast(const ffi::Object* o) {
  const auto* n = As<CastNode>(o);
  CheckDType(n->dtype);
  Cast(n->dtype, n->value);
}
void CheckLet(const ffi::Object* o) {
  const auto* n = As<LetNode>(o);
  SameDType(n, Let(n->var, n->value, n->body));
}
void CheckRamp(const ffi::Object* o) {
  const auto* n = As<RampNode>(o);
  SameDType(n, Ramp(n->base, n->stride, n->lanes));
}
void CheckBroadcast(const ffi::Object* o) {
  const auto* n = As<BroadcastNode>(o);
  SameDType(n, Broadcast(n->value, n->lanes));
}
void CheckCall(const ffi::Object* o) {
  const auto* n = As<CallNode>(o);
  CheckDType(n->dtype);
  Call(n->dtype, n->op, n->args);
}
void CheckBuffer(const ffi::Object* o) {
  const auto* n = As<BufferNode>(o);
  CheckDType(n->dtype);
  Buffer(n->data, n->dtype, n->shape, n->strides, n->elem_offset, n->scope, n->name);
}
void CheckBufferLoad(const ffi::Object* o) {
  const auto* n = As<BufferLoadNode>(o);
  SameDType(n, BufferLoad(n->buffer, n->indices));
}
void CheckBufferRegion(const ffi::Object* o) {
  const auto* n = As<BufferRegionNode>(o);
  SameDType(n, BufferRegion(n->buffer, n->begin, n->extents));
}
void CheckBufferStore(const ffi::Object* o) {
  const auto* n = As<BufferStoreNode>(o);
  BufferStore(n->buffer, n->value, n->indices, n->predicate);
}
void CheckLetStmt(const ffi::Object* o) {
  const auto* n = As<LetStmtNode>(o);
  LetStmt(n->var, n->value, n->body);
}
void CheckFor(const ffi::Object* o) {
  const auto* n = As<ForNode>(o);
  For(n->loop_var, n->min, n->extent, n->kind, n->body, n->annotations);
}
void CheckWhile(const ffi::Object* o) {
  const auto* n = As<WhileNode>(o);
  While(n->condition, n->body);
}
void CheckIfThenElse(const ffi::Object* o) {
  const auto* n = As<IfThenElseNode>(o);
  IfThenElse(n->condition, n->then_case, n->else_case);
}
void CheckAllocate(const ffi::Object* o) {
  const auto* n = As<AllocateNode>(o);
  Allocate(n->buffer, n->body);
}
void CheckSeqStmt(const ffi::Object* o) {
  const auto* n = As<SeqStmtNode>(o);
  SeqStmt{n->seq};
}
void CheckEvaluate(const ffi::Object* o) {
  const auto* n = As<EvaluateNode>(o);
  Evaluate{n->value};
}
void CheckPrimFunc(const ffi::Object* o) {
  const auto* n = As<PrimFuncNode>(o);
  PrimFunc(n->params, n->body, n->buffer_map, n->attrs);
}
void CheckPrimType(const ffi::Object* o) {
  const auto* n = As<PrimTypeNode>(o);
  CheckDType(n->dtype);
  PrimType{n->dtype};
}
void CheckPointerType(const ffi::Object* o) {
  const auto* n = As<PointerTypeNode>(o);
  CheckDType(n->element_dtype, "element_dtype");
  PointerType(n->element_dtype, n->scope);
}

#define TILECORE_IR_REGISTER_CHECK(Name) \
  ffi::RegisterLoadCheck(Name##Node::RuntimeTypeIndex(), Check##Name);
void RegisterChecks() {
  TILECORE_IR_FOR_EACH_BINARY(TILECORE_IR_REGISTER_CHECK)
  TILECORE_IR_REGISTER_CHECK(IntImm)
  TILECORE_IR_REGISTER_CHECK(FloatImm)
  TILECORE_IR_REGISTER_CHECK(Var)
  TILECORE_IR_REGISTER_CHECK(Not)
  TILECORE_IR_REGISTER_CHECK(Select)
  TILECORE_IR_REGISTER_CHECK(Cast)
  TILECORE_IR_REGISTER_CHECK(Let)
  TILECORE_IR_REGISTER_CHECK(Ramp)
  TILECORE_IR_REGISTER_CHECK(Broadcast)
  TILECORE_IR_REGISTER_CHECK(Call)
  TILECORE_IR_REGISTER_CHECK(Buffer)
  TILECORE_IR_REGISTER_CHECK(BufferLoad)
  TILECORE_IR_REGISTER_CHECK(BufferRegion)
  TILECORE_IR_REGISTER_CHECK(BufferStore)
  TILECORE_IR_REGISTER_CHECK(LetStmt)
  TILECORE_IR_REGISTER_CHECK(For)
  TILECORE_IR_REGISTER_CHECK(While)
  TILECORE_IR_REGISTER_CHECK(IfThenElse)
  TILECORE_IR_REGISTER_CHECK(Allocate)
  TILECORE_IR_REGISTER_CHECK(SeqStmt)
  TILECORE_IR_REGISTER_CHECK(Evaluate)
  TILECORE_IR_REGISTER_CHECK(PrimFunc)
  TILECORE_IR_REGISTER_CHECK(PrimType)
  TILECORE_IR_REGISTER_CHECK(PointerType)
}
#undef TILECORE_IR_REGISTER_CHECK

}  // namespace

TILECORE_FFI_STATIC_INIT_BLOCK({ RegisterChecks(); });

}  // namespace ir
}  // namespace tilecore
