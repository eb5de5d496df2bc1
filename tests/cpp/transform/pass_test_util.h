// tests/cpp/transform/pass_test_util.h — what the transform tests share: running one
// kernel pass on one function, wrapping a body into a function, reading a pass report.
#ifndef TILECORE_TESTS_TRANSFORM_PASS_TEST_UTIL_H_
#define TILECORE_TESTS_TRANSFORM_PASS_TEST_UTIL_H_

#include <string>
#include <vector>

#include "tilecore/ir/function.h"
#include "tilecore/transform/pass.h"

namespace tilecore {
namespace test_util {

/*! \brief Runs `pass` on a module holding only `f` and returns the function it gives back. */
inline ir::PrimFunc ApplyPass(transform::Pass pass, ir::PrimFunc f) {
  return pass(ir::IRModule::FromFunction(f))->functions.items().front().second;
}

/*! \brief A function whose params are the buffers' data vars, in order, each bound to its buffer.
 */
inline ir::PrimFunc Wrap(const std::vector<ir::Buffer>& buffers, ir::Stmt body) {
  ffi::Array<ir::Var> params;
  ffi::Map<ir::Var, ir::Buffer> buffer_map;
  for (const ir::Buffer& b : buffers) {
    params.push_back(b->data);
    buffer_map.Set(b->data, b);
  }
  return ir::PrimFunc(params, body, buffer_map);
}
inline ir::PrimFunc Wrap(const ir::Buffer& buffer, ir::Stmt body) {
  return Wrap(std::vector<ir::Buffer>{buffer}, body);
}

/*! \brief The lines of the report a pass leaves in attr `key` (an Array<String>), joined
 * with newlines; "" when the pass left none. */
inline std::string ReportLines(const ir::PrimFunc& f, const char* key) {
  auto report = f->attrs.Get(key);
  if (!report.has_value()) return "";
  std::string text;
  for (const ffi::String& line : report->cast<ffi::Array<ffi::String>>())
    text += std::string(line.view()) + "\n";
  return text;
}

}  // namespace test_util
}  // namespace tilecore
#endif  // TILECORE_TESTS_TRANSFORM_PASS_TEST_UTIL_H_
