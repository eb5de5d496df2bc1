/*
 * include/tilecore/transform/pass.h — the pass infrastructure: Pass, Sequential,
 * PassContext and PassInstrument.
 *
 * A Pass maps an IRModule to an IRModule. Most kernel passes work one PrimFunc at
 * a time (CreatePrimFuncPass). Sequential runs passes in order. Every run goes
 * through the current PassContext, which decides whether a pass runs (its
 * opt_level against the context's, the `disabled` list) and calls the
 * instruments around it:
 *
 *   transform::PassContext ctx = transform::PassContext::Create();
 *   ctx->opt_level = 2;
 *   ctx->instruments.push_back(transform::PassTimingInstrument());
 *   transform::PassContextScope scope(ctx);               // Python: `with PassContext(...)`
 *   mod = transform::Sequential({transform::Simplify(), transform::UnrollLoop()})(mod);
 *
 * Instruments are objects holding callbacks (Functions), so Python can write its
 * own: enter_ctx(), exit_ctx(), should_run(mod, info) -> bool, before(mod, info),
 * after(mod, info). Two are built in: timing (PassTimingInstrument, rendered by
 * RenderPassTiming) and IR dumps (DumpIRInstrument(folder): one text file before
 * and one after each pass, numbered in the order written; a graph pass writes the
 * graph's text).
 *
 * Graph passes (CreateGraphPass) run on the same machinery: a Graph is carried in
 * a module's attrs["graph"], and `transform.RunPass` accepts a Graph directly.
 * Rewrites are counted in PassContext::stats so tests and `-v` can tell how often
 * each fired.
 */
#ifndef TILECORE_TRANSFORM_PASS_H_
#define TILECORE_TRANSFORM_PASS_H_

#include <functional>
#include <string>

#include "tilecore/ffi/function.h"
#include "tilecore/ir/function.h"
#include "tilecore/ir/graph.h"

namespace tilecore {
namespace transform {

using ffi::Any;
using ffi::Array;
using ffi::Function;
using ffi::Map;
using ffi::Object;
using ffi::ObjectRef;
using ffi::String;
using ir::IRModule;
using ir::PrimFunc;

class PassInfoNode : public Object {
 public:
  String name;
  /*! \brief The pass runs when this is <= the context's opt_level. */
  int64_t opt_level{0};
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("transform.PassInfo", PassInfoNode, Object);
};
class PassInfo : public ObjectRef {
 public:
  PassInfo(String name, int64_t opt_level);
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(PassInfo, ObjectRef, PassInfoNode);
};

class PassInstrumentNode : public Object {
 public:
  String name;
  Function enter_ctx;   // () -> None; may be null
  Function exit_ctx;    // () -> None
  Function should_run;  // (IRModule, PassInfo) -> bool
  Function before;      // (IRModule, PassInfo) -> None
  Function after;       // (IRModule, PassInfo) -> None
  /*! \brief Instrument-specific state (the timing instrument keeps its records here). */
  ObjectRef state;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("transform.PassInstrument", PassInstrumentNode, Object);
};
class PassInstrument : public ObjectRef {
 public:
  PassInstrument(String name, Function enter_ctx, Function exit_ctx, Function should_run,
                 Function before, Function after);
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(PassInstrument, ObjectRef, PassInstrumentNode);
};

class PassContextNode : public Object {
 public:
  int64_t opt_level{2};
  /*! \brief Pass options, e.g. {"transform.UnrollLoop.max_extent": 16}. */
  Map<String, Any> config;
  Array<String> disabled;
  Array<PassInstrument> instruments;
  /*! \brief Counters passes add to (e.g. {"transform.FoldBatchNorm.folded": 3}); read them after
   * the run. */
  Map<String, Any> stats;
  /*! \brief Adds `n` to stats[key]. */
  void AddStat(const std::string& key, int64_t n = 1);
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("transform.PassContext", PassContextNode, Object);
};
class PassContext : public ObjectRef {
 public:
  static PassContext Create();
  /*! \brief The innermost entered context of this thread, or a default one. */
  static PassContext Current();
  /*! \brief config[key] converted to T, or `fallback`; TypeError naming the key if it does not
   * convert. */
  template <typename T>
  T GetConfig(const std::string& key, T fallback) const {
    auto v = get()->config.Get(key);
    if (!v.has_value()) return fallback;
    auto c = v->try_cast<T>();
    if (!c.has_value()) {
      TILECORE_THROW(TypeError) << "PassContext option `" << key << "` must be "
                                << ffi::TypeTraits<T>::TypeStr() << ", got " << v->GetTypeKey();
    }
    return *c;
  }
  /*! \brief Whether the pass should run under this context (opt level, disabled, instruments). */
  bool ShouldRun(const IRModule& mod, const PassInfo& info) const;
  void EnterWithScope() const;
  void ExitWithScope() const;
  TILECORE_FFI_DEFINE_MUTABLE_OBJECT_REF_METHODS(PassContext, ObjectRef, PassContextNode);
};

/*! \brief RAII: enters `ctx` in the constructor, exits in the destructor. */
class PassContextScope {
 public:
  explicit PassContextScope(PassContext ctx) : ctx_(std::move(ctx)) { ctx_.EnterWithScope(); }
  ~PassContextScope() { ctx_.ExitWithScope(); }
  PassContextScope(const PassContextScope&) = delete;
  PassContextScope& operator=(const PassContextScope&) = delete;

