/*
 * src/compiler/kernel_util.h — small helpers the op strategies build Kernel IR with:
 * constants, statement sequences, loops, DMA with waits, buffer views, and the rule
 * that hands work items to cores round robin.
 */
#ifndef TILECORE_SRC_COMPILER_KERNEL_UTIL_H_
#define TILECORE_SRC_COMPILER_KERNEL_UTIL_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tilecore/compiler/strategy.h"
#include "tilecore/ir/op.h"
#include "tilecore/ir/stmt.h"

namespace tilecore {
namespace compiler {
namespace detail {

using namespace tilecore::ir;  // NOLINT(build/namespaces)

inline PrimExpr I32(int64_t v) { return IntImm(DataType::Int(32), v); }
inline PrimExpr F32(double v) { return FloatImm(DataType::Float(32), v); }

inline Stmt Seq(const std::vector<Stmt>& s) {
  Array<Stmt> a;
  for (const Stmt& x : s)
    if (x.defined()) a.push_back(x);
  if (a.empty()) return Evaluate(I32(0));
  return SeqStmt::Flatten(a);
}

/*! \brief The bytes of `b`'s shape, a dimension that is not a constant counted as `unknown`. */
inline int64_t ShapeBytes(const Buffer& b, int64_t unknown) {
  int64_t n = b->dtype.lane_bytes() * b->dtype.lanes();
  for (const PrimExpr& d : b->shape) {
    auto c = as_const_int(d);
    n *= c ? *c : unknown;
  }
  return n;
}

inline Stmt Intrin(const std::string& op, Array<PrimExpr> args) {
  return Evaluate(Call(DataType::Void(), String(op), args));
}

/*! \brief `for v in range(extent): body(v)`; a loop of one iteration is just body(0). */
inline Stmt Loop(const std::string& name, PrimExpr extent,
                 const std::function<Stmt(PrimExpr)>& body, ForKind kind = ForKind::kSerial) {
  if (kind == ForKind::kSerial && is_const_int(extent, 1)) return body(I32(0));
  if (kind == ForKind::kSerial && is_const_int(extent, 0)) return Stmt();
  Var v{String(name)};
  return For(v, I32(0), extent, kind, body(v));
}
inline Stmt Loop(const std::string& name, int64_t extent,
                 const std::function<Stmt(PrimExpr)>& body) {
  return Loop(name, I32(extent), body);
}

/*! \brief A region with constant extents. */
inline BufferRegion Region(const Buffer& b, const std::vector<PrimExpr>& begin,
                           const std::vector<int64_t>& ext) {
  Array<PrimExpr> bg, ex;
  for (const PrimExpr& x : begin) bg.push_back(x);
  for (int64_t e : ext) ex.push_back(I32(e));
  return BufferRegion(b, bg, ex);
}

/*! \brief A DMA and the wait for it (DMA-in uses event 0, DMA-out event 1). */
inline Stmt DmaWait(const BufferRegion& dst, const BufferRegion& src, int event) {
  return Seq({Intrin("tile.dma_copy", {dst, src, I32(event)}), Intrin("tile.wait", {I32(event)})});
}

/*! \brief A row-major view of `param`'s data with another shape (same element count). */
inline Buffer View(const Buffer& param, const std::vector<int64_t>& shape,
                   const std::string& name) {
  Array<PrimExpr> s;
  for (int64_t d : shape) s.push_back(I32(d));
  return Buffer(param->data, param->dtype, s, Array<PrimExpr>(), I32(0), param->scope,
                String(name));
}

/*!
 * \brief The data of an int64 parameter viewed as `shape` with the last dimension doubled:
 * int32 words, two per element (little endian: the low word first). TC1 has no 64-bit integers; the
 * kernel reads the words and narrows.
 */
inline Buffer Words(const Buffer& param, std::vector<int64_t> shape, const std::string& name) {
  Array<PrimExpr> s;
  shape.back() *= 2;
  for (int64_t d : shape) s.push_back(IntImm(DataType::Int(32), d));
  return Buffer(param->data, DataType::Int(32), s, Array<PrimExpr>(), IntImm(DataType::Int(32), 0),
                param->scope, String(name));
}

/*! \brief Run-time indices as `shape`: as they are, or with `wide` as int64 Words. */
inline Buffer IndexView(const Buffer& param, const std::vector<int64_t>& shape, bool wide,
                        const std::string& name) {
  return wide ? Words(param, shape, name) : View(param, shape, name);
}

/*!
 * \brief The int32 value of the int64 with words `lo`, `hi`: exact when it fits, else
 * INT32_MIN or INT32_MAX by its sign. An index beyond int32 is beyond every axis TC1
 * holds, and so is the saturated one: in-range and out-of-range indices stay what they
 * were, and the strategy treats the latter as it treats an int32 one out of range.
 */
inline PrimExpr NarrowIndex(const PrimExpr& lo, const PrimExpr& hi) {
  PrimExpr fits = eq(hi, select(lo < IntImm(DataType::Int(32), 0), IntImm(DataType::Int(32), -1),
                                IntImm(DataType::Int(32), 0)));
  return select(
      fits, lo,
      select(hi < IntImm(DataType::Int(32), 0), IntImm(DataType::Int(32), -2147483647 - 1),
             IntImm(DataType::Int(32), 2147483647)));
}

/*!
 * \brief The int32 index at word `at` of the local `L` (after the leading indices `lead`):
 * that word, or with `wide` the int64 in words at, at + 1, narrowed.
 */
inline PrimExpr LoadIndexWord(const Buffer& L, const std::vector<PrimExpr>& lead,
                              const PrimExpr& at, bool wide) {
  auto load = [&](const PrimExpr& x) {
    Array<PrimExpr> idx;
    for (const PrimExpr& e : lead) idx.push_back(e);
    idx.push_back(x);
    return BufferLoad(L, idx);
  };
  return wide ? NarrowIndex(load(at), load(at + I32(1))) : load(at);
}

/*! \brief The int32 index of element `i` along the last axis of `L` (two words each if `wide`). */
inline PrimExpr LoadIndex(const Buffer& L, const std::vector<PrimExpr>& lead, const PrimExpr& i,
                          bool wide) {
  return LoadIndexWord(L, lead, wide ? i * I32(2) : i, wide);
}

/*! \brief A negative index counted from the end of an axis of `n`, as ONNX counts it. */
inline PrimExpr WrapIndex(const PrimExpr& raw, int64_t n) {
  return select(raw < I32(0), raw + I32(n), raw);
}

/*! \brief An index clamped into [0, n): out of range reads or writes the nearest slice. */
inline PrimExpr ClampIndex(const PrimExpr& v, int64_t n) { return max(min(v, I32(n - 1)), I32(0)); }

/*!
 * \brief The row-major offset into `dims` of index tuple `j` of the local `L` (tuples of
 * dims.size() indices, two words each if `wide`): each index wrapped and clamped.
 */
inline PrimExpr TupleOffset(const Buffer& L, const PrimExpr& j, const std::vector<int64_t>& dims,
                            bool wide) {
  int64_t w = wide ? 2 : 1, tw = static_cast<int64_t>(dims.size()) * w, stride = 1;
  for (int64_t n : dims) stride *= n;
  PrimExpr off = I32(0);
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t n = dims[k];
    stride /= n;
    PrimExpr raw = LoadIndexWord(L, {}, j * I32(tw) + I32(static_cast<int64_t>(k) * w), wide);
    off = off + ClampIndex(WrapIndex(raw, n), n) * I32(stride);
  }
  return off;
}

/*! \brief The dtypes a strategy that only moves elements takes. */
inline std::vector<DataType> MovableDTypes() {
  return {DataType::Float(32), DataType::Int(32), DataType::UInt(32), DataType::Float(16),
          DataType::Int(16),   DataType::Int(8),  DataType::UInt(8),  DataType::Bool()};
}

/*! \brief "" when `indices` are int32 or int64, else the reason. */
inline std::string CheckIndexDType(const std::string& op, const TensorSpec& indices) {
  if (indices->dtype == DataType::Int(32) || indices->dtype == DataType::Int(64)) return "";
  return op + ": indices are " + indices->dtype.str() + "; the npu reads int32 and int64 indices";
}

/*! \brief A view of an L1 allocation with logical dims `dims` and element `strides`,
 * unit dims dropped (the engines take up to 4 dims). */
inline Buffer StridedView(const Buffer& alloc, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& strides, int64_t offset,
                          const std::string& name) {
  Array<PrimExpr> shape, st;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1) continue;
    shape.push_back(I32(dims[k]));
    st.push_back(I32(strides[k]));
  }
  if (shape.empty()) {
    shape.push_back(I32(1));
    st.push_back(I32(1));
  }
  return Buffer(alloc->data, alloc->dtype, shape, st, I32(offset), alloc->scope, String(name));
}

