/*
 * src/ir/expr.cc — constructors of the expression nodes (with their type checks),
 * Buffer, reflection of their fields, and the `ir.<Node>` constructors for Python.
 */
#include "tilecore/ir/expr.h"

#include <cmath>
#include <limits>

#include "tilecore/ffi/function.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/ir/intrinsics.h"

namespace tilecore {
namespace ir {

using ffi::make_object;

std::string At(const Span& span) {
  return span.defined() ? " (at " + span.str() + ")" : std::string();
}

PrimExpr::PrimExpr(int32_t value) : PrimExpr(IntImm(DataType::Int(32), value)) {}
PrimExpr::PrimExpr(float value) : PrimExpr(FloatImm(DataType::Float(32), value)) {}

IntImm::IntImm(DataType dtype, int64_t value, Span span) {
  if (!(dtype.is_integer() || dtype.is_bool()) || !dtype.is_scalar()) {
    TILECORE_THROW(TypeError) << "IntImm: dtype must be a scalar integer or bool, got "
                              << dtype.str() << At(span);
  }
  bool fits = true;
  if (dtype.is_bool()) {
    fits = value == 0 || value == 1;
  } else if (dtype.bits() < 64) {
    int64_t lo = dtype.is_int() ? -(int64_t(1) << (dtype.bits() - 1)) : 0;
    int64_t hi =
        dtype.is_int() ? (int64_t(1) << (dtype.bits() - 1)) - 1 : (int64_t(1) << dtype.bits()) - 1;
    fits = value >= lo && value <= hi;
  } else if (dtype.is_uint()) {
    fits = value >= 0;
  }
  if (!fits) {
    TILECORE_THROW(ValueError) << "IntImm: value " << value << " does not fit " << dtype.str()
                               << At(span);
  }
  auto n = make_object<IntImmNode>();
  n->dtype = dtype;
  n->value = value;
  n->span = std::move(span);
  data_ = std::move(n);
}

FloatImm::FloatImm(DataType dtype, double value, Span span) {
  if (!dtype.is_float() || !dtype.is_scalar()) {
    TILECORE_THROW(TypeError) << "FloatImm: dtype must be a scalar float, got " << dtype.str()
                              << At(span);
  }
  // A finite value that would round to infinity in its dtype is an error, as for IntImm;
  // inf and nan stay what they are. The limit is the largest value plus half an ulp.
  double limit = 0;
  if (dtype.code == kDLBfloat && dtype.bits() == 16) {
    limit = std::ldexp(1.0, 128) * (1 - std::ldexp(1.0, -9));
  } else if (dtype.code == kDLFloat && dtype.bits() == 16) {
    limit = 65520.0;
  } else if (dtype.code == kDLFloat && dtype.bits() == 32) {
    limit = std::ldexp(1.0, 128) * (1 - std::ldexp(1.0, -25));
  }
  if (limit != 0 && std::isfinite(value) && std::fabs(value) >= limit) {
    TILECORE_THROW(ValueError) << "FloatImm: value " << value << " does not fit " << dtype.str()
                               << " (it would round to infinity)" << At(span);
  }
  auto n = make_object<FloatImmNode>();
  n->dtype = dtype;
  n->value = value;
  n->span = std::move(span);
  data_ = std::move(n);
}

StringImm::StringImm(String value, Span span) {
  auto n = make_object<StringImmNode>();
  n->dtype = DataType::Handle();
  n->value = std::move(value);
  n->span = std::move(span);
  data_ = std::move(n);
}

Var::Var(String name, DataType dtype, Span span) {
  if (dtype.is_void())
    TILECORE_THROW(TypeError) << "Var `" << name.view() << "`: dtype cannot be void";
  auto n = make_object<VarNode>();
  n->dtype = dtype;
  n->name = std::move(name);
  n->span = std::move(span);
  data_ = std::move(n);
}

Var::Var(String name, Type type_annotation, Span span) {
  auto n = make_object<VarNode>();
  if (const auto* p = type_annotation.as<PrimTypeNode>()) {
    n->dtype = p->dtype;
  } else if (type_annotation.as<PointerTypeNode>()) {
    n->dtype = DataType::Handle();
  } else {
    TILECORE_THROW(TypeError) << "Var `" << name.view()
                              << "`: type annotation must be a PrimType or PointerType";
  }
  n->name = std::move(name);
  n->type_annotation = std::move(type_annotation);
  n->span = std::move(span);
  data_ = std::move(n);
}

namespace {

void CheckDefined(const PrimExpr& e, const char* node, const char* field) {
  if (!e.defined()) TILECORE_THROW(ValueError) << node << ": `" << field << "` is undefined";
}

enum class BinKind { kArith, kIntArith, kCompare, kLogic };

template <typename TNode>
ObjectPtr<TNode> MakeBinary(const char* name, BinKind kind, PrimExpr a, PrimExpr b, Span span) {
  CheckDefined(a, name, "a");
  CheckDefined(b, name, "b");
  DataType ta = a.dtype(), tb = b.dtype();
  if (ta != tb) {
    TILECORE_THROW(TypeError) << name << ": operand dtypes differ: " << ta.str() << " vs "
                              << tb.str()
                              << (ta.lanes() == tb.lanes()
                                      ? " (insert a Cast)"
                                      : " (lanes differ; Broadcast the scalar)")
                              << At(span);
  }
  switch (kind) {
    case BinKind::kArith:
    case BinKind::kCompare:
      if (ta.is_handle() || ta.is_void() || (kind == BinKind::kArith && ta.is_bool())) {
        TILECORE_THROW(TypeError) << name << ": operands must be numbers, got " << ta.str()
                                  << At(span);
      }
      break;
    case BinKind::kIntArith:
      if (!ta.is_integer()) {
        TILECORE_THROW(TypeError) << name << ": operands must be integers, got " << ta.str()
                                  << At(span);
      }
      break;
    case BinKind::kLogic:
      if (!ta.is_bool()) {
        TILECORE_THROW(TypeError) << name << ": operands must be bool, got " << ta.str()
                                  << At(span);
      }
      break;
  }
  auto n = make_object<TNode>();
  n->dtype = kind == BinKind::kCompare ? DataType::Bool(ta.lanes()) : ta;
  n->a = std::move(a);
  n->b = std::move(b);
  n->span = std::move(span);
  return n;
}

}  // namespace

#define TILECORE_IR_DEFINE_BINARY(Name, Kind)   \
  Name::Name(PrimExpr a, PrimExpr b, Span span) \
      : BinaryOp(                               \
            MakeBinary<Name##Node>(#Name, Kind, std::move(a), std::move(b), std::move(span))) {}
TILECORE_IR_DEFINE_BINARY(Add, BinKind::kArith)
TILECORE_IR_DEFINE_BINARY(Sub, BinKind::kArith)
TILECORE_IR_DEFINE_BINARY(Mul, BinKind::kArith)
TILECORE_IR_DEFINE_BINARY(Div, BinKind::kArith)
TILECORE_IR_DEFINE_BINARY(Mod, BinKind::kIntArith)
TILECORE_IR_DEFINE_BINARY(FloorDiv, BinKind::kIntArith)
TILECORE_IR_DEFINE_BINARY(FloorMod, BinKind::kIntArith)
TILECORE_IR_DEFINE_BINARY(Min, BinKind::kArith)
TILECORE_IR_DEFINE_BINARY(Max, BinKind::kArith)
TILECORE_IR_DEFINE_BINARY(EQ, BinKind::kCompare)
TILECORE_IR_DEFINE_BINARY(NE, BinKind::kCompare)
TILECORE_IR_DEFINE_BINARY(LT, BinKind::kCompare)
TILECORE_IR_DEFINE_BINARY(LE, BinKind::kCompare)
TILECORE_IR_DEFINE_BINARY(GT, BinKind::kCompare)
TILECORE_IR_DEFINE_BINARY(GE, BinKind::kCompare)
TILECORE_IR_DEFINE_BINARY(And, BinKind::kLogic)
TILECORE_IR_DEFINE_BINARY(Or, BinKind::kLogic)
#undef TILECORE_IR_DEFINE_BINARY

Not::Not(PrimExpr a, Span span) {
  CheckDefined(a, "Not", "a");
  if (!a.dtype().is_bool()) {
    TILECORE_THROW(TypeError) << "Not: operand must be bool, got " << a.dtype().str() << At(span);
  }
  auto n = make_object<NotNode>();
  n->dtype = a.dtype();
  n->a = std::move(a);
  n->span = std::move(span);
  data_ = std::move(n);
}

Select::Select(PrimExpr condition, PrimExpr true_value, PrimExpr false_value, Span span) {
  CheckDefined(condition, "Select", "condition");
  CheckDefined(true_value, "Select", "true_value");
  CheckDefined(false_value, "Select", "false_value");
  DataType c = condition.dtype(), t = true_value.dtype(), f = false_value.dtype();
  if (!c.is_bool() || (c.lanes() != 1 && c.lanes() != t.lanes())) {
    TILECORE_THROW(TypeError)
        << "Select: condition must be bool (scalar or with the values' lanes), got " << c.str()
        << " for values of " << t.str() << At(span);
  }
  if (t != f) {
    TILECORE_THROW(TypeError) << "Select: value dtypes differ: " << t.str() << " vs " << f.str()
                              << At(span);
  }
  auto n = make_object<SelectNode>();
  n->dtype = t;
  n->condition = std::move(condition);
  n->true_value = std::move(true_value);
  n->false_value = std::move(false_value);
  n->span = std::move(span);
  data_ = std::move(n);
}

Cast::Cast(DataType dtype, PrimExpr value, Span span) {
  CheckDefined(value, "Cast", "value");
  if (dtype.lanes() != value.dtype().lanes() || dtype.is_void() || value.dtype().is_void()) {
    TILECORE_THROW(TypeError) << "Cast: cannot convert " << value.dtype().str() << " to "
                              << dtype.str()
                              << (dtype.lanes() != value.dtype().lanes() ? " (lanes differ)" : "")
                              << At(span);
  }
  auto n = make_object<CastNode>();
  n->dtype = dtype;
  n->value = std::move(value);
  n->span = std::move(span);
  data_ = std::move(n);
}

Let::Let(Var var, PrimExpr value, PrimExpr body, Span span) {
  CheckDefined(value, "Let", "value");
  CheckDefined(body, "Let", "body");
  if (var.dtype() != value.dtype()) {
    TILECORE_THROW(TypeError) << "Let: variable `" << var->name.view() << "` is "
                              << var.dtype().str() << " but the value is " << value.dtype().str()
                              << At(span);
  }
  auto n = make_object<LetNode>();
  n->dtype = body.dtype();
  n->var = std::move(var);
  n->value = std::move(value);
  n->body = std::move(body);
  n->span = std::move(span);
  data_ = std::move(n);
}

Ramp::Ramp(PrimExpr base, PrimExpr stride, int64_t lanes, Span span) {
  CheckDefined(base, "Ramp", "base");
  CheckDefined(stride, "Ramp", "stride");
  if (!base.dtype().is_integer() || !base.dtype().is_scalar() || base.dtype() != stride.dtype()) {
    TILECORE_THROW(TypeError) << "Ramp: base and stride must be scalar integers of one dtype, got "
                              << base.dtype().str() << " and " << stride.dtype().str() << At(span);
  }
  if (lanes < 2 || lanes > 65535) {
    TILECORE_THROW(ValueError) << "Ramp: lanes must be in [2, 65535], got " << lanes << At(span);
  }
  auto n = make_object<RampNode>();
  n->dtype = base.dtype().with_lanes(static_cast<int>(lanes));
  n->base = std::move(base);
  n->stride = std::move(stride);
  n->lanes = lanes;
  n->span = std::move(span);
  data_ = std::move(n);
}

Broadcast::Broadcast(PrimExpr value, int64_t lanes, Span span) {
  CheckDefined(value, "Broadcast", "value");
  if (!value.dtype().is_scalar() || value.dtype().is_void()) {
    TILECORE_THROW(TypeError) << "Broadcast: value must be a scalar, got " << value.dtype().str()
                              << At(span);
  }
  if (lanes < 2 || lanes > 65535) {
    TILECORE_THROW(ValueError) << "Broadcast: lanes must be in [2, 65535], got " << lanes
                               << At(span);
  }
  auto n = make_object<BroadcastNode>();
  n->dtype = value.dtype().with_lanes(static_cast<int>(lanes));
  n->value = std::move(value);
  n->lanes = lanes;
  n->span = std::move(span);
  data_ = std::move(n);
}

Call::Call(DataType dtype, String op, Array<PrimExpr> args, Span span) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].defined()) {
      TILECORE_THROW(ValueError) << "Call `" << op.view() << "`: argument " << i << " is undefined"
                                 << At(span);
    }
  }
  DataType t;
  try {
    t = CheckIntrinsicCall(op.view(), args, dtype);
  } catch (const ffi::Error& e) {
    if (!span.defined()) throw;
    throw ffi::Error(std::string(e.kind()), std::string(e.message()) + At(span),
                     std::string(e.backtrace()));
  }
  auto n = make_object<CallNode>();
  n->dtype = t;
  n->op = std::move(op);
  n->args = std::move(args);
  n->span = std::move(span);
  data_ = std::move(n);
}

