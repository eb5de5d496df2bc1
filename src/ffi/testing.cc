/*
 * src/ffi/testing.cc — functions and an object kind that exist for tests and
 * benchmarks of the FFI itself (`testing.*`).
 */
#include <thread>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace ffi {

/*! \brief A small reflected kind used by attribute, JSON and structural-equality tests. */
class TestObjectNode : public Object {
 public:
  int64_t value{0};
  String name;
  Any payload;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("testing.TestObject", TestObjectNode, Object);
};

/*! \brief A variable kind: compared by binding, not by name (for structural-equality tests). */
class TestVarNode : public Object {
 public:
  String name;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("testing.TestVar", TestVarNode, Object);
};

/*! \brief `let var = value in body`: `var` is a binding site. */
class TestLetNode : public Object {
 public:
  Any var;
  Any value;
  Any body;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("testing.TestLet", TestLetNode, Object);
};

TILECORE_FFI_STATIC_INIT_BLOCK({
  namespace refl = reflection;
  refl::ObjectDef<TestObjectNode>()
      .def_rw("value", &TestObjectNode::value, "an integer")
      .def_ro("name", &TestObjectNode::name, "a string")
      .def_ro("payload", &TestObjectNode::payload, "any value");
  refl::ObjectDef<TestVarNode>(kTCFFISEqualFreeVar)
      .def_ro("name", &TestVarNode::name, "a hint; not part of identity", kTCFFIFieldSEqualIgnore);
  refl::ObjectDef<TestLetNode>()
      .def_ro("var", &TestLetNode::var, "the bound variable", kTCFFIFieldDefRegion)
      .def_ro("value", &TestLetNode::value)
      .def_ro("body", &TestLetNode::body);
});

TILECORE_REGISTER_GLOBAL("testing.nop").set_body([](PackedArgs, Any*) {});

TILECORE_REGISTER_GLOBAL("testing.echo").set_body([](PackedArgs args, Any* rv) {
  if (args.size() != 1) {
    TILECORE_THROW(TypeError)
        << "Mismatched number of arguments when calling `testing.echo(0: Any) -> Any`: "
           "expected 1 but got "
        << args.size();
  }
  *rv = Any(args[0]);
});

TILECORE_REGISTER_GLOBAL("testing.apply").set_body([](PackedArgs args, Any* rv) {
  if (args.size() < 1) TILECORE_THROW(TypeError) << "testing.apply(f, *args): missing f";
  Function f = args[0].cast<Function>();
  *rv = f.CallPacked(args.Slice(1));
});

TILECORE_REGISTER_GLOBAL("testing.apply_in_thread")
    .set_body([](PackedArgs args, Any* rv) {
      if (args.size() < 1)
        TILECORE_THROW(TypeError) << "testing.apply_in_thread(f, *args): missing f";
      Function f = args[0].cast<Function>();
      // Own the arguments: the new thread must not depend on the caller's borrowed views.
      std::vector<Any> owned;
      for (int32_t i = 1; i < args.size(); ++i) owned.emplace_back(args[i]);
      Any result;
      std::exception_ptr error;
      std::thread worker([&] {
        try {
          result = f.CallPacked(PackedArgs(reinterpret_cast<const AnyView*>(owned.data()),
                                           static_cast<int32_t>(owned.size())));
        } catch (...) {
          error = std::current_exception();
        }
      });
      worker.join();
      if (error) std::rethrow_exception(error);
      *rv = std::move(result);
    })
    .release_gil();

TILECORE_REGISTER_GLOBAL("testing.call_n").set_body_typed([](Function f, int64_t n) {
  for (int64_t i = 0; i < n; ++i) f(i);
});

TILECORE_REGISTER_GLOBAL("testing.object_use_count").set_body([](PackedArgs args, Any* rv) {
  if (args.size() != 1 || args[0].type_index() < kTCFFIStaticObjectBegin) {
    TILECORE_THROW(TypeError) << "testing.object_use_count expects one object";
  }
  // Minus the reference this call's argument conversion does not take (views are borrowed).
  *rv = static_cast<int64_t>(args[0].raw()->v_obj->ref_count);
});

TILECORE_REGISTER_GLOBAL("testing.make_test_object")
    .set_body_typed([](int64_t value, String name, Any payload) {
      auto n = make_object<TestObjectNode>();
      n->value = value;
      n->name = name;
      n->payload = payload;
      return ObjectRef(std::move(n));
    });

TILECORE_REGISTER_GLOBAL("testing.make_test_var").set_body_typed([](String name) {
  auto n = make_object<TestVarNode>();
  n->name = name;
  return ObjectRef(std::move(n));
});

TILECORE_REGISTER_GLOBAL("testing.make_test_let").set_body_typed([](Any var, Any value, Any body) {
  auto n = make_object<TestLetNode>();
  n->var = var;
  n->value = value;
  n->body = body;
  return ObjectRef(std::move(n));
});

TILECORE_REGISTER_GLOBAL("testing.device_test")
    .set_body_typed([](DLDevice dev, int32_t type, int32_t id) {
      if (dev.device_type != type || dev.device_id != id) {
        TILECORE_THROW(ValueError) << "testing.device_test: got " << DLDeviceToString(dev);
      }
      return dev;
    });

TILECORE_REGISTER_GLOBAL("testing.throw").set_body_typed([](std::string kind, std::string message) {
  throw Error(kind, message, CaptureBacktrace(1));
});

}  // namespace ffi
}  // namespace tilecore