/*! \brief `body(idx)` over the non-unit dims of `dims` (the index of StridedView's views). */
inline Stmt Nest(const std::vector<int64_t>& dims,
                 const std::function<Stmt(const Array<PrimExpr>&)>& body) {
  std::vector<int64_t> ext;
  for (int64_t d : dims) {
    if (d != 1) ext.push_back(d);
  }
  if (ext.empty()) ext.push_back(1);
  std::function<Stmt(size_t, Array<PrimExpr>)> nest = [&](size_t k, Array<PrimExpr> idx) -> Stmt {
    if (k == ext.size()) return body(idx);
    static const char* names[] = {"i0", "i1", "i2", "i3"};
    return Loop(names[k], ext[k], [&](PrimExpr v) {
      Array<PrimExpr> next = idx;
      next.push_back(v);
      return nest(k + 1, next);
    });
  };
  return nest(0, {});
}

/*!
 * \brief Nest(dims, body) whose integer arithmetic the caller has bounded: its outer loop
 * carries `tile_no_overflow` = `why` (emit_tile_intrinsics.h), so an integer add, multiply
 * or sum becomes a vector command although the engine saturates where the IR wraps.
 */
inline Stmt BoundedNest(const std::vector<int64_t>& dims,
                        const std::function<Stmt(const Array<PrimExpr>&)>& body,
                        const std::string& why) {
  Stmt s = Nest(dims, body);
  const auto* f = s.as<ForNode>();
  if (f == nullptr) return s;
  Map<String, Any> ann = f->annotations;
  ann.Set(String("tile_no_overflow"), String(why));
  return For(f->loop_var, f->min, f->extent, f->kind, f->body, ann, f->span);
}

