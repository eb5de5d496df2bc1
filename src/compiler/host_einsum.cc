/*
 * src/compiler/host_einsum.cc — the host kernel of Einsum in any numeric dtype: every
 * output element is the sum, over the labels the output drops, of the product of the
 * operands' elements (explicit `->` or implicit output, `...` broadcasting, repeated
 * labels for diagonals), accumulated in float64 or int64.
 */
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "host_util.h"
#include "tilecore/ffi/reflection.h"

namespace tilecore {
namespace compiler {
namespace host {
namespace {

// Labels are ints: a letter is its character; the k-th dim of the ellipsis (right-aligned
// over every operand) is kEllipsis + k.
constexpr int kEllipsis = 1000;

struct Equation {
  std::vector<std::vector<int>> inputs;  // per operand, one label per dim
  std::vector<int> output;
  std::map<int, int64_t> size;
};

/*! \brief `term` as labels for a tensor of `rank` dims (ell: the ellipsis rank of the whole
 * equation). */
std::vector<int> Labels(const std::string& term, int64_t rank, int64_t ell, std::string* err) {
  std::vector<int> out;
  size_t dots = term.find("...");
  int64_t letters = static_cast<int64_t>(term.size()) - (dots == std::string::npos ? 0 : 3);
  for (size_t i = 0; i < term.size(); ++i) {
    if (dots != std::string::npos && i == dots) {
      int64_t e = rank < 0 ? ell : rank - letters;
      if (e < 0) {
        *err = "term `" + term + "` has more labels than its operand has dims";
        return {};
      }
      for (int64_t k = ell - e; k < ell; ++k) out.push_back(kEllipsis + static_cast<int>(k));
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(term[i]))) {
      out.push_back(term[i]);
    } else {
      *err = "unexpected character `" + std::string(1, term[i]) + "` in term `" + term + "`";
      return {};
    }
  }
  if (rank >= 0 && static_cast<int64_t>(out.size()) != rank)
    *err = "term `" + term + "` has " + std::to_string(out.size()) +
           " labels for an operand of rank " + std::to_string(rank);
  return out;
}

/*! \brief The parsed equation for these input shapes; `err` set when it does not fit them. */
Equation Parse(std::string eq, const std::vector<std::vector<int64_t>>& shapes, std::string* err) {
  Equation r;
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t at = 0;;) {
    size_t comma = lhs.find(',', at);
    terms.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (terms.size() != shapes.size()) {
    *err = "the equation has " + std::to_string(terms.size()) + " operand(s), the node " +
           std::to_string(shapes.size());
    return r;
  }
  int64_t ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].find("...") == std::string::npos) continue;
    int64_t letters = static_cast<int64_t>(terms[i].size()) - 3;
    ell = std::max<int64_t>(ell, static_cast<int64_t>(shapes[i].size()) - letters);
  }
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    r.inputs.push_back(Labels(terms[i], static_cast<int64_t>(shapes[i].size()), ell, err));
    if (!err->empty()) return r;
    for (size_t d = 0; d < r.inputs[i].size(); ++d) {
      int l = r.inputs[i][d];
      int64_t n = shapes[i][d];
      auto it = r.size.find(l);
      if (it == r.size.end() || it->second == 1) {
        r.size[l] = n;
      } else if (n != 1 && n != it->second) {
        *err = "label sizes disagree (" + std::to_string(it->second) + " and " + std::to_string(n) +
               ")";
        return r;
      }
      ++count[l];
    }
  }
  if (arrow != std::string::npos) {
    r.output = Labels(eq.substr(arrow + 2), -1, ell, err);
    for (int l : r.output)
      if (!r.size.count(l)) *err = "the output has a label no operand has";
  } else {  // implicit: the ellipsis, then the letters seen once, in alphabetical order
    for (int64_t k = 0; k < ell; ++k) r.output.push_back(kEllipsis + static_cast<int>(k));
    for (const auto& [l, c] : count)
      if (l < kEllipsis && c == 1) r.output.push_back(l);
  }
  return r;
}

