/*
 * src/compiler/host_tfidf.cc — the host kernel of TfIdfVectorizer (ai.onnx, opset 9) over
 * integer tokens: per row of X (int32 or int64, [C] or [N, C]) the occurrences of the n-grams
 * of pool_int64s, with lengths min_gram_length..max_gram_length and up to max_skip_count tokens
 * skipped between consecutive items, at each n-gram's ngram_indexes entry of the float32 output
 * ([max(ngram_indexes) + 1] or [N, that]). Each occurrence of n-gram j at output element i:
 * TF adds 1 to Y[i]; TFIDF adds weights[j] (1 without weights); IDF sets Y[i] to weights[j]
 * (1 without weights). String tokens (pool_strings) are refused: no tensor of strings reaches
 * a kernel.
 *
 * The counting is ONNX's reference (onnx/reference/ops/op_tfidf_vectorizer.py) and ONNX
 * Runtime's: for each skip distance s = 1..max_skip_count + 1 and each start position, a walk
 * down a trie of the pool's n-grams over the tokens start, start + s, start + 2s, ..., counting
 * every n-gram met whose length is at least min_gram_length; unigrams are counted at s = 1
 * only. An n-gram listed twice in the pool counts at the entry of its last listing, and the
 * n-grams of lengths outside min..max still take their place in the numbering.
 *
 * Weights follow the operator's text ("the i-th element in weights is the weight of the i-th
 * n-gram in pool", as many as ngram_indexes) and ONNX Runtime since 1.32, which weighs each
 * occurrence as it is found, in float32. ONNX's reference (and ONNX Runtime before 1.32) weighs
 * output element i by weights[i] after counting: the two agree when ngram_indexes is the
 * identity, but for TFIDF's rounding (count * weight rounded once there, the weight added per
 * occurrence here: the last bit may differ).
 *
 * The pool is known when compiling, so the trie is built then and flattened into tables the
 * kernel writes into locals when it starts: node 0 is the root, the children of node v are the
 * edges [first[v], first[v + 1]), sorted by token (key[e]), and the child over edge e is node
 * e + 1 (nodes are numbered breadth first); per node the output index and the weight of the
 * n-gram ending there. Rationale: a walk step is a binary search of one node's children, so a
 * pool of thousands of n-grams costs a few comparisons per token and skip distance instead of
 * one per n-gram, and the code grows with the pool only by its tables, packed (Fill).
 */
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

const DataType kI64 = DataType::Int(64);
const DataType kI32 = DataType::Int(32);
const DataType kF32 = DataType::Float(32);

/*! \brief Whether attribute `name` is given (present and not None). */
bool Given(const Map<String, Any>& attrs, const std::string& name) {
  auto v = attrs.Get(String(name));
  return v && !v->is_none();
}

/*! \brief An ints attribute; empty when not given. */
std::vector<int64_t> Ints(const Map<String, Any>& attrs, const std::string& name) {
  return Given(attrs, name) ? AttrInts(attrs, name, {}) : std::vector<int64_t>{};
}

/*! \brief What a TfIdfVectorizer node asks, with its pool as a flattened trie. */
struct Form {
  std::string mode;
  int64_t min_n = 0, max_n = 0, max_skip = 0;
  /*! \brief The output's last dimension: max(ngram_indexes) + 1. */
  int64_t width = 0;
  /*! \brief Whether hits add or set their n-gram's weight (IDF and TFIDF with weights). */
  bool weighted = false;
  /*! \brief The trie (see the header): key per edge, first edge per node (and one past the
   * last), output index per node (-1: no n-gram of the pool ends there), and the weight of the
   * n-gram ending at each node (when weighted). */
  std::vector<int64_t> key, first, out;
  std::vector<double> weight;
};