/*! \brief dst[i] = src[i] over the non-unit dims of `dims` (views from StridedView). */
inline Stmt CopyNest(const Buffer& dst, const Buffer& src, const std::vector<int64_t>& dims) {
  return Nest(dims,
              [&](const Array<PrimExpr>& i) { return BufferStore(dst, BufferLoad(src, i), i); });
}

/*! \brief Builds a loop nest around `body(indices)`: how the element-wise helpers shared by
 * strategies (matrix_precision.h, fused_epilogue.h) are told which elements to visit. */
using NestFn = std::function<Stmt(const std::function<Stmt(const Array<PrimExpr>&)>&)>;

inline Buffer Local(const std::vector<int64_t>& shape, DataType t, const std::string& name) {
  Array<PrimExpr> s;
  for (int64_t d : shape) s.push_back(I32(d));
  return DeclBuffer(s, t, String(name), "local");
}

/*! \brief This core's share of work items [0, count) spread over the cores round robin from
 * `*rotation` (which advances by count): item t runs on core (t + rotation) % cores. */
struct CoreItems {
  int64_t rot;     // the core of item 0
  PrimExpr first;  // this core's first item: (core - rot) mod cores
  PrimExpr n;      // how many items this core runs
  PrimExpr at(const PrimExpr& i, int64_t cores) const { return first + i * I32(cores); }
};

