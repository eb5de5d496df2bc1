/*
 * examples/extension/src/tilecore_ext.cc — a separately built library that adds
 * functions to tilecore's registry.
 *
 * Build it (see CMakeLists.txt or Makefile), then from Python:
 *
 *   tilecore.load_library("build/libtilecore_ext.so")
 *   tilecore.get_global_func("ext.myadd")(4, 5)      # 9
 */
#include <string>

#include "tilecore/ffi/function.h"
#include "tilecore/ffi/reflection.h"

namespace {

using tilecore::ffi::Any;
using tilecore::ffi::Function;
using tilecore::ffi::PackedArgs;

// A packed body reads its arguments by index and converts them itself.
void MyAdd(PackedArgs args, Any* rv) {
  int64_t a = args[0].cast<int64_t>();
  int64_t b = args[1].cast<int64_t>();
  *rv = a + b;
}

}  // namespace

TILECORE_REGISTER_GLOBAL("ext.myadd").set_body(MyAdd);

// A typed body: arguments are checked and converted before the lambda runs, and a
// mismatch names the function, the argument and both types.
TILECORE_REGISTER_GLOBAL("ext.mul").set_body_typed([](double a, double b) { return a * b; });

// Functions are values: this one calls back whatever it is given (the seed's callhello).
TILECORE_REGISTER_GLOBAL("ext.callhello").set_body_typed([](Function f) {
  return f(std::string("hello world"));
});

// C++ can also look a function up by name and call it, whatever language registered it:
// a Python hook registered with @tilecore.register_func runs in the middle of C++ work,
// as TVM's call_packed("name", ...) does from generated code.
TILECORE_REGISTER_GLOBAL("ext.call_global").set_body([](PackedArgs args, Any* rv) {
  Function f = Function::GetGlobalRequired(args[0].cast<std::string>());
  *rv = f.CallPacked(args.Slice(1));
});

// Object kinds come with extensions too. Fields declared once give Python attribute
// access, printing, JSON and structural equality.
namespace ext {

class ShapeNode : public tilecore::ffi::Object {
 public:
  tilecore::ffi::String name;
  TILECORE_FFI_DECLARE_OBJECT_INFO("ext.Shape", ShapeNode, tilecore::ffi::Object);
};

class RectNode : public ShapeNode {
 public:
  double width{0};
  double height{0};
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("ext.Rect", RectNode, ShapeNode);
};

TILECORE_FFI_STATIC_INIT_BLOCK({
  namespace refl = tilecore::ffi::reflection;
  refl::ObjectDef<ShapeNode>().def_ro("name", &ShapeNode::name, "what the shape is called");
  refl::ObjectDef<RectNode>()
      .def_ro("width", &RectNode::width, "in metres")
      .def_ro("height", &RectNode::height, "in metres");
});

}  // namespace ext

TILECORE_REGISTER_GLOBAL("ext.Rect").set_body_typed([](std::string name, double w, double h) {
  auto n = tilecore::ffi::make_object<ext::RectNode>();
  n->name = name;
  n->width = w;
  n->height = h;
  return tilecore::ffi::ObjectRef(std::move(n));
});