// ---------------------------------------------------------------------------
// Buffers
// ---------------------------------------------------------------------------
Buffer::Buffer(Var data, DataType dtype, Array<PrimExpr> shape, Array<PrimExpr> strides,
               PrimExpr elem_offset, String scope, String name, Span span) {
  if (!data.defined() || !data.dtype().is_handle()) {
    TILECORE_THROW(TypeError) << "Buffer `" << name.view() << "`: data must be a handle Var"
                              << At(span);
  }
  if (!IsValidScope(scope.view())) {
    TILECORE_THROW(ValueError) << "Buffer `" << name.view() << "`: unknown memory scope `"
                               << scope.view() << "` (expected global, shared or local)"
                               << At(span);
  }
  if (dtype.is_void() || dtype.is_handle()) {
    TILECORE_THROW(TypeError) << "Buffer `" << name.view() << "`: element dtype cannot be "
                              << dtype.str() << At(span);
  }
  if (!strides.empty() && strides.size() != shape.size()) {
    TILECORE_THROW(ValueError) << "Buffer `" << name.view() << "`: " << strides.size()
                               << " strides for a shape of rank " << shape.size() << At(span);
  }
  auto check_int = [&](const PrimExpr& e, const char* what, size_t i) {
    if (!e.defined() || !e.dtype().is_integer() || !e.dtype().is_scalar()) {
      TILECORE_THROW(TypeError) << "Buffer `" << name.view() << "`: " << what << "[" << i
                                << "] must be a scalar integer"
                                << (e.defined() ? ", got " + e.dtype().str() : std::string())
                                << At(span);
    }
  };
  for (size_t i = 0; i < shape.size(); ++i) check_int(shape[i], "shape", i);
  for (size_t i = 0; i < strides.size(); ++i) check_int(strides[i], "strides", i);
  if (!elem_offset.defined()) elem_offset = IntImm(DataType::Int(32), 0);
  check_int(elem_offset, "elem_offset", 0);
  auto n = make_object<BufferNode>();
  n->data = std::move(data);
  n->dtype = dtype;
  n->shape = std::move(shape);
  n->strides = std::move(strides);
  n->elem_offset = std::move(elem_offset);
  n->scope = std::move(scope);
  n->name = std::move(name);
  n->span = std::move(span);
  data_ = std::move(n);
}