inline CoreItems ItemsOfCore(const PrimExpr& core, int64_t cores, int64_t count,
                             int64_t* rotation) {
  CoreItems c;
  c.rot = *rotation % cores;
  *rotation += count;
  c.first = floormod(core + I32(cores - c.rot), I32(cores));
  c.n = floordiv(I32(count + cores - 1) - c.first, I32(cores));
  return c;
}

/*!
 * \brief Work items [0, count) spread over the cores round robin, continuing from
 * `*rotation` (so several groups of items balance): item t runs on core
 * (t + rotation) % cores. body(t) builds one item.
 */
inline Stmt ForEachItem(const PrimExpr& core, int64_t cores, int64_t count, int64_t* rotation,
                        const std::string& name, const std::function<Stmt(PrimExpr)>& body) {
  if (count <= 0) return Stmt();
  CoreItems it = ItemsOfCore(core, cores, count, rotation);
  if (count == 1) return IfThenElse(eq(core, I32(it.rot)), body(I32(0)));
  // (an item a core from core 0: core k runs item k, under `core < count`, whose loads a
  // layer group's handoff can take as it takes a single item's)
  if (count <= cores && it.rot == 0) return IfThenElse(core < I32(count), body(core));
  return Loop(name, it.n, [&](PrimExpr i) { return body(it.at(i, cores)); });
}

/*!
 * \brief ForEachItem's items software-pipelined in two stages: front(t, slot) (loads and
 * matrix work) of item i + 1 is issued before back(t, slot) (epilogue and stores) of item
 * i, so the engines of the two stages overlap across items. Items alternate between two
 * buffer slots (0, 1); the loop is unrolled by two so every slot is a constant.
 */
inline Stmt ForEachItemPipelined(const PrimExpr& core, int64_t cores, int64_t count,
                                 int64_t* rotation, const std::string& name,
                                 const std::function<Stmt(PrimExpr, int64_t)>& front,
                                 const std::function<Stmt(PrimExpr, int64_t)>& back) {
  if (count <= 0) return Stmt();
  CoreItems it = ItemsOfCore(core, cores, count, rotation);
  if (count == 1)
    return IfThenElse(eq(core, I32(it.rot)), Seq({front(I32(0), 0), back(I32(0), 0)}));
  PrimExpr n = it.n;
  auto at = [&](PrimExpr i) { return it.at(i, cores); };
  Stmt pairs = Loop(name, floordiv(n + I32(1), I32(2)), [&](PrimExpr k) {
    PrimExpr i = k * I32(2);
    return Seq({IfThenElse(i + I32(1) < n, front(at(i + I32(1)), 1)), back(at(i), 0),
                IfThenElse(i + I32(2) < n, front(at(i + I32(2)), 0)),
                IfThenElse(i + I32(1) < n, back(at(i + I32(1)), 1))});
  });
  return IfThenElse(n > I32(0), Seq({front(at(I32(0)), 0), pairs}));
}

/*!
 * \brief ForEachItem's items in three stages a step apart: load(t, slot) of item i + 1,
 * compute(t, slot) of item i and post(t, slot) of item i - 1 are issued together, so the
 * DMA, the engine computing and the one converting overlap across items. Two buffer
 * slots; the loop is unrolled by two so every slot is a constant. With `first_load`, the
 * loads of the core's first two items (one a slot) are left out and go there instead, for
 * the caller to issue earlier: before the waits for its constants, whose loads may queue
 * behind them at the DDR.
 */