/*! \brief Fills `f` from the node; "" or the reason the kernel cannot take it. */
std::string ReadForm(const std::string& op, const Map<String, Any>& attrs,
                     const std::vector<TensorSpec>& in, Form* f) {
  auto strings = Given(attrs, "pool_strings")
                     ? attrs.Get(String("pool_strings"))->try_cast<Array<Any>>()
                     : std::nullopt;
  if (strings && !strings->empty())
    return op +
           ": string n-grams (pool_strings) do not run on the host; only integer tokens "
           "(pool_int64s) do";
  std::string w = NeedInputs(op, in, 1, 1);
  if (!w.empty()) return w;
  DataType t = in[0]->dtype;
  if (t != kI32 && t != kI64)
    return op + ": X has dtype " + t.str() + "; the host kernel counts int32 and int64 tokens";
  if (in[0]->shape.size() > 2)
    return op + ": X has rank " + std::to_string(in[0]->shape.size()) + " (expected [C] or [N, C])";
  for (const char* a : {"mode", "min_gram_length", "max_gram_length", "max_skip_count",
                        "ngram_counts", "ngram_indexes"})
    if (!Given(attrs, a)) return op + ": the attribute " + a + " is missing";
  f->mode = AttrStr(attrs, "mode", "");
  if (f->mode != "TF" && f->mode != "IDF" && f->mode != "TFIDF")
    return op + ": mode `" + f->mode + "` (expected TF, IDF or TFIDF)";
  f->min_n = AttrInt(attrs, "min_gram_length", 0);
  f->max_n = AttrInt(attrs, "max_gram_length", 0);
  f->max_skip = AttrInt(attrs, "max_skip_count", 0);
  if (f->min_n < 1 || f->max_n < f->min_n)
    return op + ": min_gram_length " + std::to_string(f->min_n) + " and max_gram_length " +
           std::to_string(f->max_n) + " (expected 1 <= min <= max)";
  if (f->max_skip < 0) return op + ": max_skip_count " + std::to_string(f->max_skip) + " < 0";
  std::vector<int64_t> pool = Ints(attrs, "pool_int64s");
  std::vector<int64_t> counts = Ints(attrs, "ngram_counts");
  std::vector<int64_t> indexes = Ints(attrs, "ngram_indexes");
  if (indexes.empty()) return op + ": ngram_indexes is empty";
  for (int64_t i : indexes)
    if (i < 0) return op + ": ngram_indexes holds the negative index " + std::to_string(i);
  f->width = *std::max_element(indexes.begin(), indexes.end()) + 1;
  if (f->width > (int64_t{1} << 31) - 1)
    return op + ": ngram_indexes asks for an output of width " + std::to_string(f->width);
  const int64_t P = static_cast<int64_t>(pool.size());
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] < 0 || counts[i] > P || (i > 0 && counts[i] < counts[i - 1]))
      return op + ": ngram_counts[" + std::to_string(i) + "] = " + std::to_string(counts[i]) +
             " (expected non-decreasing starts within the pool of " + std::to_string(P) +
             " tokens)";
  std::vector<double> weights = AttrFloats(attrs, "weights");
  f->weighted = f->mode != "TF" && !weights.empty();
  if (f->weighted && weights.size() != indexes.size())
    return op + ": weights has " + std::to_string(weights.size()) +
           " values; ONNX asks for one per n-gram of the pool, as many as ngram_indexes has (" +
           std::to_string(indexes.size()) + ")";

  // the trie, as the reference fills it: n-grams numbered from 1 in pool order, those of a
  // length outside [min, max] numbered but not inserted, a repeated n-gram renumbered
  std::vector<std::map<int64_t, int64_t>> child(1);
  std::vector<int64_t> id(1, 0);
  int64_t next_id = 1;
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t n = static_cast<int64_t>(i) + 1;
    const int64_t start = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : P;
    const int64_t grams = (end - start) / n;
    if (n < f->min_n || n > f->max_n) {
      next_id += grams;
      continue;
    }
    for (int64_t g = 0; g < grams; ++g, ++next_id) {
      int64_t v = 0;
      for (int64_t k = 0; k < n; ++k) {
        int64_t token = pool[start + g * n + k];
        auto it = child[v].find(token);
        if (it != child[v].end()) {
          v = it->second;
          continue;
        }
        const int64_t fresh = static_cast<int64_t>(id.size());
        child[v].emplace(token, fresh);
        child.emplace_back();
        id.push_back(0);
        v = fresh;
      }
      if (next_id > static_cast<int64_t>(indexes.size()))
        return op + ": the pool has more n-grams than ngram_indexes has entries (" +
               std::to_string(indexes.size()) + ")";
      id[v] = next_id;
    }
  }
  // flattened breadth first: a node's number is one past its incoming edge's
  std::vector<int64_t> order{0};
  for (size_t q = 0; q < order.size(); ++q) {
    int64_t v = order[q];
    f->first.push_back(static_cast<int64_t>(f->key.size()));
    f->out.push_back(id[v] ? indexes[id[v] - 1] : -1);
    if (f->weighted) f->weight.push_back(id[v] ? weights[id[v] - 1] : 0.0);
    for (const auto& [token, c] : child[v]) {
      f->key.push_back(token);
      order.push_back(c);
    }
  }
  f->first.push_back(static_cast<int64_t>(f->key.size()));
  return "";
}