Buffer DeclBuffer(Array<PrimExpr> shape, DataType dtype, String name, String scope, Span span) {
  if (!IsValidScope(scope.view())) {
    TILECORE_THROW(ValueError) << "Buffer `" << name.view() << "`: unknown memory scope `"
                               << scope.view() << "` (expected global, shared or local)"
                               << At(span);
  }
  Var data(name, PointerType(dtype, scope), span);
  return Buffer(data, dtype, std::move(shape), Array<PrimExpr>(), IntImm(DataType::Int(32), 0),
                scope, name, span);
}

namespace {
int CheckIndices(const char* node, const Buffer& buffer, const Array<PrimExpr>& indices,
                 const Span& span) {
  if (!buffer.defined()) TILECORE_THROW(ValueError) << node << ": buffer is undefined" << At(span);
  if (indices.size() != buffer->shape.size()) {
    TILECORE_THROW(ValueError) << node << ": buffer `" << buffer->name.view() << "` has rank "
                               << buffer->shape.size() << " but " << indices.size()
                               << " indices were given" << At(span);
  }
  int lanes = 1;
  for (size_t i = 0; i < indices.size(); ++i) {
    PrimExpr idx = indices[i];
    if (!idx.defined() || !idx.dtype().is_integer()) {
      TILECORE_THROW(TypeError) << node << ": index " << i << " of `" << buffer->name.view()
                                << "` must be an integer, got "
                                << (idx.defined() ? idx.dtype().str() : std::string("undefined"))
                                << At(span);
    }
    if (idx.dtype().lanes() > 1) {
      if (lanes > 1) {
        TILECORE_THROW(TypeError) << node << ": more than one vector index into `"
                                  << buffer->name.view() << "`" << At(span);
      }
      lanes = idx.dtype().lanes();
    }
  }
  return lanes;
}
}  // namespace