inline Stmt ForEachItemThreeStage(const PrimExpr& core, int64_t cores, int64_t count,
                                  int64_t* rotation, const std::string& name,
                                  const std::function<Stmt(PrimExpr, int64_t)>& load,
                                  const std::function<Stmt(PrimExpr, int64_t)>& compute,
                                  const std::function<Stmt(PrimExpr, int64_t)>& post,
                                  Stmt* first_load = nullptr) {
  if (count <= 0) return Stmt();
  CoreItems it = ItemsOfCore(core, cores, count, rotation);
  PrimExpr n = it.n;
  auto at = [&](PrimExpr i) { return it.at(i, cores); };
  Stmt pairs = Loop(name, floordiv(n + I32(1), I32(2)), [&](PrimExpr k) {
    PrimExpr i = k * I32(2);
    PrimExpr load_next = first_load ? i > I32(0) && i + I32(1) < n : i + I32(1) < n;
    return Seq({IfThenElse(load_next, load(at(i + I32(1)), 1)), compute(at(i), 0),
                IfThenElse(i > I32(0), post(at(i - I32(1)), 1)),
                IfThenElse(i + I32(1) < n, Seq({IfThenElse(i + I32(2) < n, load(at(i + I32(2)), 0)),
                                                compute(at(i + I32(1)), 1), post(at(i), 0)}))});
  });
  PrimExpr last = n - I32(1);
  std::vector<Stmt> steps;
  if (first_load)
    *first_load = IfThenElse(
        n > I32(0), Seq({load(at(I32(0)), 0), IfThenElse(n > I32(1), load(at(I32(1)), 1))}));
  else
    steps.push_back(load(at(I32(0)), 0));
  steps.push_back(pairs);
  steps.push_back(
      IfThenElse(eq(floormod(last, I32(2)), I32(0)), post(at(last), 0), post(at(last), 1)));
  return IfThenElse(n > I32(0), Seq(steps));
}

/*! \brief The body over cores: `for c in cores(0, n): body(c)`. */
inline Stmt OverCores(int64_t cores, const std::function<Stmt(PrimExpr)>& body) {
  return Loop("c", I32(cores), body, ForKind::kCores);
}

/*! \brief [0, n) cut into pieces of t: (count, size) of the full ones, then the rest. */
inline std::vector<std::pair<int64_t, int64_t>> Segments(int64_t n, int64_t t) {
  std::vector<std::pair<int64_t, int64_t>> s;
  if (n / t > 0) s.push_back({n / t, t});
  if (n % t > 0) s.push_back({1, n % t});
  return s;
}

/*! \brief The chunks [0, count) of a segment of a sum over K: every chunk accumulates
 * into the tile (`chunk(c, true)`) but the first of the first segment (`*first`, cleared
 * here), `start(0)`, which starts the tile (overwriting it, or onto a preset). */
inline void SumChunks(std::vector<Stmt>* s, const std::string& name, int64_t count, bool* first,
                      const std::function<Stmt(PrimExpr)>& start,
                      const std::function<Stmt(PrimExpr, bool)>& chunk) {
  if (!*first) {
    s->push_back(Loop(name, count, [&](PrimExpr c) { return chunk(c, true); }));
    return;
  }
  s->push_back(start(I32(0)));
  if (count > 1)
    s->push_back(Loop(name, count - 1, [&](PrimExpr c) { return chunk(c + I32(1), true); }));
  *first = false;
}

/*! \brief One global buffer per input and output, in order, named in0.., out0...; the
 * params the attribute `tc_in_l2` lists (indices: inputs, then outputs) are shared (L2)
 * buffers instead, as a layer group's intermediates are (ValueError on an index out of
 * range). */
struct Params {
  std::vector<Buffer> in, out;
  Array<Var> vars;
  Map<Var, Buffer> map;
};
Params MakeParams(const OpCall& call);
/*! \brief The kernel's global symbol: the op type in lower case. */
std::string KernelSymbol(const std::string& op_type);
PrimFunc MakeFunc(const OpCall& call, const Params& p, Stmt body);
/*! \brief A lower bound of the L1 a kernel's local buffers take once placed
 * (PlanLocalMemory stacks them by their allocations): the most bytes of local buffers whose
 * allocations are nested in one another, each live while those inside it are. A plan whose
 * bound passes the L1 it may use cannot fit, and is refused without its kernel pipeline. */
