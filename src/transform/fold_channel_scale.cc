/*
 * src/transform/fold_channel_scale.cc — FoldChannelScale (fold_channel_scale.h).
 */
#include "tilecore/transform/fold_channel_scale.h"

#include "src/transform/graph_pass_internal.h"

namespace tilecore {
namespace transform {

using namespace graph_internal;  // NOLINT(*)

namespace {

/*! \brief A Transpose's perm (the reversed axes when absent), or nullopt. */
std::optional<std::vector<int64_t>> Perm(const Node& t, size_t rank) {
  std::vector<int64_t> perm;
  if (auto v = t->attrs.Get(String("perm"))) {
    auto a = v->try_cast<Array<Any>>();
    if (!a) return std::nullopt;
    for (const Any& x : *a) {
      auto i = x.try_cast<int64_t>();
      if (!i) return std::nullopt;
      perm.push_back(*i);
    }
  } else {
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (perm.size() != rank) return std::nullopt;
  return perm;
}

/*! \brief The per-channel factors of constant `c` broadcast (right-aligned) over a value of
 * `shape` whose channel axis is `axis` with `channels` entries: every other dim of `c` 1;
 * nullopt when `c` varies along another axis or would grow the value. */
std::optional<std::vector<double>> PerChannel(const Value& c, const std::vector<int64_t>& shape,
                                              size_t axis, int64_t channels) {
  const std::vector<int64_t> cs = *Float32ConstShape(c);
  if (cs.size() > shape.size()) return std::nullopt;
  bool along = false;
  for (size_t i = 0; i < cs.size(); ++i) {
    const size_t j = shape.size() - cs.size() + i;
    if (cs[i] == 1) continue;
    if (j != axis || cs[i] != channels) return std::nullopt;
    along = true;
  }
  std::vector<double> vals = *ConstValues(c);
  if (!along) return std::vector<double>(static_cast<size_t>(channels), vals.at(0));
  return vals;
}

Graph Fold(const Graph& g, PassContext ctx) {
  Rewriter rw(g);
  int64_t folded = 0;
  for (const Node& mul : g->nodes) {
    if (mul->op_type != "Mul" || !mul->domain.empty() || rw.IsDead(mul) ||
        mul->inputs.size() != 2 || mul->outputs.size() != 1)
      continue;
    const int side = IsFloat32Const(mul.input(1)) ? 1 : IsFloat32Const(mul.input(0)) ? 0 : -1;
    if (side < 0 || IsFloat32Const(mul.input(static_cast<size_t>(1 - side)))) continue;
    const Value scale = mul.input(static_cast<size_t>(side));
    // the chain back from the Mul: [Transpose], [Add of a constant bias], Conv or MatMul
    Value v = mul.input(static_cast<size_t>(1 - side));
    const Node transpose = rw.ProducerIf(v, "Transpose");
    if (transpose.defined()) v = transpose.input(0);
    Node add = rw.ProducerIf(v, "Add");
    int bias_side = -1;
    if (add.defined()) {
      bias_side = IsFloat32Const(add.input(1)) ? 1 : IsFloat32Const(add.input(0)) ? 0 : -1;
      if (bias_side < 0) add = Node();
    }
    if (add.defined()) v = add.input(static_cast<size_t>(1 - bias_side));
    const Node prod = rw.Producer(v);
    if (!prod.defined() || rw.IsDead(prod) || rw.Uses(v) != 1 || !prod->domain.empty() ||
        prod->outputs.size() != 1)
      continue;
    const bool conv = prod->op_type == "Conv";
    if (!conv && prod->op_type != "MatMul") continue;
    const Value w = prod.input(1);
    const Value conv_bias = conv && prod->inputs.size() > 2 ? prod.input(2) : Value();
    auto out_shape = StaticShapeOf(prod->outputs[0]);
    auto mul_shape = StaticShapeOf(mul->outputs[0]);
    if (!IsFloat32Const(w) || (conv_bias.defined() && !IsFloat32Const(conv_bias)) || !out_shape ||
        !mul_shape || out_shape->empty() || DtypeOf(mul->outputs[0]) != "float32")
      continue;
    const std::vector<int64_t> ws = *Float32ConstShape(w);
    const size_t axis = conv ? 1 : out_shape->size() - 1;
    if (axis >= out_shape->size()) continue;
    const int64_t channels = (*out_shape)[axis];
    if (conv ? (ws.empty() || ws[0] != channels) : (ws.size() != 2 || ws[1] != channels)) continue;
    // the channel axis after the Transpose; every shape on the way the Conv's or MatMul's
    std::vector<int64_t> shape = *out_shape;
    size_t mul_axis = axis;
    if (add.defined()) {
      auto s = StaticShapeOf(add->outputs[0]);
      if (!s || *s != *out_shape) continue;
    }
    if (transpose.defined()) {
      auto perm = Perm(transpose, out_shape->size());
      if (!perm) continue;
      std::vector<int64_t> t(perm->size());
      mul_axis = perm->size();
      for (size_t i = 0; i < perm->size(); ++i) {
        const int64_t p = (*perm)[i];
        if (p < 0 || p >= static_cast<int64_t>(perm->size())) mul_axis = perm->size() + 1;
        if (mul_axis == perm->size() + 1) break;
        t[i] = (*out_shape)[static_cast<size_t>(p)];
        if (static_cast<size_t>(p) == axis) mul_axis = i;
      }
      if (mul_axis >= perm->size()) continue;
      shape = t;
    }
    if (*mul_shape != shape) continue;
    auto gamma = PerChannel(scale, shape, mul_axis, channels);
    if (!gamma) continue;
    std::optional<std::vector<double>> bias;  // (one entry a channel)
    if (add.defined()) {
      bias = PerChannel(add.input(static_cast<size_t>(bias_side)), *out_shape, axis, channels);
      if (!bias) continue;
    }
    // the weights, the Conv's bias and the Add's bias scaled per output channel
    std::vector<double> wv = *ConstValues(w);
    const size_t c = static_cast<size_t>(channels);
    if (conv) {
      const size_t per = wv.size() / c;
      for (size_t o = 0; o < c; ++o)
        for (size_t k = 0; k < per; ++k) wv[o * per + k] *= (*gamma)[o];
    } else {
      for (size_t k = 0; k < static_cast<size_t>(ws[0]); ++k)
        for (size_t o = 0; o < c; ++o) wv[k * c + o] *= (*gamma)[o];
    }
    Array<Any> ins;
    for (size_t i = 0; i < prod->inputs.size(); ++i) ins.push_back(prod->inputs.raw(i));
    ins.Set(1, Any(Float32Const(rw.Fresh(Name(w) + "_scaled"), ws, wv)));
    if (conv_bias.defined()) {
      std::vector<double> cb = *ConstValues(conv_bias);
      if (cb.size() != c) continue;
      for (size_t o = 0; o < c; ++o) cb[o] *= (*gamma)[o];
      ins.Set(2, Any(Float32Const(rw.Fresh(Name(conv_bias) + "_scaled"),
                                  *Float32ConstShape(conv_bias), cb)));
    }
    std::vector<Node> matched{prod}, with;
    const bool last_prod = !add.defined() && !transpose.defined();
    with.push_back(Node(prod->op_type, prod->domain, prod->name, prod->attrs, ins,
                        last_prod ? mul->outputs : prod->outputs));
    if (add.defined()) {
      const Value b = add.input(static_cast<size_t>(bias_side));
      std::vector<double> nb = *bias;
      for (size_t o = 0; o < c; ++o) nb[o] *= (*gamma)[o];
      // (a bias of one element scaled per channel gets the channel axis: C, then ones)
      std::vector<int64_t> bshape = *Float32ConstShape(b);
      if (ConstValues(b)->size() != c) {
        bshape.assign(out_shape->size() - axis, 1);
        bshape[0] = channels;
      }
      Array<Any> add_ins;
      for (size_t i = 0; i < add->inputs.size(); ++i) add_ins.push_back(add->inputs.raw(i));
      add_ins.Set(static_cast<size_t>(bias_side),
                  Any(Float32Const(rw.Fresh(Name(b) + "_scaled"), bshape, nb)));
      matched.push_back(add);
      with.push_back(Node(add->op_type, add->domain, add->name, add->attrs, add_ins,
                          transpose.defined() ? add->outputs : mul->outputs));
    }
    if (transpose.defined()) {
      Array<Any> t_ins;
      for (size_t i = 0; i < transpose->inputs.size(); ++i)
        t_ins.push_back(transpose->inputs.raw(i));
      matched.push_back(transpose);
      with.push_back(Node(transpose->op_type, transpose->domain, transpose->name, transpose->attrs,
                          t_ins, mul->outputs));
    }
    rw.Replace(matched, mul, with);
    ++folded;
  }
  if (folded == 0) return g;
  ctx->AddStat("transform.FoldChannelScale.folded", folded);
  return rw.Build();
}

}  // namespace

Pass FoldChannelScale() { return CreateGraphPass(Fold, 0, String("FoldChannelScale")); }

TILECORE_REGISTER_GLOBAL("transform.FoldChannelScale").set_body_typed([]() {
  return FoldChannelScale();
});

}  // namespace transform
}  // namespace tilecore