BufferLoad::BufferLoad(Buffer buffer, Array<PrimExpr> indices, Span span) {
  int lanes = CheckIndices("BufferLoad", buffer, indices, span);
  auto n = make_object<BufferLoadNode>();
  n->dtype = buffer->dtype.with_lanes(lanes * buffer->dtype.lanes());
  n->buffer = std::move(buffer);
  n->indices = std::move(indices);
  n->span = std::move(span);
  data_ = std::move(n);
}

BufferRegion::BufferRegion(Buffer buffer, Array<PrimExpr> begin, Array<PrimExpr> extents,
                           Span span) {
  if (!buffer.defined())
    TILECORE_THROW(ValueError) << "BufferRegion: buffer is undefined" << At(span);
  size_t rank = buffer->shape.size();
  if (begin.size() != rank || extents.size() != rank) {
    TILECORE_THROW(ValueError) << "BufferRegion: buffer `" << buffer->name.view() << "` has rank "
                               << rank << " but the region has " << begin.size() << " begins and "
                               << extents.size() << " extents" << At(span);
  }
  for (size_t i = 0; i < rank; ++i) {
    if (!begin[i].defined() || !begin[i].dtype().is_integer() || !begin[i].dtype().is_scalar() ||
        !extents[i].defined() || !extents[i].dtype().is_integer() ||
        !extents[i].dtype().is_scalar()) {
      TILECORE_THROW(TypeError) << "BufferRegion: dimension " << i << " of `" << buffer->name.view()
                                << "` needs scalar integer begin and extent" << At(span);
    }
  }
  auto n = make_object<BufferRegionNode>();
  n->dtype = DataType::Handle();
  n->buffer = std::move(buffer);
  n->begin = std::move(begin);
  n->extents = std::move(extents);
  n->span = std::move(span);
  data_ = std::move(n);
}

