// src/codegen/lowering.cc — the lowering entry and helpers both code generators share
// (see codegen/lowering.h).
#include "tilecore/codegen/lowering.h"

#include "tilecore/target/target.h"

#include <sstream>

#include "tilecore/ffi/error.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/op.h"
#include "tilecore/transform/default_kernel_pipeline.h"

namespace tilecore::codegen {

using namespace ir;  // NOLINT

namespace {

/*! \brief ", at file:line" of a statement with a known line (codegen messages name lines, not
 * columns). */
std::string AtLine(const Span& span) {
  if (!span.defined() || span->line <= 0) return "";
  std::ostringstream os;
  os << ", at " << span->file.view() << ":" << span->line;
  return os.str();
}

std::optional<int64_t> ConstExtent(const Buffer& b, size_t k) {
  if (k >= b->shape.size()) return std::nullopt;
  return as_const_int(b->shape[k]);
}

}  // namespace

void CheckKernelBounds(const PrimFunc& f, const std::string& name) {
  auto check_index = [&](const Buffer& b, const Array<PrimExpr>& indices, const Span& span,
                         const char* what) {
    if (indices.size() != b->shape.size()) return;
    for (size_t k = 0; k < indices.size(); ++k) {
      auto i = as_const_int(indices[k]);
      auto n = ConstExtent(b, k);
      if (i && n && (*i < 0 || *i >= *n)) {
        TILECORE_THROW(ValueError)
            << "kernel `" << name << "`: " << what << " of buffer `" << b->name.view()
            << "` at constant index " << *i << " is out of bounds for dimension " << k
            << " of extent " << *n << AtLine(span);
      }
    }
  };
  PostOrderVisit(f->body, [&](const ObjectRef& o) {
    if (const auto* l = o.as<BufferLoadNode>())
      check_index(l->buffer, l->indices, l->span, "a load");
    if (const auto* s = o.as<BufferStoreNode>())
      check_index(s->buffer, s->indices, s->span, "a store");
    if (const auto* c = o.as<CallNode>()) {
      for (const PrimExpr& a : c->args) {
        const auto* r = a.as<BufferRegionNode>();
        if (!r || r->begin.size() != r->buffer->shape.size()) continue;
        for (size_t k = 0; k < r->begin.size(); ++k) {
          auto b = as_const_int(r->begin[k]);
          auto e = as_const_int(r->extents[k]);
          auto n = ConstExtent(r->buffer, k);
          if (b && e && n && (*b < 0 || *b + *e > *n)) {
            TILECORE_THROW(ValueError)
                << "kernel `" << name << "`: the region [" << *b << ":" << (*b + *e)
                << "] of buffer `" << r->buffer->name.view() << "` in `" << c->op.view()
                << "` is larger than the buffer (dimension " << k << " has extent " << *n << ")"
                << AtLine(c->span);
          }
        }
      }
    }
  });
}

IRModule LowerKernels(const IRModule& mod, const LowerOptions& opts) {
  for (const auto& [gname, func] : mod->functions.items())
    CheckKernelBounds(func, KernelSymbol(std::string(gname.view())));
  transform::PassContext cur = transform::PassContext::Current();
  transform::PassContext ctx = transform::PassContext::Create();
  ctx->opt_level = cur->opt_level;
  ctx->disabled = cur->disabled;
  ctx->instruments = cur->instruments;
  Map<String, Any> config = cur->config;
  auto set = [&](const char* key, const std::optional<int64_t>& v) {
    if (!v) return;
    auto have = config.Get(key);
    if (!have)
      config.Set(key, Any(*v));
    else if (opts.cap)
      config.Set(key, Any(std::min<int64_t>(*v, have->cast<int64_t>())));
  };
  set("tc1.l1_bytes", opts.l1_bytes);
  set("tc1.l2_bytes", opts.l2_bytes);
  ctx->config = config;
  transform::PassContextScope scope(ctx);
  IRModule out = transform::DefaultKernelPipeline(ctx->opt_level)(mod);
  if (!opts.target_kind.empty()) {
    for (const ffi::Any& extra : target::TargetPasses(opts.target_kind))
      out = extra.cast<transform::Pass>()(out);
  }
  return out;
}

std::string KernelSymbol(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

std::vector<runtime::KernelParam> KernelParams(const PrimFunc& f) {
  std::vector<runtime::KernelParam> out;
  for (const Var& p : f->params) {
    runtime::KernelParam k;
    k.name = std::string(p->name.view());
    if (f->buffer_map.count(p)) {
      k.kind = "buffer";
      k.dtype = ffi::DLDataTypeToString(f->buffer_map[p]->dtype);
    } else {
      k.kind = p->dtype.is_float() ? "float" : "int";
      k.dtype = ffi::DLDataTypeToString(p->dtype);
    }
    out.push_back(k);
  }
  return out;
}

IRModule AsIRModule(const ffi::Any& v) {
  // try_cast takes None for a nullable ObjectRef (a null handle); a kernel is never None.
  if (v.is_none())
    TILECORE_THROW(TypeError) << "build: expected an ir.PrimFunc or ir.IRModule, got None";
  if (auto m = v.try_cast<IRModule>()) return *m;
  if (auto f = v.try_cast<PrimFunc>()) return IRModule::FromFunction(*f);
  TILECORE_THROW(TypeError) << "build: expected an ir.PrimFunc or ir.IRModule, got `"
                            << ffi::details::AnyTypeName(v.raw()) << "`";
}

}  // namespace tilecore::codegen
