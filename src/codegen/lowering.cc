// src/codegen/lowering.cc — the lowering entry and helpers both code generators share
// (see codegen/lowering.h).
#include "tilecore/codegen/lowering.h"

#include "tilecore/target/target.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>

#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/ir/functor.h"
#include "tilecore/ir/identity_table.h"
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

namespace {

/*! \brief The constant indices and regions of a kernel's loads, stores and calls, checked
 * against their buffers' extents, children before parents (the first error is the first
 * out-of-bounds access in post-order); each statement once. */
class BoundsChecker : public IRVisitor {
 public:
  explicit BoundsChecker(const std::string& name) : name_(name) {}

  void VisitStmt(const Stmt& s) override {
    if (s.defined() && seen_.emplace(s, {})) IRVisitor::VisitStmt(s);
  }
  void VisitExpr_(const BufferLoadNode* op) override {
    IRVisitor::VisitExpr_(op);
    CheckIndex(op->buffer, op->indices, op->span, "a load");
  }
  void VisitStmt_(const BufferStoreNode* op) override {
    IRVisitor::VisitStmt_(op);
    CheckIndex(op->buffer, op->indices, op->span, "a store");
  }
  void VisitExpr_(const CallNode* c) override {
    IRVisitor::VisitExpr_(c);
    for (const PrimExpr& a : c->args) {
      const auto* r = a.as<BufferRegionNode>();
      if (!r || r->begin.size() != r->buffer->shape.size()) continue;
      for (size_t k = 0; k < r->begin.size(); ++k) {
        auto b = as_const_int(r->begin[k]);
        auto e = as_const_int(r->extents[k]);
        auto n = ConstExtent(r->buffer, k);
        if (b && e && n && (*b < 0 || *b + *e > *n)) {
          TILECORE_THROW(ValueError)
              << "kernel `" << name_ << "`: the region [" << *b << ":" << (*b + *e)
              << "] of buffer `" << r->buffer->name.view() << "` in `" << c->op.view()
              << "` is larger than the buffer (dimension " << k << " has extent " << *n << ")"
              << AtLine(c->span);
        }
      }
    }
  }

 private:
  void CheckIndex(const Buffer& b, const Array<PrimExpr>& indices, const Span& span,
                  const char* what) {
    if (indices.size() != b->shape.size()) return;
    for (size_t k = 0; k < indices.size(); ++k) {
      auto i = as_const_int(indices[k]);
      auto n = ConstExtent(b, k);
      if (i && n && (*i < 0 || *i >= *n)) {
        TILECORE_THROW(ValueError)
            << "kernel `" << name_ << "`: " << what << " of buffer `" << b->name.view()
            << "` at constant index " << *i << " is out of bounds for dimension " << k
            << " of extent " << *n << AtLine(span);
      }
    }
  }

  const std::string& name_;
  IdentityTable<NoValue> seen_;
};

}  // namespace

void CheckKernelBounds(const PrimFunc& f, const std::string& name) {
  BoundsChecker(name).VisitStmt(f->body);
}

namespace {

/*! \brief Modules lowered before, by the functions they were lowered from (held here, so
 * an address is not reused while its entry lives) and the context they were lowered in.
 * The compiler prices a plan (compiler/cost_model.h lowers it for the npu build) and then
 * builds the plan it chose: that build's lowering is the pricing's. An entry goes once no
 * one else holds its functions (a plan not chosen), or when more than kLoweredKept are. */
struct Lowered {
  std::vector<std::pair<std::string, PrimFunc>> funcs;
  std::string context;
  std::vector<ffi::ObjectRef> target_passes;  // the target kind's plugin passes then
  IRModule out;
};
std::mutex lowered_mu;
std::deque<Lowered> lowered;
/*! \brief How many modules the kernel pipeline has lowered (not the ones found lowered):
 * what a compile's plan searches cost, counted where wall time is noisy. */
std::atomic<int64_t> pipelines_run{0};
constexpr size_t kLoweredKept = 32;

/*! \brief What of the context a lowering depends on, as text; nullopt when it cannot be
 * written down (a config value of another kind) or is observed (instruments run). */
std::optional<std::string> ContextKey(const transform::PassContext& ctx, const LowerOptions& opts) {
  if (!ctx->instruments.empty()) return std::nullopt;
  std::ostringstream o;
  o << opts.target_kind << '|' << ctx->opt_level << '|';
  for (const String& d : ctx->disabled) o << std::string(d) << ',';
  std::vector<std::string> items;
  for (const auto& [k, v] : ctx->config.items()) {
    std::ostringstream e;
    e << std::string(k) << '=';
    if (auto i = v.try_cast<int64_t>())
      e << *i;
    else if (auto str = v.try_cast<String>())
      e << '"' << std::string(*str) << '"';
    else
      return std::nullopt;
    items.push_back(e.str());
  }
  std::sort(items.begin(), items.end());
  for (const std::string& e : items) o << '|' << e;
  return o.str();
}

}  // namespace

IRModule LowerKernels(const IRModule& mod, const LowerOptions& opts) {
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
  // (a module with attributes of its own lowers anew: the entries match functions only)
  const std::optional<std::string> context =
      mod->attrs.empty() ? ContextKey(ctx, opts) : std::nullopt;
  std::vector<std::pair<std::string, PrimFunc>> funcs;
  for (const auto& [gname, func] : mod->functions.items()) funcs.emplace_back(gname, func);
  std::vector<ffi::ObjectRef> passes;
  if (!opts.target_kind.empty())
    for (const ffi::Any& p : target::TargetPasses(opts.target_kind))
      passes.push_back(p.cast<ffi::ObjectRef>());
  auto same = [&](const Lowered& e) {
    if (e.context != *context || e.funcs.size() != funcs.size()) return false;
    if (e.target_passes.size() != passes.size()) return false;
    for (size_t i = 0; i < passes.size(); ++i)
      if (!e.target_passes[i].same_as(passes[i])) return false;
    for (size_t i = 0; i < funcs.size(); ++i)
      if (e.funcs[i].first != funcs[i].first || !e.funcs[i].second.same_as(funcs[i].second))
        return false;
    return true;
  };
  if (context) {
    std::lock_guard<std::mutex> lock(lowered_mu);
    for (const Lowered& e : lowered)
      if (same(e)) return e.out;
  }
  for (const auto& [name, func] : funcs) CheckKernelBounds(func, KernelSymbol(name));
  transform::PassContextScope scope(ctx);
  IRModule out = transform::DefaultKernelPipeline(ctx->opt_level)(mod);
  pipelines_run.fetch_add(1);
  for (const ffi::ObjectRef& extra : passes) out = ffi::Any(extra).cast<transform::Pass>()(out);
  if (context) {
    std::lock_guard<std::mutex> lock(lowered_mu);
    // (an entry whose functions only it holds can never be asked for again)
    auto orphan = [](const Lowered& e) {
      for (const auto& [name, f] : e.funcs)
        if (f.use_count() == 1) return true;
      return false;
    };
    lowered.erase(std::remove_if(lowered.begin(), lowered.end(), orphan), lowered.end());
    lowered.push_back(Lowered{std::move(funcs), *context, std::move(passes), out});
    while (lowered.size() > kLoweredKept) lowered.pop_front();
  }
  return out;
}

TILECORE_REGISTER_GLOBAL("codegen.KernelPipelineRuns").set_body_typed([]() {
  return pipelines_run.load();
});

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