BufferRegion BufferRegion::Full(Buffer buffer, Span span) {
  Array<PrimExpr> begin;
  for (size_t i = 0; i < buffer->shape.size(); ++i)
    begin.push_back(IntImm(buffer->shape[i].dtype(), 0));
  return BufferRegion(buffer, begin, buffer->shape, std::move(span));
}

// ---------------------------------------------------------------------------
// Reflection
// ---------------------------------------------------------------------------
namespace {
constexpr int64_t kIgnore = kTCFFIFieldSEqualIgnore;
constexpr int64_t kDef = kTCFFIFieldDefRegion;

template <typename TNode>
void ReflectBinary() {
  ffi::reflection::ObjectDef<TNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("a", &BinaryOpNode::a)
      .def_ro("b", &BinaryOpNode::b)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
}
}  // namespace

TILECORE_FFI_STATIC_INIT_BLOCK({
  namespace refl = ffi::reflection;
  refl::ObjectDef<IntImmNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("value", &IntImmNode::value)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<FloatImmNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("value", &FloatImmNode::value)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<StringImmNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("value", &StringImmNode::value)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<VarNode>(kTCFFISEqualFreeVar)
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("name", &VarNode::name, "a hint for printing; not part of identity", kIgnore)
      .def_ro("type_annotation", &VarNode::type_annotation, "PrimType or PointerType, may be None",
              kTCFFIFieldMayBeNone)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  ReflectBinary<AddNode>();
  ReflectBinary<SubNode>();
  ReflectBinary<MulNode>();
  ReflectBinary<DivNode>();
  ReflectBinary<ModNode>();
  ReflectBinary<FloorDivNode>();
  ReflectBinary<FloorModNode>();
  ReflectBinary<MinNode>();
  ReflectBinary<MaxNode>();
  ReflectBinary<EQNode>();
  ReflectBinary<NENode>();
  ReflectBinary<LTNode>();
  ReflectBinary<LENode>();
  ReflectBinary<GTNode>();
  ReflectBinary<GENode>();
  ReflectBinary<AndNode>();
  ReflectBinary<OrNode>();
  refl::ObjectDef<NotNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("a", &NotNode::a)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<SelectNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("condition", &SelectNode::condition)
      .def_ro("true_value", &SelectNode::true_value)
      .def_ro("false_value", &SelectNode::false_value)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<CastNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("value", &CastNode::value)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<LetNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("var", &LetNode::var, "the bound variable", kDef)
      .def_ro("value", &LetNode::value)
      .def_ro("body", &LetNode::body)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<RampNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("base", &RampNode::base)
      .def_ro("stride", &RampNode::stride)
      .def_ro("lanes", &RampNode::lanes)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<BroadcastNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("value", &BroadcastNode::value)
      .def_ro("lanes", &BroadcastNode::lanes)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<CallNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("op", &CallNode::op, "intrinsic name (see ir.ListIntrinsics)")
      .def_ro("args", &CallNode::args)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<BufferNode>()
      .def_ro("data", &BufferNode::data, "pointer variable of the storage")
      .def_ro("dtype", &BufferNode::dtype, "element dtype")
      .def_ro("shape", &BufferNode::shape)
      .def_ro("strides", &BufferNode::strides, "element strides; empty = row-major contiguous")
      .def_ro("elem_offset", &BufferNode::elem_offset, "offset of element 0, in elements")
      .def_ro("scope", &BufferNode::scope, "global, shared or local")
      .def_ro("name", &BufferNode::name, "a hint for printing", kIgnore)
      .def_ro("span", &BufferNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<BufferLoadNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("buffer", &BufferLoadNode::buffer)
      .def_ro("indices", &BufferLoadNode::indices)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
  refl::ObjectDef<BufferRegionNode>()
      .def_ro("dtype", &PrimExprNode::dtype)
      .def_ro("buffer", &BufferRegionNode::buffer)
      .def_ro("begin", &BufferRegionNode::begin)
      .def_ro("extents", &BufferRegionNode::extents)
      .def_ro("span", &PrimExprNode::span, "source location", kIgnore | kTCFFIFieldMayBeNone);
});

// ---------------------------------------------------------------------------
// Constructors for Python (`ir.<Node>`); dtypes may be strings.
// ---------------------------------------------------------------------------
TILECORE_REGISTER_GLOBAL("ir.IntImm")
    .set_body_typed([](ffi::AnyView dtype, int64_t value, Span span) {
      return IntImm(DataTypeFromAny(dtype, "IntImm"), value, span);
    });
TILECORE_REGISTER_GLOBAL("ir.FloatImm")
    .set_body_typed([](ffi::AnyView dtype, double value, Span span) {
      return FloatImm(DataTypeFromAny(dtype, "FloatImm"), value, span);
    });
TILECORE_REGISTER_GLOBAL("ir.StringImm").set_body_typed([](String value, Span span) {
  return StringImm(value, span);
});
TILECORE_REGISTER_GLOBAL("ir.Var").set_body_typed([](String name, ffi::AnyView dtype_or_type,
                                                     Span span) {
  if (auto t = dtype_or_type.as<Type>(); t.has_value() && t->defined()) return Var(name, *t, span);
  return Var(name, DataTypeFromAny(dtype_or_type, "Var"), span);
});
#define TILECORE_IR_REGISTER_BINARY(Name)                                                      \
  TILECORE_REGISTER_GLOBAL("ir." #Name).set_body_typed([](PrimExpr a, PrimExpr b, Span span) { \
    return Name(a, b, span);                                                                   \
  });