int64_t NestedLocalBytes(const Stmt& s);

// attributes
int64_t AttrInt(const Map<String, Any>& attrs, const std::string& name, int64_t dflt);
double AttrFloat(const Map<String, Any>& attrs, const std::string& name, double dflt);
std::string AttrStr(const Map<String, Any>& attrs, const std::string& name,
                    const std::string& dflt);
std::vector<int64_t> AttrInts(const Map<String, Any>& attrs, const std::string& name,
                              const std::vector<int64_t>& dflt);
/*! \brief A list of numbers (floats or ints) as doubles; empty when absent or None. */
std::vector<double> AttrFloats(const Map<String, Any>& attrs, const std::string& name);
bool HasAttr(const Map<String, Any>& attrs, const std::string& name);

std::vector<int64_t> Shape(const TensorSpec& t);
int64_t Numel(const std::vector<int64_t>& s);
/*! \brief "" when every input is one of `dtypes`, else the reason. */
std::string CheckDTypes(const std::vector<TensorSpec>& ins, const std::vector<DataType>& dtypes,
                        const std::string& op);
/*! \brief "" when the int8 code the attributes `scale` and `zero_point` give (an input stored
 * int8: docs/precision.md, "int8 between ops") is valid, a positive finite scale and a zero
 * point in [-128, 127] (default 0), else the reason. */
std::string CheckInt8Code(const Map<String, Any>& attrs, const std::string& scale,
                          const std::string& zero_point, const std::string& op);
/*! \brief "" when input `x` is int8 exactly when `tc_x_scale` gives its code, and that code
 * (with `tc_x_zero_point`) is valid (CheckInt8Code), else the reason: an op that reads an
 * int8 value at its code and dequantises it. */
std::string CheckInt8Input(const Map<String, Any>& attrs, const TensorSpec& x,
                           const std::string& op);

/*!
 * \brief Copies as data: an N-D block of output `dst` written from a strided window of
 * input `src` (strides in elements; 0 repeats, negative reverses), or filled with
 * `value`. Boxes of one op must not overlap in the output.
 */
struct BoxDim {
  int64_t n, ss, ds;  // extent, source stride, destination stride
};
struct Box {
  std::vector<BoxDim> dims;
  int64_t src_base = 0, dst_base = 0;
  int src = 0, dst = 0;
  bool fill = false;
  double value = 0;
};
/*! \brief The boxes as DDR-to-DDR DMA commands over the cores (strategy_layout.cc). */
Stmt EmitBoxes(const OpCall& call, const Params& p, std::vector<Box> boxes);
/*! \brief Row-major strides of a shape. */
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape);

/*! \brief This core's share of the rows of `from` ([rows, cols] viewed) copied into `to`
 * (a shared buffer) on `event`: an equal share per core, or all of it on core 0 when the
 * rows do not split evenly. The caller waits on the event and then meets the others at a
 * barrier before any core reads `to`. */
inline Stmt CopyShareOfRows(const PrimExpr& core, int64_t cores, const Buffer& from,
                            const Buffer& to, int64_t rows, int64_t cols, int event) {
  Buffer f2 = View(from, {rows, cols}, std::string(from->name.view()) + "2");
  Buffer t2 = View(to, {rows, cols}, std::string(to->name.view()) + "2");
  const bool even = rows % cores == 0;
  const int64_t share = even ? rows / cores : rows;
  PrimExpr r0 = even ? core * I32(share) : I32(0);
  Stmt copy = Intrin("tile.dma_copy", {Region(t2, {r0, I32(0)}, {share, cols}),
                                       Region(f2, {r0, I32(0)}, {share, cols}), I32(event)});
  return even ? copy : IfThenElse(eq(core, I32(0)), copy);
}

}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_SRC_COMPILER_KERNEL_UTIL_H_
