/*
 * src/compiler/strategy_conv.cc — the Conv strategy (1-D and 2-D; grouped, depthwise, dilated,
 * strided, padded, with bias): its plans' registration and the search that ranks them by the
 * cost model (LowerConv). The plans have a file each under conv/ (conv_plans.h): the direct
 * implicit GEMM on the matrix engine (conv/direct.cc, described there), the depthwise forms
 * and their own search (conv/depthwise.cc), the transposed int8 plan (conv/transposed.cc);
 * the geometry is conv/geometry.cc.
 *
 * The direct plan's candidates: MB blocks of output channels an item, double-buffered
 * patches or not, blocks of fewer channels (64, 32, the cores' share) or items of fewer rows
 * where the cores would be idle or unevenly loaded, several images an item in a batch. Then,
 * from the fastest of those: the weights resident in L1, items pipelined
 * (ForEachItemPipelined: the next item's loads and mms before this item's epilogue, two sets
 * of accumulators), the input or the weights staged in L2 (each core copies a share, a
 * barrier, the items read from L2), the weight blocks on the DMA-out engine. For an int8
 * Conv, the transposed product whose epilogue runs in the matrix engine (LowerConvTransposed)
 * and its variants. A plan chosen once is reused for Convs that differ only in scales
 * (PlanKey); a plan is not priced when a lower bound of its matrix engine's cycles cannot
 * beat the fastest so far, and a Conv lowered again with other tensors in L2 (or zero points
 * of 0 where its sibling's were not) prices first the plans its sibling ranked best.
 */
#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>

#include "conv/conv_plans.h"
#include "fused_epilogue.h"
#include "kernel_util.h"
#include "lookup_table.h"
#include "matrix_precision.h"
#include "plan_registry.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/cost_model.h"
#include "tilecore/ffi/reflection.h"
#include "tilecore/transform/pass.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace {

using namespace conv;  // NOLINT(build/namespaces): the plans of conv/ are this strategy's

/*! \brief A plan key without which tensors are in L2 (tc_in_l2) and whether its zero points
 * are 0 (a subtraction more or less an element: ResNet's first residual of each stage has
 * zero point 0, the others -128), for a Conv that has tensors in L2; "" for one that has
 * none (a plan for the DDR ranks its own). */
std::string SiblingPlanKey(const std::string& key) {
  if (key.find("tc_in_l2=") == std::string::npos) return "";
  std::string out;
  for (size_t at = 0; at < key.size();) {
    size_t end = key.find(';', at);
    if (end == std::string::npos) end = key.size();
    const std::string item = key.substr(at, end - at);
    const size_t eq = item.find('=');
    const std::string name = eq == std::string::npos ? "" : item.substr(0, eq);
    out += name == "tc_in_l2" || name.find("zero_point") != std::string::npos ? name + "=*" : item;
    if (end < key.size()) out += ';';
    at = end + 1;
  }
  return out;
}

/*! \brief The plans of the search before that a sibling prices again (its first ones). */
constexpr size_t kSiblingPlans = 8;

/*! \brief Bumped by ForgetConvPlanChoices: LowerConv's plans chosen and rankings are
 * dropped when it changes. */
std::atomic<uint64_t> conv_plan_generation{0};
/*! \brief Set while LowerConv searches again without its sibling's ranking. */
thread_local bool sibling_search_off = false;

const bool kConvPlansRegistered =
    RegisterPlan("Conv", "conv.direct",
                 "items of output rows x a block of output channels: the patch unfolded in "
                 "L1, the products in the matrix engine, the epilogue in the vector engine "
                 "(with its variants: weights resident, input or weights staged in L2, items "
                 "pipelined, weights on the DMA-out engine)",
                 true) &&
    RegisterPlan("Conv", "conv.transposed",
                 "int8: the transposed product Y^T = X^T W^T, its epilogue in the matrix "
                 "engine (with its variants: weights resident or in L2, on the DMA-out "
                 "engine, X-major items, a share of the items channel-major)") &&
    RegisterPlan("Conv", "conv.depthwise.vector", "a depthwise Conv's taps on the vector engine",
                 true) &&
    RegisterPlan("Conv", "conv.depthwise.matrix",
                 "int8, f16 or bf16: a depthwise Conv's taps as block-diagonal products in the "
                 "matrix engine");

/*! \brief The `plan` attribute of a direct plan: its family and sizes. */
std::string DirectPlanText(int64_t tm, int64_t mb, bool db, bool pipe, int64_t rows, int64_t cc,
                           int64_t nb, bool resident, bool staged, bool w_staged, bool w_out) {
  std::ostringstream o;
  o << "conv.direct tm=" << tm << " mb=" << mb << " rows=" << rows << " cc=" << cc;
  if (nb > 1) o << " images=" << nb;
  if (db) o << " double-buffered";
  if (pipe) o << " pipelined";
  if (resident) o << " weights-resident";
  if (staged) o << " input-in-l2";
  if (w_staged) o << " weights-in-l2";
  if (w_out) o << " weights-on-dma-out";
  return o.str();
}

/*! \brief The `plan` attribute of a transposed plan. */
std::string TransposedPlanText(const TransposedPlan& t) {
  std::ostringstream o;
  o << "conv.transposed tp=" << t.tp << " tm=" << t.tm;
  if (t.nb > 1) o << " images=" << t.nb;
  if (t.residual_on_vector) o << " residual-on-vector";
  if (t.weights_resident) o << " weights-resident";
  if (t.weights_in_l2) o << " weights-in-l2";
  if (t.weights_on_out) o << " weights-on-dma-out";
  if (t.x_major) o << " x-major";
  if (t.implicit_num > 0) o << " channel-major=" << t.implicit_num << "/" << t.implicit_den;
  return o.str();
}

