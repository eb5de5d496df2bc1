/*
 * src/compiler/plan_registry.cc — the registry of plan families (plan_registry.h) and the
 * PassContext option `compiler.disabled_plans` that turns some off.
 */
#include "plan_registry.h"

#include <algorithm>
#include <mutex>
#include <sstream>

#include "tilecore/ffi/error.h"
#include "tilecore/ffi/function.h"
#include "tilecore/transform/pass.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

using ffi::Any;
using ffi::Array;
using ffi::String;

std::vector<PlanInfo>& Registry(std::mutex** mu) {
  static std::mutex m;
  static std::vector<PlanInfo> plans;
  *mu = &m;
  return plans;
}

/*! \brief The names `compiler.disabled_plans` gives (comma separated, spaces ignored). */
std::vector<std::string> DisabledNames() {
  const std::string text =
      transform::PassContext::Current().GetConfig<String>("compiler.disabled_plans", String(""));
  std::vector<std::string> names;
  std::string cur;
  for (char c : text + ",") {
    if (c == ',') {
      if (!cur.empty()) names.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

bool RegisterPlan(const std::string& op, const std::string& name, const std::string& doc,
                  bool last_resort) {
  std::mutex* mu = nullptr;
  auto& plans = Registry(&mu);
  std::lock_guard<std::mutex> lock(*mu);
  plans.push_back({op, name, doc, last_resort});
  return true;
}

std::vector<PlanInfo> ListPlans() {
  std::mutex* mu = nullptr;
  auto& plans = Registry(&mu);
  std::lock_guard<std::mutex> lock(*mu);
  return plans;
}

bool PlanEnabled(const std::string& name) {
  const std::vector<std::string> disabled = DisabledNames();
  if (disabled.empty()) return true;
  const std::vector<PlanInfo> plans = ListPlans();
  for (const std::string& d : disabled) {
    auto it =
        std::find_if(plans.begin(), plans.end(), [&](const PlanInfo& p) { return p.name == d; });
    if (it == plans.end()) {
      std::string known;
      for (const PlanInfo& p : plans)
        if (!p.last_resort) known += (known.empty() ? "" : ", ") + p.name;
      TILECORE_THROW(ValueError) << "compiler.disabled_plans: no plan `" << d
                                 << "` (the plans that may be disabled: " << known << ")";
    }
    if (it->last_resort)
      TILECORE_THROW(ValueError) << "compiler.disabled_plans: `" << d << "` is the " << it->op
                                 << " strategy's plan of last resort, which every shape has";
  }
  return !std::binary_search(disabled.begin(), disabled.end(), name);
}

std::string DisabledPlansKey() {
  std::ostringstream o;
  for (const std::string& d : DisabledNames()) o << d << ',';
  return o.str();
}

ir::PrimFunc WithPlan(const ir::PrimFunc& f, const std::string& description) {
  return f.WithAttr("plan", String(description));
}

TILECORE_REGISTER_GLOBAL("compiler.ListPlans").set_body_typed([]() {
  Array<Any> out;
  for (const PlanInfo& p : ListPlans())
    out.push_back(Any(Array<Any>{Any(String(p.op)), Any(String(p.name)), Any(String(p.doc)),
                                 Any(p.last_resort)}));
  return out;
});

}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
