/*
 * src/transform/pass.cc — Pass, Sequential, PassContext and the built-in
 * instruments (pass.h), and their `transform.*` registrations.
 */
#include "tilecore/transform/pass.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <vector>

#include "tilecore/ffi/reflection.h"
#include "tilecore/ir/printer.h"

namespace tilecore {
namespace transform {

using ffi::make_object;

PassInfo::PassInfo(String name, int64_t opt_level) {
  auto n = make_object<PassInfoNode>();
  n->name = std::move(name);
  n->opt_level = opt_level;
  data_ = std::move(n);
}

PassInstrument::PassInstrument(String name, Function enter_ctx, Function exit_ctx,
                               Function should_run, Function before, Function after) {
  auto n = make_object<PassInstrumentNode>();
  n->name = std::move(name);
  n->enter_ctx = std::move(enter_ctx);
  n->exit_ctx = std::move(exit_ctx);
  n->should_run = std::move(should_run);
  n->before = std::move(before);
  n->after = std::move(after);
  data_ = std::move(n);
}

namespace {
std::vector<PassContext>& ContextStack() {
  thread_local std::vector<PassContext> stack;
  return stack;
}
}  // namespace

void PassContextNode::AddStat(const std::string& key, int64_t n) {
  auto cur = stats.Get(String(key));
  stats.Set(String(key), Any((cur.has_value() ? cur->try_cast<int64_t>().value_or(0) : 0) + n));
}

PassContext PassContext::Create() { return PassContext(make_object<PassContextNode>()); }

PassContext PassContext::Current() {
  auto& stack = ContextStack();
  if (stack.empty()) {
    thread_local PassContext fallback = Create();
    return fallback;
  }
  return stack.back();
}

void PassContext::EnterWithScope() const {
  for (const PassInstrument& pi : get()->instruments) {
    if (pi->enter_ctx.defined()) pi->enter_ctx();
  }
  ContextStack().push_back(*this);
}

void PassContext::ExitWithScope() const {
  auto& stack = ContextStack();
  TILECORE_ICHECK(!stack.empty() && stack.back().same_as(*this))
      << "PassContext exited out of order";
  stack.pop_back();
  for (const PassInstrument& pi : get()->instruments) {
    if (pi->exit_ctx.defined()) pi->exit_ctx();
  }
}

bool PassContext::ShouldRun(const IRModule& mod, const PassInfo& info) const {
  for (const String& d : get()->disabled) {
    if (d == info->name) return false;
  }
  if (info->opt_level > get()->opt_level) return false;
  for (const PassInstrument& pi : get()->instruments) {
    if (pi->should_run.defined() && !pi->should_run(mod, info).cast<bool>()) return false;
  }
  return true;
}

IRModule Pass::operator()(IRModule mod) const {
  return (*this)(std::move(mod), PassContext::Current());
}

IRModule Pass::operator()(IRModule mod, const PassContext& ctx) const {
  const PassNode* p = get();
  if (!ctx.ShouldRun(mod, p->info)) return mod;
  for (const PassInstrument& pi : ctx->instruments) {
    if (pi->before.defined()) pi->before(mod, p->info);
  }
  IRModule out = mod;
  if (p->func.defined()) {
    // A pass written in Python may return anything: name the pass, not just the types.
    ffi::Any r = p->func(mod, ctx);
    std::optional<IRModule> m = r.try_cast<IRModule>();
    if (!m) {
      TILECORE_THROW(TypeError) << "pass `" << p->info->name << "` returned `" << r.GetTypeKey()
                                << "`, expected `ir.IRModule`";
    }
    out = *std::move(m);
  } else {
    for (const ObjectRef& sub : p->passes) out = Pass(ffi::ObjectRefUnsafe::GetPtr(sub))(out, ctx);
  }
  for (const PassInstrument& pi : ctx->instruments) {
    if (pi->after.defined()) pi->after(out, p->info);
  }
  return out;
}

Pass CreateModulePass(std::function<IRModule(IRModule, PassContext)> fn, int64_t opt_level,
                      String name) {
  auto n = make_object<PassNode>();
  n->info = PassInfo(name, opt_level);
  n->func = Function::FromTyped([fn](IRModule m, PassContext c) { return fn(m, c); },
                                std::string(name.view()));
  return Pass(ffi::ObjectPtr<Object>(std::move(n)));
}

Pass CreatePrimFuncPass(std::function<PrimFunc(PrimFunc, IRModule, PassContext)> fn,
                        int64_t opt_level, String name) {
  return CreateModulePass(
      [fn](IRModule mod, PassContext ctx) {
        Map<String, PrimFunc> out;
        bool changed = false;
        for (const auto& [k, f] : mod->functions.items()) {
          PrimFunc g = fn(f, mod, ctx);
          changed = changed || !g.same_as(f);
          out.Set(k, g);
        }
        return changed ? IRModule(out, mod->attrs) : mod;
      },
      opt_level, name);
}

IRModule GraphModule(const ir::Graph& g) {
  Map<String, Any> attrs;
  attrs.Set(String("graph"), g);
  return IRModule(Map<String, PrimFunc>(), attrs);
}

ir::Graph ModuleGraph(const IRModule& mod, const std::string& pass) {
  auto g = mod->attrs.Get(String("graph"));
  if (!g.has_value() || !ir::AsObject<ir::Graph>(*g).has_value()) {
    TILECORE_THROW(TypeError)
        << pass
        << " is a graph pass: run it on a Graph (or a module holding one in attrs[\"graph\"])";
  }
  return g->cast<ir::Graph>();
}

Pass CreateGraphPass(std::function<ir::Graph(ir::Graph, PassContext)> fn, int64_t opt_level,
                     String name) {
  std::string pass_name(name.view());
  return CreateModulePass(
      [fn, pass_name](IRModule mod, PassContext ctx) {
        ir::Graph g = ModuleGraph(mod, pass_name);
        ir::Graph out = fn(g, ctx);
        if (out.same_as(g)) return mod;
        Map<String, Any> attrs;
        for (const auto& [k, v] : mod->attrs.items()) attrs.Set(k, v);
        attrs.Set(String("graph"), out);
        return IRModule(mod->functions, attrs);
      },
      opt_level, name);
}

Pass Sequential(Array<Pass> passes, String name) {
  auto n = make_object<PassNode>();
  n->info = PassInfo(name, 0);
  for (const Pass& p : passes) n->passes.push_back(p);
  return Pass(ffi::ObjectPtr<Object>(std::move(n)));
}

// ---------------------------------------------------------------------------
// Built-in instruments
// ---------------------------------------------------------------------------
namespace {
/*! \brief Records of the timing instrument: name, depth, microseconds. */
class TimingStateNode : public Object {
 public:
  struct Record {
    std::string name;
    int depth;
    double us;
  };
  std::vector<Record> records;
  std::vector<std::pair<size_t, std::chrono::steady_clock::time_point>> open;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("transform.TimingState", TimingStateNode, Object);
};
}  // namespace

PassInstrument PassTimingInstrument() {
  auto state = make_object<TimingStateNode>();
  TimingStateNode* s = state.get();  // owned by the instrument, which outlives its callbacks' calls
  Function before = Function::FromTyped([s](IRModule, PassInfo info) {
    s->records.push_back({std::string(info->name.view()), static_cast<int>(s->open.size()), 0.0});
    s->open.emplace_back(s->records.size() - 1, std::chrono::steady_clock::now());
  });
  Function after = Function::FromTyped([s](IRModule, PassInfo) {
    if (s->open.empty()) return;
    auto [i, t0] = s->open.back();
    s->open.pop_back();
    s->records[i].us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  });
  PassInstrument pi("PassTiming", Function(), Function(), Function(), before, after);
  const_cast<PassInstrumentNode*>(pi.get())->state =
      ObjectRef(ffi::ObjectPtr<Object>(std::move(state)));
  return pi;
}

std::string RenderPassTiming(const PassInstrument& timing) {
  const auto* s = timing->state.as<TimingStateNode>();
  if (s == nullptr) TILECORE_THROW(TypeError) << "RenderPassTiming: not a PassTimingInstrument";
  std::ostringstream os;
  os << std::fixed << std::setprecision(0);
  for (const auto& r : s->records)
    os << std::string(static_cast<size_t>(r.depth) * 2, ' ') << r.name << ": " << r.us << " us\n";
  return os.str();
}

PassInstrument DumpIRInstrument(String folder) {
  auto counter = std::make_shared<int>(0);
  std::string dir(folder.view());
  auto dump = [dir, counter](const IRModule& mod, const PassInfo& info, const char* when) {
    std::filesystem::create_directories(dir);
    std::ostringstream name;
    name << std::setw(3) << std::setfill('0') << (*counter)++ << "_" << info->name.view() << "_"
         << when << ".txt";
    std::ofstream f(std::filesystem::path(dir) / name.str());
    if (!f)
      TILECORE_THROW(RuntimeError)
          << "DumpIR: cannot write " << (std::filesystem::path(dir) / name.str()).string();
    auto g = mod->attrs.Get(String("graph"));
    if (g.has_value() && ir::AsObject<ir::Graph>(*g).has_value() && mod->functions.empty()) {
      f << ir::GraphToText(g->cast<ir::Graph>()) << "\n";
    } else {
      f << ir::AsScript(mod) << "\n";
    }
  };
  Function before =
      Function::FromTyped([dump](IRModule m, PassInfo info) { dump(m, info, "before"); });
  Function after =
      Function::FromTyped([dump](IRModule m, PassInfo info) { dump(m, info, "after"); });
  return PassInstrument("DumpIR", Function(), Function(), Function(), before, after);
}

// ---------------------------------------------------------------------------
// Registration
// ---------------------------------------------------------------------------
TILECORE_FFI_STATIC_INIT_BLOCK({
  namespace refl = ffi::reflection;
  refl::ObjectDef<PassInfoNode>()
      .def_ro("name", &PassInfoNode::name)
      .def_ro("opt_level", &PassInfoNode::opt_level);
  refl::ObjectDef<PassNode>(kTCFFISEqualIdentity)
      .def_ro("info", &PassNode::info)
      .def_ro("passes", &PassNode::passes);
  refl::ObjectDef<PassContextNode>(kTCFFISEqualIdentity)
      .def_rw("opt_level", &PassContextNode::opt_level)
      .def_rw("config", &PassContextNode::config)
      .def_rw("disabled", &PassContextNode::disabled)
      .def_rw("instruments", &PassContextNode::instruments)
      .def_rw("stats", &PassContextNode::stats);
  refl::ObjectDef<PassInstrumentNode>(kTCFFISEqualIdentity)
      .def_ro("name", &PassInstrumentNode::name);
});

namespace {
/*!
 * \brief The options passes read with GetConfig, and the type each value must convert to
 *  (docs/passes.md lists them). A context made from the front end refuses any other key, so a
 *  misspelt option is an error instead of being silently ignored.
 */
void CheckConfigOption(const String& key, const Any& value) {
  enum Kind { kInt, kBool, kText };
  static const std::vector<std::pair<std::string, Kind>> kOptions = {
      {"transform.UnrollLoop.auto_max_extent", kInt},
      {"transform.UnrollLoop.max_extent", kInt},
      {"transform.VectorizeLoop.strict", kBool},
      {"transform.LoopPartition.max_pieces", kInt},
      {"transform.EmitTileIntrinsics.allow_saturation", kBool},
      {"compiler.price_every_plan", kBool},
      // (plan names, comma separated: the compiler checks them against its plans)
      {"compiler.disabled_plans", kText},
      {"tc1.l1_bytes", kInt},
      {"tc1.l2_bytes", kInt},
  };
  static const char* kKindNames[] = {"int", "bool", "a string"};
  for (const auto& [k, kind] : kOptions) {
    if (key.view() != k) continue;
    const bool ok = kind == kBool  ? value.try_cast<bool>().has_value()
                    : kind == kInt ? value.try_cast<int64_t>().has_value()
                                   : value.try_cast<String>().has_value();
    if (!ok) {
      TILECORE_THROW(TypeError) << "PassContext option `" << k << "` must be " << kKindNames[kind]
                                << ", got " << value.GetTypeKey();
    }
    return;
  }
  std::string known;
  for (const auto& [k, kind] : kOptions) known += (known.empty() ? "" : ", ") + k;
  TILECORE_THROW(ValueError) << "PassContext: unknown option `" << key.view()
                             << "` (the options are " << known << ")";
}
}  // namespace

TILECORE_REGISTER_GLOBAL("transform.PassContext")
    .set_body_typed([](int64_t opt_level, ffi::AnyView config, ffi::AnyView disabled,
                       ffi::AnyView instruments) {
      PassContext ctx = PassContext::Create();
      ctx->opt_level = opt_level;
      if (!config.is_none()) {
        ctx->config = config.cast<Map<String, Any>>();
        for (const auto& [k, v] : ctx->config.items()) CheckConfigOption(k, v);
      }
      if (!disabled.is_none()) ctx->disabled = disabled.cast<Array<String>>();
      if (!instruments.is_none()) ctx->instruments = instruments.cast<Array<PassInstrument>>();
      return ctx;
    });
TILECORE_REGISTER_GLOBAL("transform.PassContextCurrent").set_body_typed([]() {
  return PassContext::Current();
});
TILECORE_REGISTER_GLOBAL("transform.EnterPassContext").set_body_typed([](PassContext c) {
  c.EnterWithScope();
});
TILECORE_REGISTER_GLOBAL("transform.ExitPassContext").set_body_typed([](PassContext c) {
  c.ExitWithScope();
});
TILECORE_REGISTER_GLOBAL("transform.RunPass")
    .set_body_typed([](Pass p, ffi::AnyView target) -> Any {
      if (auto f = target.as<PrimFunc>(); f.has_value() && f->defined()) {
        IRModule m = p(IRModule::FromFunction(*f));
        return m->functions.items().front().second;
      }
      if (auto g = ir::AsObject<ir::Graph>(target); g.has_value() && g->defined()) {
        IRModule m = p(GraphModule(*g));
        return ModuleGraph(m, std::string(p->info->name.view()));
      }
      return p(target.cast<IRModule>());
    });
TILECORE_REGISTER_GLOBAL("transform.CreateGraphPass")
    .set_body_typed([](Function fn, int64_t opt_level, String name) {
      return CreateGraphPass(
          [fn, name](ir::Graph g, PassContext c) {
            ffi::Any r = fn(g, c);
            std::optional<ir::Graph> out = r.try_cast<ir::Graph>();
            if (!out) {
              TILECORE_THROW(TypeError) << "graph pass `" << name << "` returned `"
                                        << r.GetTypeKey() << "`, expected `ir.Graph`";
            }
            return *std::move(out);
          },
          opt_level, name);
    });
TILECORE_REGISTER_GLOBAL("transform.Sequential")
    .set_body_typed([](Array<Pass> passes, String name) { return Sequential(passes, name); });
TILECORE_REGISTER_GLOBAL("transform.PassInstrument")
    .set_body_typed([](String name, std::optional<Function> enter, std::optional<Function> exit,
                       std::optional<Function> should_run, std::optional<Function> before,
                       std::optional<Function> after) {
      // A hook left out (None) is not called.
      return PassInstrument(name, enter.value_or(Function()), exit.value_or(Function()),
                            should_run.value_or(Function()), before.value_or(Function()),
                            after.value_or(Function()));
    });
TILECORE_REGISTER_GLOBAL("transform.PassTimingInstrument").set_body_typed([]() {
  return PassTimingInstrument();
});
TILECORE_REGISTER_GLOBAL("transform.RenderPassTiming").set_body_typed([](PassInstrument p) {
  return RenderPassTiming(p);
});
TILECORE_REGISTER_GLOBAL("transform.DumpIRInstrument").set_body_typed([](String folder) {
  return DumpIRInstrument(folder);
});
TILECORE_REGISTER_GLOBAL("transform.CreatePrimFuncPass")
    .set_body_typed([](Function fn, int64_t opt_level, String name) {
      return CreatePrimFuncPass(
          [fn, name](PrimFunc f, IRModule m, PassContext c) {
            ffi::Any r = fn(f, m, c);
            std::optional<PrimFunc> g = r.try_cast<PrimFunc>();
            if (!g) {
              TILECORE_THROW(TypeError)
                  << "prim_func pass `" << name << "` returned `" << r.GetTypeKey()
                  << "` for a function, expected `ir.PrimFunc`";
            }
            return *std::move(g);
          },
          opt_level, name);
    });

}  // namespace transform
}  // namespace tilecore