PrimFunc LowerConv(const OpCall& call) {
  (void)kConvPlansRegistered;
  ConvGeom g;
  std::string why;
  Geometry(call.inputs, call.attrs, &g, &why);
  Params p = MakeParams(call);
  if (g.G > 1 && g.Cg == 1 && g.Mg == 1) return ChooseDepthwise(call, g, p);
  // the direct plan's sizes and variant, which the search sets (conv/direct.cc)
  DirectConv d(call, g, p);
  g = d.g;  // (one kernel row, a row stride: the Conv over the rows it reads, as the plan sees it)
  const MatrixPrecision& mp = d.mp;
  const DataType ot = d.ot;
  const FusedEpilogue& ep = d.ep;
  const int64_t KK = d.KK, TW = d.TW, R0 = d.R0;
  const int64_t x_rows = d.x_rows, x_cols = d.x_cols, w_rows = d.w_rows, w_cols = d.w_cols;
  const bool few_positions = d.few_positions;
  int64_t &TM = d.TM, &R = d.R, &CC = d.CC, &NB = d.NB;
  bool &resident = d.resident, &pipelined = d.pipelined, &staged = d.staged, &w_staged = d.w_staged,
       &w_out = d.w_out;
  auto fit = [&](int64_t mb, bool db, int64_t rows = 0) { return d.Fit(mb, db, rows); };
  auto blocks_per_item = [&](int64_t mblocks, int64_t tm, int64_t MB) {
    return d.BlocksPerItem(mblocks, tm, MB);
  };
  auto build = [&](int64_t MB, bool db, bool pipe) { return d.Build(MB, db, pipe); };
  // Candidates: MB dividing the full blocks, with or without double-buffered patches (the
  // chunks unrolled: up to 64), each with the R and CC that fit L1 with its buffers; the
  // cost model (cost_model.h) picks the fastest.
  const int64_t TM0 = TM;
  struct Plan {
    int64_t tm, mb;
    bool db, pipe;
    int64_t rows = 0;  // output rows per item at most (0: as many as fit)
    int64_t nb = 1;    // images per item (NB)
  };
  // The plan chosen for this key before (the same layer shape with other scales: every
  // Conv of an int8 model has its own): built again without the search.
  struct Choice {
    Plan plan;
    bool resident, staged, w_staged, w_out;
    TransposedPlan transposed;  // tp > 0: the transposed plan won
  };
  static std::mutex memo_mu;
  static std::unordered_map<std::string, Choice> memo;
  // The same Conv with other tensors in L2 (a group member lowered again once weights are
  // prefetched: only tc_in_l2 differs) ranks its plans much as the search before did: the
  // plans that search priced below its first kSiblingPlans are not priced again (each
  // candidate's kernel pipeline is most of a compile's time). Sibling key -> (the first
  // plans, every plan it priced).
  static std::unordered_map<std::string, std::pair<std::set<std::string>, std::set<std::string>>>
      rankings;
  // (both kept for one compile: ForgetConvPlanChoices; a plan chosen after a ranking depends
  // on which Convs were searched before, so a compile must not see another's)
  static uint64_t generation = 0;
  // (the plans a search may offer are part of what it chose among)
  const std::string disabled = DisabledPlansKey();
  const std::string key = PlanKey(call) + (disabled.empty() ? "" : ";disabled_plans=" + disabled);
  const bool transposed_enabled = PlanEnabled("conv.transposed");
  // the `plan` attribute of build(MB, db, pipe) as the fitting left its sizes
  auto direct_plan = [&](int64_t MB, bool db, bool pipe) {
    return WithPlan(MakeFunc(call, p, build(MB, db, pipe)),
                    DirectPlanText(TM, MB, db, pipe, R, CC, NB, resident, staged, w_staged, w_out));
  };
  auto transposed_plan = [&](const TransposedPlan& t) {
    return WithPlan(MakeFunc(call, p, LowerConvTransposed(call, p, t)), TransposedPlanText(t));
  };
  {
    std::lock_guard<std::mutex> lock(memo_mu);
    if (const uint64_t now = conv_plan_generation.load(); now != generation) {
      memo.clear();
      rankings.clear();
      generation = now;
    }
    if (auto it = memo.find(key); it != memo.end()) {
      const Choice& c = it->second;
      if (c.transposed.tp > 0) return transposed_plan(c.transposed);
      TM = c.plan.tm;
      resident = c.resident;
      staged = c.staged;
      w_staged = c.w_staged;
      w_out = c.w_out;
      pipelined = c.plan.pipe;
      NB = c.plan.nb;
      fit(c.plan.mb, c.plan.db, c.plan.rows);
      return direct_plan(c.plan.mb, c.plan.db, c.plan.pipe);
    }
  }
  const std::string sibling = SiblingPlanKey(key);
  std::set<std::string> first, priced_before;  // a sibling's ranking: empty, none
  if (!sibling.empty() && !sibling_search_off) {
    std::lock_guard<std::mutex> lock(memo_mu);
    if (auto it = rankings.find(sibling); it != rankings.end())
      std::tie(first, priced_before) = it->second;
  }
  // (a plan the sibling did not price, one of this variant's own, is priced)
  auto passed_over = [&](const std::string& name) {
    return !first.empty() && priced_before.count(name) && !first.count(name);
  };
  std::vector<std::pair<int64_t, std::string>> ranked;  // (cycles, plan) of each plan priced
  // A lower bound of the estimate of build(MB, ..) as fit() left R, CC and TM: its items' mms
  // (one per block of output channels per chunk of input channels; its loops, counted) on
  // the busiest core, which runs at least the largest item and the average of the cores that
  // have items (MatrixCommandCycles)
  // (the PassContext option compiler.price_every_plan prices them all: a search chooses the
  // same plan, which tests check; a sibling's ranking then lists them by their estimates)
  const bool price_every_plan =
      transform::PassContext::Current().GetConfig<bool>("compiler.price_every_plan", false);
  auto matrix_bound = [&](int64_t MB) {
    int64_t items = 0, total = 0, largest = 0;
    for (int64_t ow0 = 0; ow0 < g.OW; ow0 += TW) {
      const int64_t tw = std::min(TW, g.OW - ow0);
      for (auto [rcount, r] : Segments(g.OH, R))
        for (auto [mblocks, tm] : Segments(g.Mg, TM)) {
          const int64_t mb = blocks_per_item(mblocks, tm, MB);
          const int64_t n = g.N / NB * g.G * rcount * (mblocks / mb);
          int64_t item = 0;
          for (auto [ccount, cc] : Segments(g.Cg, CC))
            item += ccount * mb * MatrixCommandCycles(tm, NB * r * tw, cc * KK, ot);
          items += n;
          total += n * item;
          largest = std::max(largest, item);
        }
    }
    return std::max(largest, total / std::max<int64_t>(1, std::min(call.cores, items)));
  };
  PrimFunc best = direct_plan(1, false, false);
  std::vector<Plan> cands;
  auto add_plans = [&](int64_t tm) {
    const int64_t full_blocks = g.Mg / tm;
    for (int64_t mb : {1, 2, 4, 8, 16}) {
      if (mb > 1 && full_blocks % mb != 0) continue;
      if (mb > 1) cands.push_back({tm, mb, false, false});
      cands.push_back({tm, mb, true, false});
    }
  };
  add_plans(TM0);
  // Too few items for the cores (a late layer: few rows, few blocks of 128 channels), or
  // items that do not split evenly over them (14 row tiles over 4 cores: one core does a
  // seventh more than its share): blocks of half the channels, then of a quarter (down to
  // 32). Two items a core also overlap one's loads and epilogue with the other's mm.
  auto items_of = [&](int64_t tm) {
    return g.N * g.G * ((g.OH + R0 - 1) / R0) * ((g.Mg + tm - 1) / tm);
  };
  auto uneven = [&](int64_t items) { return items < 2 * call.cores || items % call.cores != 0; };
  std::vector<int64_t> tms{TM0};
  for (int64_t tm = TM0; tm > 32 && tm < 2 * g.Mg && uneven(items_of(tm));) {
    tm /= 2;
    add_plans(tm);
    tms.push_back(tm);
  }
  // Halving cannot split some channel counts evenly: 160 channels over 4 cores are items of
  // 64 (three: a core idle) or of 32 (five: one core does two). Blocks of the cores' share
  // rounded up to the matrix engine's rows (48: four items, the last of 16) leave no core
  // more than one item. (Not below 32 channels: a block's weights and epilogue serve too few.)
  // Over a few positions (a squeeze-excite's fc2 to 672 channels) such a block may exceed
  // TM0, one a core instead of two on some, while its two weight tiles take at most
  // kFewPositionsWeightBytes: each item's chain of DDR latencies is what the member takes.
  // (Offered there even when halved blocks split evenly: blocks of 32 to 1,152 channels are
  // 36 items, nine chains a core, where one block of 288 a core is one.)
  if (uneven(items_of(tms.back())) || few_positions) {
    const int64_t rows_mm = MatrixBlockRows(ot);
    const int64_t share = (g.Mg + call.cores - 1) / call.cores;
    const int64_t tm = (share + rows_mm - 1) / rows_mm * rows_mm;
    const bool few_block =
        few_positions && tm > TM0 && tm <= int64_t(tc1::kMaxMmDim) &&
        2 * tm * CC * KK * int64_t(mp.operand_bytes()) <= kFewPositionsWeightBytes;
    if (tm >= 32 && (tm < TM0 || few_block) && std::find(tms.begin(), tms.end(), tm) == tms.end()) {
      add_plans(tm);
      tms.push_back(tm);
    }
  }
  // Still fewer items than cores (a projection to 40 channels over 14 x 14 positions is one
  // or two items): fewer rows per item, so that every core takes a share of the positions
  // (each item then reads its rows of the input, not the whole of it).
  if (TW == g.OW && R0 > 1) {
    for (int64_t tm : tms) {
      const int64_t items = items_of(tm);
      if (items >= call.cores) continue;
      const int64_t splits = (call.cores + items - 1) / items;
      const int64_t rows = (R0 + splits - 1) / splits;
      if (rows >= R0) continue;
      cands.push_back({tm, 1, true, false, rows});
      cands.push_back({tm, 1, false, false, rows});
    }
  }
  // Rows per item that divide the output rows evenly: 28 rows as 9 + 9 + 9 + 1 leave a
  // core a ninth of the others' work, 4 x 7 none.
  if (R0 > 1 && R0 < g.OH && g.OH % R0 != 0) {
    int64_t even = R0;
    while (even > 1 && g.OH % even != 0) --even;
    if (even * 2 >= R0) {
      for (size_t i = 0, n = cands.size(); i < n; ++i) {
        Plan c = cands[i];
        c.rows = even;
        cands.push_back(c);
      }
    }
  }
  // Rows per item whose positions fill whole blocks of the matrix engine's 32 columns: 8
  // rows of 28 are 7 blocks, where 9 rows (252 positions) leave the eighth an eighth empty.
  if (TW == g.OW && R0 < g.OH) {
    const int64_t step = 32 / std::gcd<int64_t>(g.OW, 32);
    const int64_t whole = R0 / step * step;
    if (whole > 0 && whole != R0) {
      for (size_t i = 0, n = cands.size(); i < n; ++i) {
        Plan c = cands[i];
        c.rows = whole;
        cands.push_back(c);
      }
    }
  }
  // Twice the rows per item (up to 512 positions): a strided window re-reads fewer rows
  // per output row, and each im2col copy (one per tap) moves twice the data for its
  // latency (ResNet-50's stem: 7 x 7 taps, stride 2, 112 columns).
  if (TW == g.OW && R0 < g.OH && g.KH * g.KW > 1) {
    const int64_t twice = std::min(g.OH, 2 * R0);
    cands.push_back({TM0, 1, true, false, twice});
    cands.push_back({TM0, 1, false, false, twice});
  }
  // A batch: each plan also with several images per item, their positions side by side in
  // the matrix engine's columns (up to 512), when an image's positions are few (a late layer's
  // 7 x 7 leave most of a block of 32 columns empty; 2 x 49 or 4 x 49 fill them better, and the
  // items read each weight block once for all their images).
  // (tc_images_per_item K overrides the cost model: the plans of K images per item only)
  const int64_t want_nb = AttrInt(call.attrs, "tc_images_per_item", 0);
  if (want_nb > 1 || (want_nb == 0 && g.N > 1 && TW == g.OW && R0 == g.OH && g.OH * g.OW < 256)) {
    const std::vector<int64_t> nbs =
        want_nb > 1 ? std::vector<int64_t>{want_nb} : std::vector<int64_t>{2, 4, 8};
    for (size_t i = 0, n = cands.size(); i < n; ++i) {
      for (int64_t nb : nbs) {
        if (g.N % nb != 0 || (want_nb == 0 && nb * g.OH * g.OW > 512)) continue;
        Plan c = cands[i];
        c.nb = nb;
        cands.push_back(c);
      }
    }
  }
  // A plan whose buffers leave the code generator less than 8 KiB of L1 (its descriptors
  // and scratch) does not fit.
  const int64_t l1_for_buffers = call.l1_bytes - (int64_t{8} << 10);
  // (headroom: more L1 left free, a plan with channel-major items')
  auto estimate = [&](const PrimFunc& f, int64_t headroom = 0) {
    KernelCost k = EstimateStrategy(f, call.l1_bytes, static_cast<int>(call.cores));
    return k.local_bytes > l1_for_buffers - headroom ? -1 : k.cycles;
  };
  // (a plan whose nested buffers alone pass that does not fit: refused before its kernel
  // pipeline, which is most of a candidate's time)
  auto cannot_fit = [&](const PrimFunc& f) { return NestedLocalBytes(f->body) > l1_for_buffers; };
  int64_t best_cycles = estimate(best);
  if (best_cycles < 0 || want_nb > 1)
    best_cycles = std::numeric_limits<int64_t>::max();  // the plan of last resort
  Plan chosen{TM0, 1, false, false};
  bool chosen_resident = false;
  // then the best plan with the weights resident, when they take at most half of L1
  // (tc_resident 0 or 1 overrides the cost model: never, or whenever the variant fits)
  const int64_t reside = AttrInt(call.attrs, "tc_resident", -1);
  const bool may_reside = g.G == 1 && mp.operand_bytes() * g.Mg * g.Cg * KK <= call.l1_bytes / 2;
  if (may_reside && reside != 0) cands.push_back({0, 0, false, false});
  // (asked for: also with the rows that fit, when the chosen plan's do not leave it room)
  if (may_reside && reside == 1) cands.push_back({0, 1, false, false});
  // then the chosen plan pipelined across items, and one item of 128 channels pipelined
  // (the second set of accumulators may not fit the chosen plan's larger items)
  // (tc_pipeline 0 or 1 overrides the cost model: never, or whenever a pipelined plan fits)
  const int64_t pipeline = AttrInt(call.attrs, "tc_pipeline", -1);
  if (pipeline != 0) {
    cands.push_back({-1, 0, false, false});
    cands.push_back({TM0, 1, true, true});
  }
  // then the chosen plan reading its input from L2 (staged), when the input fits half of it
  // and several items read it (tc_stage_input 0 or 1 overrides the cost model)
  const int64_t stage_input = AttrInt(call.attrs, "tc_stage_input", -1);
  const int64_t x_bytes = x_rows * x_cols * call.inputs[0]->dtype.lane_bytes();
  if (stage_input == 1 || (stage_input != 0 && x_bytes <= int64_t(tc1::kL2Bytes / 2) && g.Mg > TM0))
    cands.push_back({-2, 0, false, false});
  // then the chosen plan with its weights staged in L2, when they take at most 256 KiB and
  // come from the DDR (tc_stage_weights 0 or 1 overrides the cost model)
  const int64_t stage_weights = AttrInt(call.attrs, "tc_stage_weights", -1);
  const int64_t w_bytes = w_rows * w_cols * call.inputs[1]->dtype.lane_bytes();
  if (stage_weights == 1 ||
      (stage_weights != 0 && w_bytes <= (int64_t{256} << 10) && p.in[1]->scope.view() == "global"))
    cands.push_back({-3, 0, false, false});
  // then the chosen plan with its weights on the DMA-out engine (tc_weights_on_out 0 or 1
  // overrides the cost model)
  const int64_t weights_on_out = AttrInt(call.attrs, "tc_weights_on_out", -1);
  if (weights_on_out != 0) cands.push_back({-4, 0, false, false});
  bool chosen_pipe = false, chosen_staged = false, chosen_w_staged = false, chosen_w_out = false;
  // plan -> whether pricing it got to the end of the loop (it fit)
  std::map<
      std::tuple<int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t, bool, bool, bool, bool>,
      bool>
      priced;
  for (Plan c : cands) {
    const bool resident_variant = c.tm == 0;
    if (c.tm == 0) {  // the resident variant of the chosen plan
      resident = true;
      const bool default_rows = c.mb == 1;
      c = chosen;
      if (default_rows) c.rows = 0;
    } else if (c.tm == -1) {
      resident = chosen_resident;
      c = chosen;
      c.pipe = true;
    } else if (c.tm == -2) {
      resident = chosen_resident;
      c = chosen;
      staged = true;
    } else if (c.tm == -3) {
      resident = chosen_resident;
      c = chosen;
      staged = chosen_staged;
      w_staged = true;
    } else if (c.tm == -4) {
      resident = chosen_resident;
      c = chosen;
      staged = chosen_staged;
      w_staged = chosen_w_staged;
      w_out = true;
    }
    pipelined = c.pipe;
    TM = c.tm;
    NB = c.nb;
    if (want_nb > 0 && c.nb != want_nb) continue;
    if (!fit(c.mb, c.db, c.rows) || (c.db && (g.Cg + CC - 1) / CC > 64)) continue;
    const bool forced = (pipeline == 1 && c.pipe && !chosen_pipe) ||
                        (staged && !chosen_staged && stage_input == 1) ||
                        (w_staged && stage_weights == 1) || (resident_variant && reside == 1) ||
                        (w_out && weights_on_out == 1);
    // a plan already priced (two candidates the fitting made equal): the same code, the
    // same cycles, so it could not win now (each candidate's kernel pipeline is most of
    // a compile's time)
    // (its state left as pricing it left it: the staging flags stay set after a plan that
    // does not fit)
    const auto plan_key =
        std::make_tuple(TM, c.mb, c.db, c.pipe, R, CC, NB, resident, staged, w_staged, w_out);
    if (auto seen = priced.find(plan_key); !forced && seen != priced.end()) {
      if (seen->second) {
        staged = false;
        w_staged = false;
        w_out = false;
      }
      continue;
    }
    const std::string name =
        DirectPlanText(TM, c.mb, c.db, c.pipe, R, CC, NB, resident, staged, w_staged, w_out);
    if (!forced &&
        (passed_over(name) || (!price_every_plan && matrix_bound(c.mb) >= best_cycles))) {
      // (a plan that cannot beat the fastest so far is not ranked for the siblings either:
      // one of them prices it again)
      staged = false;
      w_staged = false;
      w_out = false;
      continue;
    }
    PrimFunc f = direct_plan(c.mb, c.db, c.pipe);
    int64_t cycles = 0;
    try {
      cycles = cannot_fit(f) ? -1 : estimate(f);
    } catch (const ffi::Error&) {
      priced.emplace(plan_key, false);
      continue;  // does not fit once the buffers are placed in banks
    }
    priced.emplace(plan_key, cycles >= 0);
    if (cycles < 0) continue;
    ranked.emplace_back(cycles, name);
    if (cycles < best_cycles || forced) {
      best = f;
      best_cycles = cycles;
      chosen = c;
      chosen_resident = resident;
      chosen_pipe = c.pipe;
      chosen_staged = staged;
      chosen_w_staged = w_staged;
      chosen_w_out = w_out;
    }
    staged = false;
    w_staged = false;
    w_out = false;
  }
  // then the transposed plan (its epilogue in the matrix engine), when it fits
  // (tc_transposed 0 or 1 overrides the cost model: never, or whenever it fits)
  TransposedPlan chosen_transposed;
  // (a plan forced by tc_pipeline or tc_stage_input = 1 stays unless tc_transposed = 1 too)
  const int64_t transposed = AttrInt(call.attrs, "tc_transposed", -1);
  const bool forced = (pipeline == 1 && chosen_pipe) || (stage_input == 1 && chosen_staged) ||
                      (stage_weights == 1 && chosen_w_staged) || (reside == 1 && chosen_resident);
  const std::vector<int64_t> share_asked = AttrInts(call.attrs, "tc_implicit_items", {});
  if (!transposed_enabled && (transposed == 1 || AttrInt(call.attrs, "tc_x_major", -1) == 1 ||
                              (!share_asked.empty() && share_asked[0] > 0)))
    TILECORE_THROW(ValueError) << "Conv: tc_transposed 1, tc_x_major 1 and a share in "
                                  "tc_implicit_items ask for conv.transposed, which "
                                  "compiler.disabled_plans turns off";
  if (transposed == 1) best_cycles = std::numeric_limits<int64_t>::max();
  if (transposed_enabled && TransposedFits(call, ep) &&
      (transposed == 1 || (transposed != 0 && !forced))) {
    const bool unfolds = TransposedUnfolds(g);  // (one image an item)
    const bool many_taps = unfolds && g.KH * g.KW > kTransposedManyTaps;
    const bool may_keep = g.M * g.C * g.KH * g.KW <= kTransposedKeptWeightBytes;
    std::vector<std::pair<int64_t, TransposedPlan>> priced_transposed;  // (cycles, plan)
    const std::vector<int64_t> want_share = AttrInts(call.attrs, "tc_implicit_items", {});
    if (!want_share.empty() && (want_share.size() != 2 || want_share[0] < 0 || want_share[1] < 1 ||
                                want_share[0] > want_share[1]))
      TILECORE_THROW(ValueError) << "Conv: tc_implicit_items is [num, den] with 0 <= num <= den";
    // (a share asked for: only plans of that share are chosen; the others are priced to
    // find the fastest sizes)
    const bool share_forced = !want_share.empty() && want_share[0] > 0;
    const int64_t x_major = AttrInt(call.attrs, "tc_x_major", -1);
    // (whether the plan fits)
    auto price = [&](const TransposedPlan& t) {
      // (a sibling's ranking lists plans without their share of channel-major items: a share
      // is priced with its plan, and the shares would crowd the plain plans out of its first)
      TransposedPlan plain = t;
      plain.implicit_num = 0;
      const std::string name = TransposedPlanText(plain);
      if (transposed != 1 && passed_over(name)) return false;
      int64_t cycles = -1;
      PrimFunc f;
      try {
        f = transposed_plan(t);
        cycles = cannot_fit(f) ? -1 : estimate(f, t.implicit_num > 0 ? kMixedL1Headroom : 0);
      } catch (const ffi::Error&) {
        return false;  // does not fit once the buffers are placed in banks
      }
      if (cycles < 0) return false;
      ranked.emplace_back(cycles, name);
      priced_transposed.emplace_back(cycles, t);
      if ((share_forced && t.implicit_num == 0) || (x_major == 1 && !t.x_major)) return true;
      if (cycles < best_cycles) {
        best = f;
        best_cycles = cycles;
        chosen_transposed = t;
      }
      return true;
    };
    // (an unfolding plan: 384, three rows of a stem's 111 or 112 columns, and on a wide map
    // items of 6 to 8 whole rows, whose patches re-read fewer rows; not 1024, whose patches
    // and unfolded tiles leave L1 no room for two items)
    std::vector<int64_t> tps = {128, 256, 384, 512, 1024};
    for (int64_t rows : {6, 7, 8})
      if (unfolds && rows * g.OW > 512) tps.push_back(rows * g.OW);
    for (int64_t tp : tps) {
      if ((tp == 384 && !unfolds) || (tp == 1024 && unfolds)) continue;
      // items of 32 output channels when those of 64 would leave cores idle or unevenly
      // loaded (a small map: its positions are one item's)
      const int64_t HWo = g.OH * g.OW;
      const int64_t items64 =
          g.N * ((HWo + std::min(tp, HWo) - 1) / std::min(tp, HWo)) * ((g.M + 63) / 64);
      const bool few = g.M > 32 && items64 < 2 * int64_t(call.cores);
      // Channels that no block of 32 divides leave every size above a last, narrower
      // segment of items, which runs after the others on one core (its loads behind their
      // stores): also blocks of a share of the channels, one or two per core (1000: 250, 125).
      std::vector<int64_t> tms = {32, 64, 128, 256};
      for (int64_t k = 1; g.M % 32 != 0 && k <= 2; ++k) {
        const int64_t share = (g.M + k * call.cores - 1) / (k * call.cores);
        if (share > 32 && share <= 256 && share % 32 != 0) tms.push_back(share);
      }
      for (int64_t tm : tms) {
        if (tm == 32 && !few) continue;
        for (int variant = 0; variant < 8; ++variant) {
          const bool rv = variant & 1, resident = variant & 2, in_l2 = variant & 4;
          if (resident && !may_keep) continue;
          if (many_taps && may_keep && !resident) continue;
          if (in_l2 && (resident || !may_keep || p.in[1]->scope.view() != "global")) continue;
          if ((stage_weights == 1 && !in_l2) || (stage_weights == 0 && in_l2)) continue;
          const bool r_i8 = ep.residual >= 0 && call.inputs[ep.residual]->dtype == DataType::Int(8);
          if (rv && (ep.residual < 0 || r_i8)) continue;  // an int8 residual streams at 1 byte
          const int64_t HW = g.OH * g.OW;
          // a batch: also NB whole images per item, up to tp positions (each size once)
          for (int64_t nb : {1, 2, 4, 8}) {
            if (nb > 1 &&
                (unfolds || g.N % nb != 0 || nb * HW > tp || (tp != 128 && tp / 2 >= nb * HW)))
              continue;
            if (want_nb > 0 && nb != want_nb) continue;
            TransposedPlan t{std::min(tp, HW),
                             std::min(tm, g.M),
                             rv,
                             resident,
                             in_l2,
                             nb,
                             weights_on_out == 1 && !resident};
            // each size once (196 positions: 128, then 196)
            if ((nb == 1 && tp != 128 && tp / 2 >= t.tp) || (tm != 64 && tm / 2 >= t.tm)) continue;
            price(t);
          }
        }
      }
    }
    // then the fastest few with their weight blocks on the DMA-out engine (the weights then
    // load beside the X tiles and residuals; a plan slower by a little may gain the most)
    // the plans priced so far, fastest first (a copy: pricing appends to the list)
    auto fastest_priced = [&]() {
      std::vector<std::pair<int64_t, TransposedPlan>> fastest = priced_transposed;
      std::stable_sort(fastest.begin(), fastest.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      return fastest;
    };
    if (weights_on_out == -1) {
      const std::vector<std::pair<int64_t, TransposedPlan>> fastest = fastest_priced();
      int tried = 0;
      for (const auto& [cycles, plan] : fastest) {
        if (tried == kTransposedOnOutPlans) break;
        if (plan.weights_resident) continue;
        TransposedPlan t = plan;
        t.weights_on_out = true;
        price(t);
        ++tried;
      }
    }
    // then the fastest few again with each X tile's items on one core (an X read from the
    // DDR once a block of output channels reads it once, not once per block; tc_x_major 1:
    // every plan it applies to, and only those chosen)
    if (x_major != 0) {
      const std::vector<std::pair<int64_t, TransposedPlan>> fastest = fastest_priced();
      int tried = 0;
      for (const auto& [cycles, plan] : fastest) {
        if (x_major == -1 && tried == kTransposedXMajorPlans) break;
        if (plan.x_major || !XMajorApplies(g, plan, call.cores)) continue;
        TransposedPlan t = plan;
        t.x_major = true;
        price(t);
        ++tried;
      }
    }
    // then the fastest few again with each share of their items channel-major (a 1x1
    // Conv's epilogue then runs on both engines; tc_implicit_items [num, den] prices that
    // share alone, tc_implicit_items [0, 1] none)
    if (TransposedMixes(call, g, ep) && (want_share.empty() || want_share[0] > 0)) {
      const std::vector<std::pair<int64_t, TransposedPlan>> fastest = fastest_priced();
      int tried = 0;
      for (const auto& [cycles, plan] : fastest) {
        if (tried == kTransposedMixedPlans) break;
        if (plan.nb != 1) continue;
        std::vector<std::pair<int64_t, int64_t>> shares(std::begin(kImplicitShares),
                                                        std::end(kImplicitShares));
        if (!want_share.empty()) shares = {{want_share[0], want_share[1]}};
        bool fits = false;  // (a plan whose mixed forms overflow L1 does not count)
        // Shares that compute the same items channel-major (few items a core make many) run
        // the same commands but for the test of an item's share, whose arithmetic is least
        // for the smallest denominator: only that share of them is priced.
        std::map<std::vector<bool>, std::pair<int64_t, int64_t>> cheapest;  // items -> share
        std::vector<std::vector<bool>> items_of_share;
        for (const auto& [num, den] : shares) {
          TransposedPlan t = plan;
          t.implicit_num = num;
          t.implicit_den = den;
          items_of_share.push_back(ChannelMajorItems(g, t, call.cores));
          auto [it, fresh] = cheapest.emplace(items_of_share.back(), std::make_pair(num, den));
          if (!fresh && den < it->second.second) it->second = {num, den};
        }
        for (size_t i = 0; i < shares.size(); ++i) {
          TransposedPlan t = plan;
          std::tie(t.implicit_num, t.implicit_den) = shares[i];
          if (cheapest.at(items_of_share[i]) != shares[i]) continue;
          fits = price(t) || fits;
        }
        tried += fits ? 1 : 0;
      }
    }
  }
  const int64_t got_nb = chosen_transposed.tp > 0 ? chosen_transposed.nb : chosen.nb;
  if (want_nb > 1 && got_nb != want_nb)
    TILECORE_THROW(ValueError) << "Conv: no plan of tc_images_per_item " << want_nb
                               << " images per item fits L1";
  if (!first.empty() && ranked.empty()) {
    // nothing the ranking left fits here (the sibling's first plans were its own): the
    // whole search after all
    sibling_search_off = true;
    PrimFunc f;
    try {
      f = LowerConv(call);
    } catch (...) {
      sibling_search_off = false;
      throw;
    }
    sibling_search_off = false;
    return f;
  }
  std::lock_guard<std::mutex> lock(memo_mu);
  if (generation != conv_plan_generation.load()) return best;  // (forgotten meanwhile)
  memo.emplace(key, Choice{chosen, chosen_resident, chosen_staged, chosen_w_staged, chosen_w_out,
                           chosen_transposed});
  if (!sibling.empty() && first.empty()) {  // (a full search: its ranking, for the siblings)
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    std::set<std::string> top, all;
    for (const auto& [cycles, name] : ranked) {
      if (top.size() < kSiblingPlans) top.insert(name);
      all.insert(name);
    }
    if (!top.empty()) rankings.emplace(sibling, std::make_pair(std::move(top), std::move(all)));
  }
  return best;
}

void ForgetConvPlanChoices() { conv_plan_generation.fetch_add(1); }

std::string CheckConv(const std::string& op, const Map<String, Any>& attrs,
                      const std::vector<TensorSpec>& ins) {
  if (ins.size() < 2 || !ins[0].defined() || !ins[1].defined()) return "Conv: expects X and W";
  // (the weights' block-diagonal groups: the driver's MAC count and roofline divide by it)
  const int64_t block_diagonal = AttrInt(attrs, "tc_block_diagonal", 1);
  if (block_diagonal < 1 || ins[1]->shape.size() < 2 || ins[1]->shape[1] % block_diagonal != 0)
    return "Conv: tc_block_diagonal " + std::to_string(block_diagonal) +
           " must be at least 1 and divide the weights' input channels";
  std::vector<TensorSpec> operands = ins;  // without a fused residual
  std::string why = CheckFusedEpilogue(op, attrs, &operands);
  if (!why.empty()) return why;
  TensorSpec channel_scale;  // tc_channel_scale: the input after the operands
  const bool cs = AttrInt(attrs, "tc_channel_scale", 0) != 0;
  if (cs) {
    const size_t n = GetMatrixPrecision(attrs).int8() ? 4 : 3;
    if (operands.size() != n + 1 || !operands.back().defined())
      return "Conv: tc_channel_scale needs the per-channel scale as input " + std::to_string(n) +
             ", after the operands (the bias may be omitted)";
    channel_scale = operands.back();
    operands.pop_back();
  }
  why = CheckMatrixInputs(op, attrs, operands);
  if (!why.empty()) return why;
  ConvGeom g;
  if (!Geometry(operands, attrs, &g, &why)) return why;
  std::vector<int64_t> out{g.N, g.M, g.OH, g.OW};
  if (Shape(ins[0]).size() == 3) out.erase(out.begin() + 2);
  why = CheckResidualShape(op, GetFusedEpilogue(attrs, ins.size()), ins, out);
  if (!why.empty()) return why;
  why = CheckLut(op, attrs);
  if (!why.empty()) return why;
  if (HasAttr(attrs, "tc_lut") && HasAttr(attrs, "tc_activation"))
    return "Conv: tc_lut is the activation: it goes without tc_activation";
  if (cs) {
    const MatrixPrecision mp = GetMatrixPrecision(attrs);
    if (g.G != 1) return "Conv: tc_channel_scale needs one group";
    const bool x_i8 = operands[0]->dtype == DataType::Int(8);
    if (mp.name != "f32" && !(mp.int8() && (operands[0]->dtype == DataType::Float(32) || x_i8)))
      return "Conv: tc_channel_scale needs f32 data, in f32 or int8 (quantised on load), or "
             "int8 data in int8";
    if (x_i8 != HasAttr(attrs, "tc_channel_scale.tc_x_scale"))
      return "Conv: tc_channel_scale of int8 data goes with tc_channel_scale.tc_x_scale (the "
             "data's code), of f32 data without";
    if (x_i8) {
      why = CheckInt8Code(attrs, "tc_channel_scale.tc_x_scale", "tc_channel_scale.tc_x_zero_point",
                          "Conv");
      if (!why.empty()) return why;
    }
    auto shape = Shape(channel_scale);
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    if (channel_scale->dtype != DataType::Float(32) || shape.empty() || shape[0] != 1 ||
        count != g.C)
      return "Conv: the channel scale must be float32 with one value per input channel, [1, C, "
             "...]";
  }
  for (const char* knob :
       {"tc_pipeline", "tc_stage_input", "tc_stage_weights", "tc_weights_on_out", "tc_transposed",
        "tc_resident", "tc_depthwise_matrix", "tc_channel_scale"}) {
    if (!HasAttr(attrs, knob)) continue;
    auto v = attrs.Get(String(knob))->try_cast<int64_t>();
    const bool pipeline = std::string(knob) == "tc_pipeline";
    const bool three = pipeline && v && *v == 2;  // (depthwise)
    if (!v || (*v != 0 && *v != 1 && !three))
      return std::string("Conv: ") + knob + " must be 0 or 1" +
             (pipeline ? " (2: three stages, a depthwise Conv's)" : "");
    if (three && !(g.G > 1 && g.Cg == 1 && g.Mg == 1))
      return "Conv: tc_pipeline 2 (three stages) is a depthwise Conv's";
    if (three &&
        (GetMatrixPrecision(attrs).operand == DataType::Float(32) ||
         AttrInt(attrs, "tc_residual", 0) != 0 || AttrInt(attrs, "tc_depthwise_matrix", 1) == 0))
      return "Conv: tc_pipeline 2 (three stages) needs the matrix form (int8, f16 or bf16) "
             "without a residual";
  }
  // (a depthwise Conv that may take the matrix form: int8, f16 or bf16, not forced off it)
  const bool depthwise_matrix = g.G > 1 && g.Cg == 1 && g.Mg == 1 &&
                                GetMatrixPrecision(attrs).operand != DataType::Float(32) &&
                                AttrInt(attrs, "tc_depthwise_matrix", 1) != 0;
  if (HasAttr(attrs, "tc_depthwise_blocks")) {
    auto v = attrs.Get(String("tc_depthwise_blocks"))->try_cast<int64_t>();
    if (!v || (*v != 1 && *v != 2 && *v != 4 && *v != 16))
      return "Conv: tc_depthwise_blocks must be 1, 2, 4 or 16";
    if (*v > 1 && !depthwise_matrix)
      return "Conv: tc_depthwise_blocks above 1 is the depthwise matrix form's (int8, f16 or "
             "bf16)";
  }
  if (HasAttr(attrs, "tc_depthwise_col_channels")) {
    auto v = attrs.Get(String("tc_depthwise_col_channels"))->try_cast<int64_t>();
    if (!v || (*v != 4 && *v != 8 && *v != 16))
      return "Conv: tc_depthwise_col_channels must be 4, 8 or 16";
    if (!depthwise_matrix)
      return "Conv: tc_depthwise_col_channels is the depthwise matrix form's (int8, f16 or bf16)";
    if (*v < 16 && AttrInt(attrs, "tc_depthwise_blocks", 1) > 1)
      return "Conv: tc_depthwise_col_channels below 16 is for items of one block "
             "(tc_depthwise_blocks 1)";
  }
  if (HasAttr(attrs, "tc_depthwise_shifted")) {
    auto v = attrs.Get(String("tc_depthwise_shifted"))->try_cast<int64_t>();
    if (!v || (*v != 0 && *v != 1)) return "Conv: tc_depthwise_shifted must be 0 or 1";
    if (*v == 1 && !depthwise_matrix)
      return "Conv: tc_depthwise_shifted is the depthwise matrix form's (int8, f16 or bf16)";
    if (*v == 1 && (g.sh != 1 || g.sw != 1))
      return "Conv: tc_depthwise_shifted 1 needs unit strides";
  }
  if (HasAttr(attrs, "tc_depthwise_mm_converts")) {
    auto v = attrs.Get(String("tc_depthwise_mm_converts"))->try_cast<int64_t>();
    if (!v || (*v != 0 && *v != 1)) return "Conv: tc_depthwise_mm_converts must be 0 or 1";
    if (*v == 1 && !(depthwise_matrix && GetMatrixPrecision(attrs).int8()))
      return "Conv: tc_depthwise_mm_converts 1 needs the int8 depthwise matrix form";
  }
  if (HasAttr(attrs, "tc_images_per_item")) {
    auto v = attrs.Get(String("tc_images_per_item"))->try_cast<int64_t>();
    if (!v || *v < 1 || g.N % *v != 0 || (*v > 1 && g.G > 1 && g.Cg == 1 && g.Mg == 1))
      return "Conv: tc_images_per_item must be a divisor of the batch (" + std::to_string(g.N) +
             "), 1 for a depthwise Conv";
  }
  return "";
}

}  // namespace
}  // namespace detail

TILECORE_FFI_STATIC_INIT_BLOCK({
  RegisterStrategy("Conv", Strategy{detail::CheckConv, detail::LowerConv,
                                    [](const OpCall&, int) { return std::string("onnx"); }});
});

// (a compile starts with it: its Conv plans depend on its own searches only)
TILECORE_REGISTER_GLOBAL("compiler.ForgetPlanChoices").set_body_typed([]() {
  detail::ForgetConvPlanChoices();
});

}  // namespace compiler
}  // namespace tilecore