TILECORE_IR_REGISTER_BINARY(Add)
TILECORE_IR_REGISTER_BINARY(Sub)
TILECORE_IR_REGISTER_BINARY(Mul)
TILECORE_IR_REGISTER_BINARY(Div)
TILECORE_IR_REGISTER_BINARY(Mod)
TILECORE_IR_REGISTER_BINARY(FloorDiv)
TILECORE_IR_REGISTER_BINARY(FloorMod)
TILECORE_IR_REGISTER_BINARY(Min)
TILECORE_IR_REGISTER_BINARY(Max)
TILECORE_IR_REGISTER_BINARY(EQ)
TILECORE_IR_REGISTER_BINARY(NE)
TILECORE_IR_REGISTER_BINARY(LT)
TILECORE_IR_REGISTER_BINARY(LE)
TILECORE_IR_REGISTER_BINARY(GT)
TILECORE_IR_REGISTER_BINARY(GE)
TILECORE_IR_REGISTER_BINARY(And)
TILECORE_IR_REGISTER_BINARY(Or)
#undef TILECORE_IR_REGISTER_BINARY
TILECORE_REGISTER_GLOBAL("ir.Not").set_body_typed([](PrimExpr a, Span span) {
  return Not(a, span);
});
TILECORE_REGISTER_GLOBAL("ir.Select")
    .set_body_typed([](PrimExpr c, PrimExpr t, PrimExpr f, Span span) {
      return Select(c, t, f, span);
    });
