/*
 * include/tilecore/compiler/compiler_attrs.h — the compiler's own node attributes: the
 * `tc_*` attributes the driver's passes (python/tilecore/compiler/) put on a node for
 * the op strategies and host kernels (src/compiler/strategy_*.cc, host_*.cc) to read,
 * declared once with their kind and meaning (docs/compiler.md, "Compiler attributes").
 *
 * The two sides agree on these by name only, and a reader takes an absent attribute as its
 * default: a name misspelt on either side was silently ignored, and a value of another
 * kind failed deep inside a lowering. CheckCompilerAttrs refuses both, with a reason naming
 * the attribute, where attributes enter the C++ compiler: HasStrategy / LowerOp
 * (strategy.h) and HasHostKernel / LowerHostOp (host_kernel.h). Only names starting with
 * `tc_` are checked: an op's ONNX attributes, and the importer's (`_opset`, ...), pass.
 *
 * A kind accepts what the attribute's readers (kernel_util.h) accept:
 *   int     an int or a bool (AttrInt takes both)
 *   float   a float, an int or a bool (AttrFloat converts them)
 *   string  a string (AttrStr)
 *   ints    a list of ints or bools, maybe empty (AttrInts)
 *   attrs   a family `<prefix>.<name>` (tc_lut.*): the attributes of an op fused into
 *           this one, each under its own name; ONNX ones pass, `tc_` ones are checked
 *           as declared here
 * None is no kind: every reader refuses it.
 */
#ifndef TILECORE_COMPILER_COMPILER_ATTRS_H_
#define TILECORE_COMPILER_COMPILER_ATTRS_H_

#include <string>
#include <vector>

#include "tilecore/ffi/any.h"
#include "tilecore/ffi/container/map.h"
#include "tilecore/ffi/string.h"

namespace tilecore {
namespace compiler {

using ffi::Any;
using ffi::Map;
using ffi::String;

enum class AttrKind { kInt, kFloat, kString, kInts, kAttrs };

struct CompilerAttr {
  /*! \brief The attribute's name; a family's ends in ".*" (kind kAttrs). */
  const char* name;
  AttrKind kind;
  /*! \brief One line: what it means; who sets it (the pass, the Python module); who reads it. */
  const char* doc;
};

/*! \brief "int", "float", "string", "ints" or "attrs". */
const char* AttrKindName(AttrKind kind);

/*! \brief Every declared `tc_*` attribute, in the order of the docs' table. */
const std::vector<CompilerAttr>& CompilerAttrs();

/*!
 * \brief "" when every attribute of `attrs` whose name starts with `tc_` is declared and of
 * its kind, else the reason, naming `op_type` and the attribute: "unknown compiler
 * attribute `tc_foo` (declared: ...)" or "attribute `tc_x_scale` is a string; it is a float".
 */
std::string CheckCompilerAttrs(const std::string& op_type, const Map<String, Any>& attrs);

}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_COMPILER_COMPILER_ATTRS_H_