 private:
  PassContext ctx_;
};

class PassNode : public Object {
 public:
  PassInfo info;
  /*! \brief (IRModule, PassContext) -> IRModule, for a module pass. */
  Function func;
  /*! \brief For a Sequential: the passes in order (func is null). */
  Array<ObjectRef> passes;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("transform.Pass", PassNode, Object);
};
class Pass : public ObjectRef {
 public:
  /*! \brief Runs under PassContext::Current(). */
  IRModule operator()(IRModule mod) const;
  IRModule operator()(IRModule mod, const PassContext& ctx) const;
  TILECORE_FFI_DEFINE_OBJECT_REF_METHODS(Pass, ObjectRef, PassNode);
};

Pass CreateModulePass(std::function<IRModule(IRModule, PassContext)> fn, int64_t opt_level,
                      String name);
/*! \brief A pass that rewrites each PrimFunc of the module. */
Pass CreatePrimFuncPass(std::function<PrimFunc(PrimFunc, IRModule, PassContext)> fn,
                        int64_t opt_level, String name);
/*!
 * \brief A pass over the Graph IR. The graph travels in the module's attrs under
 * "graph" (GraphModule/ModuleGraph below), so graph passes share the pass manager,
 * contexts and instruments with the kernel passes.
 */
Pass CreateGraphPass(std::function<ir::Graph(ir::Graph, PassContext)> fn, int64_t opt_level,
                     String name);
/*! \brief A module holding `g` in attrs["graph"]. */
IRModule GraphModule(const ir::Graph& g);
/*! \brief The graph of a module made by GraphModule; TypeError naming `pass` otherwise. */
ir::Graph ModuleGraph(const IRModule& mod, const std::string& pass);

/*! \brief Runs `passes` in order; its own opt_level is 0. */
Pass Sequential(Array<Pass> passes, String name = "Sequential");

/*! \brief Records the wall time of every pass run while it is in a context. */
PassInstrument PassTimingInstrument();
/*! \brief "pass: N us" per pass, in run order, nested for Sequential. */
std::string RenderPassTiming(const PassInstrument& timing);
/*! \brief Writes `<folder>/<NNN>_<pass>_before.txt` and `_after.txt` (script text). */
PassInstrument DumpIRInstrument(String folder);

}  // namespace transform
}  // namespace tilecore
#endif  // TILECORE_TRANSFORM_PASS_H_