std::string CheckTfIdf(const std::string& op, const Map<String, Any>& attrs,
                       const std::vector<TensorSpec>& in) {
  Form f;
  return ReadForm(op, attrs, in, &f);
}

/*!
 * \brief The statements that set `table[i] = values[i]` for every i: the values, as offsets from
 * the least in the fewest power-of-two bits that hold them, packed 64 / bits to an int64 word
 * stored as a constant into a local (appended to `locals`), then unpacked by a loop. With
 * `as_float` each value is a float32's bits, the table float32.
 * Rationale: a C compiler at -O2 spends about a millisecond on each constant store (alias walks
 * over the long chain of stores, SLP vectorisation): the kernel of a pool of 8,000 n-grams took
 * 29 s of gcc's time stored value by value, 14 s packed (four table values to a word but for
 * the weights' two).
 */
Stmt Fill(const Buffer& table, const std::vector<int64_t>& values, bool as_float,
          std::vector<Buffer>* locals) {
  const int64_t n = static_cast<int64_t>(values.size());
  const int64_t lo = *std::min_element(values.begin(), values.end());
  uint64_t span = 0;
  for (int64_t v : values)
    span = std::max(span, static_cast<uint64_t>(v) - static_cast<uint64_t>(lo));
  int bits = 1;
  while (bits < 64 && (span >> bits) != 0) bits *= 2;
  std::vector<Stmt> s;
  if (bits == 64) {  // nothing to pack: the values stored as they are
    for (int64_t i = 0; i < n; ++i)
      s.push_back(BufferStore(table, make_const(table->dtype, values[i]), {I32(i)}));
    return Seq(s);
  }
  const int64_t per = 64 / bits, words = (n + per - 1) / per;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  std::vector<uint64_t> packed(words, 0);
  for (int64_t i = 0; i < n; ++i)
    packed[i / per] |= ((static_cast<uint64_t>(values[i]) - static_cast<uint64_t>(lo)) & mask)
                       << (i % per * bits);
  Buffer blob = Local({words}, kI64, std::string(table->name) + "_packed");
  locals->push_back(blob);
  for (int64_t j = 0; j < words; ++j)
    s.push_back(BufferStore(blob, IntImm(kI64, static_cast<int64_t>(packed[j])), {I32(j)}));
  s.push_back(Loop("i", n, [&](PrimExpr i) -> Stmt {
    PrimExpr word = BufferLoad(blob, {floordiv(i, I32(per))});
    PrimExpr shift = cast(kI64, floormod(i, I32(per)) * I32(bits));
    PrimExpr v = IntImm(kI64, lo) + Call(kI64, "tir.bitwise_and",
                                         {Call(kI64, "tir.shift_right", {word, shift}),
                                          IntImm(kI64, static_cast<int64_t>(mask))});
    v = as_float ? Call(kF32, "tir.reinterpret", {cast(kI32, v)}) : cast(table->dtype, v);
    return BufferStore(table, v, {i});
  }));
  return Seq(s);
}

