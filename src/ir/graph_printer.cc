/*
 * src/ir/graph_printer.cc — the Graph IR as text (GraphToText in graph.h).
 *
 *   graph main(%x: f32[N,3,224,224]) opsets {"": 17} {
 *     %w: f32[64,3,7,7] = constant
 *     %y: f32[N,64,112,112] = Conv(%x, %w) {strides=[2,2]} @ "conv1"
 *     return %y
 *   }
 *
 * Attributes whose names start with "_" (the importer's "_opset") are not shown.
 * Nodes print in a loop; only subgraph attributes nest (one level per If/Loop body),
 * so a chain of any length prints without deep recursion. Constants print once,
 * before the first node that uses them, with their values when they have at most
 * 8 elements.
 */
#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <unordered_set>

#include "tilecore/ffi/function.h"
#include "tilecore/ir/graph.h"

namespace tilecore {
namespace ir {

std::string ShortDtype(const std::string& dtype) {
  static const std::pair<const char*, const char*> kShort[] = {
      {"float32", "f32"}, {"float16", "f16"}, {"float64", "f64"}, {"bfloat16", "bf16"},
      {"int8", "i8"},     {"int16", "i16"},   {"int32", "i32"},   {"int64", "i64"},
      {"uint8", "u8"},    {"uint16", "u16"},  {"uint32", "u32"},  {"uint64", "u64"},
      {"bool", "bool"},   {"string", "str"},  {"object", "str"}};
  for (const auto& [k, v] : kShort) {
    if (dtype == k) return v;
  }
  return dtype;
}

std::string TypeToText(const Type& t) {
  if (!t.defined()) return "?";
  if (const auto* tt = t.as<TensorTypeNode>()) {
    std::string s = ShortDtype(std::string(tt->dtype.view()));
    if (!tt->rank_known) return s + "[*]";
    s += "[";
    for (size_t i = 0; i < tt->shape.size(); ++i) {
      if (i) s += ",";
      const Any& d = tt->shape.raw(i);
      if (auto v = d.as<int64_t>()) {
        s += std::to_string(*v);
      } else if (auto sym = d.try_cast<String>()) {
        s += std::string(sym->view());
      } else {
        s += "?";
      }
    }
    s += "]";
    if (!tt->layout.empty()) s += "{" + std::string(tt->layout.view()) + "}";
    if (tt->quant.defined()) s += "{quant " + std::string(tt->quant->dtype.view()) + "}";
    return s;
  }
  if (const auto* st = t.as<SequenceTypeNode>()) return "seq(" + TypeToText(st->elem) + ")";
  if (const auto* ot = t.as<OptionalTypeNode>()) return "optional(" + TypeToText(ot->elem) + ")";
  return "?";
}

namespace {

void PrintScalarOfArray(std::ostream& os, const NDArray& a, int64_t i) {
  const DLTensor& t = a.tensor();
  const char* base = static_cast<const char*>(t.data) + t.byte_offset;
  switch (t.dtype.code) {
    case kDLFloat:
      if (t.dtype.bits == 32)
        os << reinterpret_cast<const float*>(base)[i];
      else if (t.dtype.bits == 64)
        os << reinterpret_cast<const double*>(base)[i];
      else
        os << "_";
      return;
    case kDLInt:
      if (t.dtype.bits == 64)
        os << reinterpret_cast<const int64_t*>(base)[i];
      else if (t.dtype.bits == 32)
        os << reinterpret_cast<const int32_t*>(base)[i];
      else if (t.dtype.bits == 16)
        os << reinterpret_cast<const int16_t*>(base)[i];
      else if (t.dtype.bits == 8)
        os << static_cast<int>(reinterpret_cast<const int8_t*>(base)[i]);
      else
        os << "_";
      return;
    case kDLUInt:
      if (t.dtype.bits == 8)
        os << static_cast<int>(reinterpret_cast<const uint8_t*>(base)[i]);
      else if (t.dtype.bits == 32)
        os << reinterpret_cast<const uint32_t*>(base)[i];
      else
        os << "_";
      return;
    case kDLBool:
      os << (reinterpret_cast<const uint8_t*>(base)[i] ? "true" : "false");
      return;
    default:
      os << "_";
  }
}

void PrintConstant(std::ostream& os, const Any& data) {
  auto a = AsObject<NDArray>(data);
  if (!a.has_value() || a->device().device_type != kDLCPU || !a->IsContiguous()) {
    os << "constant";
    return;
  }
  int64_t n = a->NumElements();
  if (n > 8) {
    os << "constant";
    return;
  }
  os << "constant(";
  if (a->shape().size() > 0) os << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (i) os << ", ";
    PrintScalarOfArray(os, *a, i);
  }
  if (a->shape().size() > 0) os << "]";
  os << ")";
}

class GraphPrinter {
 public:
  std::string Print(const Graph& g) {
    PrintGraph(g, 0);
    return os_.str();
  }

