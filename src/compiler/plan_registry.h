/*
 * src/compiler/plan_registry.h — the named plans of the strategies that choose among several
 * lowerings of one op (Conv, MatMul and Gemm). Each family of plans is registered once, by
 * name, with what it is and whether it is the strategy's plan of last resort
 * (compiler.ListPlans; tilecore.compiler.list_plans). A search offers a family's plans to the
 * cost model only while the PassContext option `compiler.disabled_plans` (names, comma
 * separated) does not name it: a user bisecting a wrong or slow result turns one family off
 * and compiles again. A plan of last resort cannot be turned off (every shape has it).
 *
 * The lowering a search returns carries the plan it is in its attribute `plan` (the family's
 * name, then its sizes), which the compiler's report and the profiler show.
 */
#ifndef TILECORE_SRC_COMPILER_PLAN_REGISTRY_H_
#define TILECORE_SRC_COMPILER_PLAN_REGISTRY_H_

#include <string>
#include <vector>

#include "tilecore/ir/function.h"

namespace tilecore {
namespace compiler {
namespace detail {

struct PlanInfo {
  std::string op;    // the op type whose strategy offers it ("Conv", "Gemm")
  std::string name;  // "conv.transposed"
  std::string doc;
  bool last_resort = false;  // the plan every shape has: it cannot be disabled
};

/*! \brief Registers a family of plans (at static initialisation); true. */
bool RegisterPlan(const std::string& op, const std::string& name, const std::string& doc,
                  bool last_resort = false);

/*! \brief Every family registered, in the order registered. */
std::vector<PlanInfo> ListPlans();

/*! \brief Whether the current PassContext leaves family `name` to be offered; ValueError
 * when `compiler.disabled_plans` names a plan that is not registered or is a last resort. */
bool PlanEnabled(const std::string& name);

/*! \brief The disabled families as text ("" when none): part of a search's memo key, so that
 * a plan chosen with a family disabled is not reused without, or the reverse. */
std::string DisabledPlansKey();

/*! \brief `f` with its attribute `plan` set to `description`. */
ir::PrimFunc WithPlan(const ir::PrimFunc& f, const std::string& description);

}  // namespace detail
}  // namespace compiler
}  // namespace tilecore

#endif  // TILECORE_SRC_COMPILER_PLAN_REGISTRY_H_