std::vector<std::vector<int64_t>> Shapes(const std::vector<TensorSpec>& in) {
  std::vector<std::vector<int64_t>> s;
  for (const TensorSpec& t : in) s.push_back(Shape(t));
  return s;
}

std::string CheckEinsum(const std::string& op, const Map<String, Any>& attrs,
                        const std::vector<TensorSpec>& in) {
  std::string w = NeedInputs(op, in, 1, 16);
  if (!w.empty()) return w;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].defined()) return op + ": input " + std::to_string(i) + " is omitted";
    if (in[i]->dtype.is_bool() || in[i]->dtype != in[0]->dtype)
      return op + ": inputs must share one numeric dtype, got " + in[i]->dtype.str();
  }
  std::string err;
  Parse(AttrStr(attrs, "equation", ""), Shapes(in), &err);
  return err.empty() ? "" : op + ": " + err;
}

PrimFunc LowerEinsum(const OpCall& call) {
  NeedOutputs(call, 1);
  std::string err;
  Equation eq = Parse(AttrStr(call.attrs, "equation", ""), Shapes(call.inputs), &err);
  if (!err.empty()) TILECORE_THROW(ValueError) << "LowerHostOp(Einsum): " << err;
  std::vector<int64_t> out_sizes;
  for (int l : eq.output) out_sizes.push_back(eq.size[l]);
  std::vector<int64_t> want = Shape(call.outputs[0]);
  if (want != out_sizes)
    TILECORE_THROW(ValueError) << "LowerHostOp(Einsum): the output shape does not fit the equation";
  std::vector<int> reduced;
  for (const auto& [l, n] : eq.size)
    if (std::find(eq.output.begin(), eq.output.end(), l) == eq.output.end()) reduced.push_back(l);
  std::vector<int64_t> red_sizes;
  int64_t red_total = 1, out_total = 1;
  for (int l : reduced) red_sizes.push_back(eq.size[l]), red_total *= eq.size[l];
  for (int64_t n : out_sizes) out_total *= n;

  Params p = MakeParams(call);
  std::vector<Buffer> X;
  for (size_t i = 0; i < p.in.size(); ++i) X.push_back(Flat(p.in[i], "X" + std::to_string(i)));
  Buffer Y = Flat(p.out[0], "Y");
  DataType dt = X[0]->dtype;
  DataType acc_t = dt.is_float() ? DataType::Float(64) : DataType::Int(64);
  Scalar acc(acc_t, "acc");
  Stmt body = Loop("o", std::max<int64_t>(out_total, 0), [&](PrimExpr o) {
    std::vector<PrimExpr> oc = Unravel(o, out_sizes);
    Stmt sum = Loop("r", red_total, [&](PrimExpr r) {
      std::vector<PrimExpr> rc = Unravel(r, red_sizes);
      std::map<int, PrimExpr> at;
      for (size_t d = 0; d < eq.output.size(); ++d) at[eq.output[d]] = oc[d];
      for (size_t d = 0; d < reduced.size(); ++d) at[reduced[d]] = rc[d];
      PrimExpr prod;
      for (size_t i = 0; i < X.size(); ++i) {
        std::vector<int64_t> shape = Shape(call.inputs[i]);
        std::vector<PrimExpr> c;
        for (size_t d = 0; d < shape.size(); ++d)
          c.push_back(shape[d] == 1 ? I32(0) : at[eq.inputs[i][d]]);
        PrimExpr v = cast(acc_t, BufferLoad(X[i], {Ravel(c, shape)}));
        prod = prod.defined() ? prod * v : v;
      }
      return acc.set(acc.get() + prod);
    });
    return Seq({acc.set(make_zero(acc_t)), sum, BufferStore(Y, Convert(Y->dtype, acc.get()), {o})});
  });
  return MakeFunc(call, p, Seq({acc.scope(body)}));
}

}  // namespace
}  // namespace host

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterHostKernel("Einsum", HostKernel{host::CheckEinsum, host::LowerEinsum, -1});
});

}  // namespace compiler
}  // namespace tilecore