 private:
  void Indent(int depth) { os_ << std::string(static_cast<size_t>(depth) * 2, ' '); }

  void PrintAttr(const Any& v, int depth) {
    if (v.is_none()) {
      os_ << "None";
    } else if (auto b = v.as<bool>()) {
      os_ << (*b ? "true" : "false");
    } else if (auto i = v.as<int64_t>()) {
      os_ << *i;
    } else if (auto f = v.as<double>()) {
      std::ostringstream t;
      t << std::setprecision(9) << *f;
      std::string s = t.str();
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      os_ << s;
    } else if (auto s = v.try_cast<String>()) {
      os_ << '"' << s->view() << '"';
    } else if (auto arr = AsObject<Array<Any>>(v)) {
      os_ << "[";
      for (size_t k = 0; k < arr->size(); ++k) {
        if (k) os_ << ",";
        PrintAttr(arr->raw(k), depth);
      }
      os_ << "]";
    } else if (auto nd = AsObject<NDArray>(v)) {
      std::vector<int64_t> shape = nd->shape();
      Array<Any> dims;
      for (int64_t d : shape) dims.push_back(Any(d));
      os_ << "tensor<" << TypeToText(TensorType(dims, String(DtypeOfNDArray(*nd)))) << ">";
    } else if (auto g = AsObject<Graph>(v)) {
      os_ << "\n";
      PrintGraph(*g, depth + 2);
      Indent(depth + 1);
    } else {
      os_ << "<" << v.GetTypeKey() << ">";
    }
  }

  void PrintValueRef(const Any& v) {
    auto val = AsObject<Value>(v);
    if (!val.has_value()) {
      os_ << "None";
      return;
    }
    os_ << "%" << (*val)->name.view();
  }

  void PrintGraph(const Graph& g, int depth) {
    std::unordered_set<const Object*> printed;
    Indent(depth);
    os_ << "graph " << g->name.view() << "(";
    for (size_t i = 0; i < g->inputs.size(); ++i) {
      if (i) os_ << ", ";
      os_ << "%" << g->inputs[i]->name.view() << ": " << TypeToText(g->inputs[i]->type);
      printed.insert(g->inputs[i].get());
    }
    os_ << ")";
    if (!g->opsets.empty()) {
      os_ << " opsets {";
      bool first = true;
      for (const auto& [k, v] : g->opsets.items()) {
        if (!first) os_ << ", ";
        first = false;
        os_ << '"' << k.view() << "\": " << v;
      }
      os_ << "}";
    }
    os_ << " {\n";
    auto constant = [&](const Value& v) {
      if (!v.defined() || !v->is_constant() || printed.count(v.get())) return;
      printed.insert(v.get());
      Indent(depth + 1);
      os_ << "%" << v->name.view() << ": " << TypeToText(v->type) << " = ";
      PrintConstant(os_, v->data);
      os_ << "\n";
    };
    for (const Node& n : g->nodes) {
      for (size_t i = 0; i < n->inputs.size(); ++i) constant(n.input(i));
      Indent(depth + 1);
      for (size_t i = 0; i < n->outputs.size(); ++i) {
        if (i) os_ << ", ";
        os_ << "%" << n->outputs[i]->name.view() << ": " << TypeToText(n->outputs[i]->type);
      }
      os_ << " = ";
      if (!n->domain.empty()) os_ << n->domain.view() << "::";
      os_ << n->op_type.view() << "(";
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        if (i) os_ << ", ";
        PrintValueRef(n->inputs.raw(i));
      }
      os_ << ")";
      std::vector<std::pair<String, Any>>
          shown;  // "_opset" and other importer keys are not printed
      for (const auto& [k, v] : n->attrs.items()) {
        if (!k.empty() && k.view()[0] != '_') shown.emplace_back(k, v);
      }
      if (!shown.empty()) {
        os_ << " {";
        bool first = true;
        for (const auto& [k, v] : shown) {
          if (!first) os_ << ", ";
          first = false;
          os_ << k.view() << "=";
          PrintAttr(v, depth);
        }
        os_ << "}";
      }
      os_ << " @ \"" << n->name.view() << "\"\n";
    }
    for (const Value& v : g->outputs) constant(v);
    Indent(depth + 1);
    os_ << "return ";
    for (size_t i = 0; i < g->outputs.size(); ++i) {
      if (i) os_ << ", ";
      os_ << "%" << g->outputs[i]->name.view();
    }
    os_ << "\n";
    Indent(depth);
    os_ << "}\n";
  }

  std::ostringstream os_;
};

}  // namespace

std::string GraphToText(const Graph& g) {
  if (!g.defined()) return "<undefined graph>";
  return GraphPrinter().Print(g);
}

}  // namespace ir
}  // namespace tilecore
