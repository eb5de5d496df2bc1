/*
 * include/tilecore/ir/function.h — PrimFunc (one kernel) and IRModule (named kernels).
 *
 * A PrimFunc's parameters are Vars: scalars (int32, float32, ...) or pointers
 * (dtype handle, PointerType annotation). `buffer_map` gives a pointer parameter a
 * Buffer view (shape, dtype, strides) that the body loads from and stores to.
 * `attrs` carries "global_symbol" (the exported name) and anything later stages
 * add (e.g. PlanLocalMemory's "local_bytes").
 */
#ifndef TILECORE_IR_FUNCTION_H_
#define TILECORE_IR_FUNCTION_H_

#include "tilecore/ir/stmt.h"

namespace tilecore {
namespace ir {

class PrimFuncNode : public Object {
 public:
  Array<Var> params;
  Map<Var, Buffer> buffer_map;
  Stmt body;
  Map<String, Any> attrs;
  Span span;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.PrimFunc", PrimFuncNode, Object);
};

class PrimFunc : public ObjectRef {
 public:
  /*! \brief ValueError if a buffer_map key is not a param or its buffer's data is not
   * that param. */
  PrimFunc(Array<Var> params, Stmt body, Map<Var, Buffer> buffer_map = Map<Var, Buffer>(),
           Map<String, Any> attrs = Map<String, Any>(), Span span = Span());
  /*! \brief The exported name: attrs["global_symbol"], or "" when absent. */
  std::string global_symbol() const;
  /*! \brief A copy with `body` replaced (passes use this). */
  PrimFunc WithBody(Stmt body) const;
  /*! \brief A copy with attrs[key] = value. */
  PrimFunc WithAttr(String key, Any value) const;
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(PrimFunc, ObjectRef, PrimFuncNode);
};

class IRModuleNode : public Object {
 public:
  Map<String, PrimFunc> functions;
  Map<String, Any> attrs;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ir.IRModule", IRModuleNode, Object);
};

class IRModule : public ObjectRef {
 public:
  explicit IRModule(Map<String, PrimFunc> functions = Map<String, PrimFunc>(),
                    Map<String, Any> attrs = Map<String, Any>());
  /*! \brief A module holding `f` under its global_symbol (or "main"). */
  static IRModule FromFunction(PrimFunc f);
  /*! \brief KeyError naming the function and the module's functions otherwise. */
  PrimFunc Lookup(const String& name) const;
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(IRModule, ObjectRef, IRModuleNode);
};

}  // namespace ir
}  // namespace tilecore
#endif  // TILECORE_IR_FUNCTION_H_