PrimFunc LowerTfIdf(const OpCall& call) {
  NeedOutputs(call, 1);
  const std::string& op = call.op_type;
  Form f;
  std::string why = ReadForm(op, call.attrs, call.inputs, &f);
  if (!why.empty()) TILECORE_THROW(ValueError) << "LowerHostOp(" << op << "): " << why;
  std::vector<int64_t> in = Shape(call.inputs[0]), out = Shape(call.outputs[0]);
  const int64_t rows = in.size() == 2 ? in[0] : 1, C = in.size() == 2 ? in[1] : Numel(in);
  const int64_t W = f.width;
  std::vector<int64_t> expect = in.size() == 2 ? std::vector<int64_t>{rows, W} : std::vector{W};
  if (call.outputs[0]->dtype != kF32 || out != expect) {
    std::string shape;
    for (int64_t d : expect) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    TILECORE_THROW(ValueError) << "LowerHostOp(" << op << "): the output is "
                               << call.outputs[0]->dtype.str() << " of " << out.size()
                               << " dims; expected float32 [" << shape << "]";
  }
  Params p = MakeParams(call);
  Buffer X = Flat(p.in[0], "X"), Y = Flat(p.out[0], "Y");
  std::vector<Stmt> s{
      Loop("i", rows * W, [&](PrimExpr i) -> Stmt { return BufferStore(Y, F32(0), {i}); })};

  // the counts: one walk down the trie per row, skip distance and start
  const int64_t E = static_cast<int64_t>(f.key.size()), N = E + 1;
  std::vector<Buffer> tables;
  if (E > 0 && C > 0) {
    Buffer key = Local({E}, kI64, "key"), first = Local({N + 1}, kI32, "first"),
           at = Local({N}, kI32, "at");
    tables = {key, first, at};
    s.push_back(Fill(key, f.key, false, &tables));
    s.push_back(Fill(first, f.first, false, &tables));
    s.push_back(Fill(at, f.out, false, &tables));
    Buffer wt;
    if (f.weighted) {
      wt = Local({N}, kF32, "weight");
      tables.push_back(wt);
      std::vector<int64_t> bits;
      for (double w : f.weight) {
        float x = static_cast<float>(w);
        int32_t b;
        std::memcpy(&b, &x, sizeof b);
        bits.push_back(b);
      }
      s.push_back(Fill(wt, bits, true, &tables));
    }
    Scalar node(kI32, "node"), item(kI32, "item"), len(kI32, "len"), go(kI32, "go"), lo(kI32, "lo"),
        hi(kI32, "hi");
    tables.insert(tables.end(), {node.buf, item.buf, len.buf, go.buf, lo.buf, hi.buf});
    // unigrams are counted at skip distance 1 only, so with max_gram_length 1 the other
    // distances count nothing; and distances of C or more fit no longer n-gram in a row
    const int64_t skips = f.max_n >= 2 ? std::min(f.max_skip + 1, std::max<int64_t>(C - 1, 1)) : 1;
    const int64_t min_later = std::max<int64_t>(f.min_n, 2);
    auto First = [&](PrimExpr v) { return BufferLoad(first, {v}); };
    // a hit of the n-gram ending at `node`, at output element i: TF (and TFIDF without
    // weights) counts it, TFIDF adds its weight, IDF sets its weight (or 1)
    auto Count = [&](PrimExpr i) -> Stmt {
      PrimExpr w = f.weighted ? BufferLoad(wt, {node.get()}) : F32(1);
      return BufferStore(Y, f.mode == "IDF" ? w : BufferLoad(Y, {i}) + w, {i});
    };
    s.push_back(Loop("r", rows, [&](PrimExpr r) -> Stmt {
      return Loop("s", skips, [&](PrimExpr s0) -> Stmt {
        PrimExpr dist = s0 + I32(1);
        PrimExpr shortest = select(eq(s0, I32(0)), I32(f.min_n), I32(min_later));
        return Loop("st", C, [&](PrimExpr st) -> Stmt {
          PrimExpr v = node.get(), token = cast(kI64, BufferLoad(X, {r * I32(C) + item.get()}));
          // the child of `node` over `token`: the first edge whose key is not less
          Stmt search = While(lo.get() < hi.get(), [&]() -> Stmt {
            Var mid("mid", kI32);
            return LetStmt(
                mid, floordiv(lo.get() + hi.get(), I32(2)),
                IfThenElse(BufferLoad(key, {mid}) < token, lo.set(mid + I32(1)), hi.set(mid)));
          }());
          PrimExpr hit = BufferLoad(at, {node.get()});
          Stmt step = Seq({
              node.set(lo.get() + I32(1)),
              IfThenElse(len.get() >= shortest && hit >= I32(0), Count(r * I32(W) + hit)),
              len.set(len.get() + I32(1)),
              item.set(item.get() + dist),
              go.set(select(item.get() < I32(C) && First(node.get()) < First(node.get() + I32(1)),
                            I32(1), I32(0))),
          });
          Stmt walk = Seq({
              lo.set(First(v)),
              hi.set(First(v + I32(1))),
              search,
              go.set(I32(0)),
              IfThenElse(lo.get() < First(v + I32(1)),
                         IfThenElse(eq(BufferLoad(key, {lo.get()}), token), step)),
          });
          return Seq({node.set(I32(0)), item.set(st), len.set(I32(1)), go.set(I32(1)),
                      While(ne(go.get(), I32(0)), walk)});
        });
      });
    }));
  }

  Stmt body = Seq(s);
  for (const Buffer& b : tables) body = Allocate(b, body);
  return MakeFunc(call, p, body);
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("TfIdfVectorizer", HostKernel{host::CheckTfIdf, host::LowerTfIdf, 1});
});

}  // namespace compiler
}  // namespace tilecore