TILECORE_REGISTER_GLOBAL("ir.Cast").set_body_typed([](ffi::AnyView dtype, PrimExpr value,
                                                      Span span) {
  return Cast(DataTypeFromAny(dtype, "Cast"), value, span);
});
TILECORE_REGISTER_GLOBAL("ir.Let").set_body_typed([](Var var, PrimExpr value, PrimExpr body,
                                                     Span span) {
  return Let(var, value, body, span);
});
TILECORE_REGISTER_GLOBAL("ir.Ramp").set_body_typed([](PrimExpr base, PrimExpr stride, int64_t lanes,
                                                      Span span) {
  return Ramp(base, stride, lanes, span);
});
TILECORE_REGISTER_GLOBAL("ir.Broadcast")
    .set_body_typed([](PrimExpr value, int64_t lanes, Span span) {
      return Broadcast(value, lanes, span);
    });
TILECORE_REGISTER_GLOBAL("ir.Call").set_body_typed([](ffi::AnyView dtype, String op,
                                                      Array<PrimExpr> args, Span span) {
  DataType t = dtype.is_none() ? DataType::Void() : DataTypeFromAny(dtype, "Call");
  return Call(t, op, args, span);
});
TILECORE_REGISTER_GLOBAL("ir.Buffer")
    .set_body_typed([](Var data, ffi::AnyView dtype, Array<PrimExpr> shape, Array<PrimExpr> strides,
                       PrimExpr elem_offset, String scope, String name, Span span) {
      return Buffer(data, DataTypeFromAny(dtype, "Buffer"), shape, strides, elem_offset, scope,
                    name, span);
    });
TILECORE_REGISTER_GLOBAL("ir.DeclBuffer")
    .set_body_typed([](Array<PrimExpr> shape, ffi::AnyView dtype, String name, String scope,
                       Span span) {
      return DeclBuffer(shape, DataTypeFromAny(dtype, "DeclBuffer"), name, scope, span);
    });
TILECORE_REGISTER_GLOBAL("ir.BufferLoad")
    .set_body_typed([](Buffer buffer, Array<PrimExpr> indices, Span span) {
      return BufferLoad(buffer, indices, span);
    });
TILECORE_REGISTER_GLOBAL("ir.BufferRegion")
    .set_body_typed([](Buffer buffer, Array<PrimExpr> begin, Array<PrimExpr> extents, Span span) {
      return BufferRegion(buffer, begin, extents, span);
    });

}  // namespace ir
}  // namespace tilecore
