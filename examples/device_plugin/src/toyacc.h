// examples/device_plugin/src/toyacc.h — toyacc, a device added to tilecore out of tree.
//
// toyacc is a pretend accelerator: a stack machine that runs a small bytecode.
// Its memory is host memory in disguise, and its "chip" is the interpreter in
// bytecode.cc. The four pieces tilecore needs from any device each live in one file:
//
//   target.cc       the target kind "toyacc" and its options   (target::RegisterTargetKind)
//   device_api.cc   where toyacc arrays live                    (runtime::RegisterDeviceAPI)
//   codegen.cc      Kernel IR -> toyacc bytecode                (codegen.build_toyacc)
//   module.cc       the "toyacc" module kind: run, show, save   (runtime.module.loadbinary_toyacc)
//
// This header holds what they share: the device type number and the bytecode.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilecore/ir/type.h"
#include "tilecore/runtime/kernel.h"

namespace toyacc {

// [toyacc.device_type.begin]
/// The DLPack device type of toyacc arrays. Types 0..63 exist; tilecore's own devices
/// use the DLPack numbers (cpu 1, npu 12), so a plugin picks one DLPack leaves free.
inline constexpr int32_t kDeviceType = 32;
/// toyacc:0 .. toyacc:3.
inline constexpr int32_t kNumDevices = 4;
// [toyacc.device_type.end]

// [toyacc.isa.begin]
/// The bytecode: one instruction per line of text, `op [dtype] [operand]`.
/// Every value on the stack is a 64-bit slot: integers (and bool) sign- or zero-
/// extended from their dtype, floats as doubles rounded to their dtype.
enum class Op : uint8_t {
  kPush,      // push <dtype> <literal>      -> v
  kGet,       // get <slot>                  -> locals[slot]
  kSet,       // set <slot>               v  ->              locals[slot] = v
  kLoad,      // load <dtype> <param>     i  -> param[i]
  kStore,     // store <dtype> <param>  i v  ->              param[i] = v
  kBinary,    // add|sub|...|ge <dtype> a b  -> a op b       (comparisons give a bool)
  kNot,       // not                      v  -> !v
  kSelect,    // select <dtype>       c t f  -> c ? t : f
  kCast,      // cast <dtype> <from>      v  -> v converted
  kJump,      // jump <label>
  kJumpZero,  // jumpz <label>            v  ->              jump if v == 0
  kRet,       // ret
};

/// Binary operators, spelled as in the text. div/mod truncate (as C and TC1 do);
/// floordiv/floormod round down (as Python does).
inline const char* const kBinaryOps[] = {"add",      "sub", "mul", "div", "mod", "floordiv",
                                         "floormod", "min", "max", "eq",  "ne",  "lt",
                                         "le",       "gt",  "ge",  "and", "or"};

struct Insn {
  Op op;
  tilecore::ir::DataType dtype{};  // of the operands (push, load, store, binary, select, cast)
  tilecore::ir::DataType from{};   // cast: the source dtype
  int64_t operand = 0;             // slot, param, binary operator index, jump target, int literal
  double literal = 0;              // float literal of push
};
// [toyacc.isa.end]

/// One kernel of a module: its signature and its code.
struct Kernel {
  std::string name;
  std::vector<tilecore::runtime::KernelParam> params;
  std::vector<std::string> slots;  // local names: one per parameter, then loop and let variables
  int64_t stack_size = 0;          // the deepest the stack gets (checked by the codegen)
  std::vector<Insn> code;          // jump operands are indices into `code`
};

/// The text form of kernels (labels for jump targets, names for params and slots):
/// the module's source and its saved form. Assemble reads it back; ValueError
/// naming the line when it is malformed.
std::string Print(const std::vector<Kernel>& kernels);
std::vector<Kernel> Assemble(const std::string& text);

/// A buffer argument as the interpreter sees it: host memory and its element count.
struct BufferView {
  char* data = nullptr;
  int64_t size = 0;
};

/// Runs `k`. args[i] is a BufferView for a buffer parameter, or the int64/double
/// value of a scalar. Errors (index out of range, division by zero) name the kernel,
/// the pc and the instruction.
struct Arg {
  BufferView buffer;
  int64_t i = 0;
  double f = 0;
};
void Run(const Kernel& k, const std::vector<Arg>& args);

/// A "toyacc" runtime module running `kernels` on toyacc:<device_id> (module.cc).
tilecore::runtime::Module ModuleCreate(std::vector<Kernel> kernels, int32_t device_id);

}  // namespace toyacc
