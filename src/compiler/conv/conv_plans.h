/*
 * src/compiler/conv/conv_plans.h — the Conv strategy's geometry and its plans, a file each: the
 * direct implicit-GEMM plan (direct.cc), the depthwise plans (depthwise.cc) and the transposed
 * int8 plan (transposed.cc). strategy_conv.cc holds the search that ranks them all by the cost
 * model.
 */
#ifndef TILECORE_SRC_COMPILER_CONV_CONV_PLANS_H_
#define TILECORE_SRC_COMPILER_CONV_CONV_PLANS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/compiler/fused_epilogue.h"
#include "src/compiler/kernel_util.h"
#include "src/compiler/matrix_precision.h"
#include "tilecore/arch/params.h"
#include "tilecore/compiler/strategy.h"

namespace tilecore {
namespace compiler {
namespace detail {
namespace conv {

namespace tc1 = arch::tc1;
inline constexpr int64_t kMaxP = 256, kMaxK = 256, kMaxTM = 128;
/*! \brief Output positions (all images) up to which a Conv's input channels are one
 * chunk (LowerConv). */
inline constexpr int64_t kFewPositions = 16;
/*! \brief The bytes of a block's two weight tiles up to which those few positions take
 * more than kMaxK channels' taps a chunk. */
inline constexpr int64_t kFewPositionsWeightBytes = int64_t{tc1::kL1Bytes} / 4;

/*! \brief A Conv's sizes, strides, dilations and pads (1-D as 2-D with one row). */
struct ConvGeom {
  int64_t N, C, H, W, M, KH, KW, OH, OW, G, Cg, Mg;
  int64_t sh, sw, dh, dw, pt, pl, pb, pr;
};

/*! \brief Fills `g` from the inputs and attributes; false (and `why`) for a Conv the
 * strategy does not take. */
bool Geometry(const std::vector<TensorSpec>& ins, const Map<String, Any>& attrs, ConvGeom* g,
              std::string* why);

/*!
 * \brief The direct plan (conv.direct, direct.cc, where it is described): an implicit GEMM whose
 * items are output rows x blocks of output channels. The constructor derives what the plan's
 * variants share and sizes R and CC for one block an item; the search (LowerConv) sets the
 * variant (TM, NB and the flags), sizes it (Fit) and builds its body (Build).
 */
struct DirectConv {
  DirectConv(const OpCall& op_call, const ConvGeom& geometry, const Params& params);
  /*! \brief R and CC for MB blocks per item (db: two patches; rows: at most so many output
   * rows, 0 as many as fit); whether they fit L1. */
  bool Fit(int64_t mb, bool db, int64_t rows = 0);
  /*! \brief The L1 bytes of an item of `rows` output rows and `cc` input channels a chunk,
   * its buffers rounded up as the planner places them. */
  int64_t L1Bytes(int64_t rows, int64_t cc, int64_t mb = 1, int64_t slots = 1) const;
  /*! \brief Blocks of output channels per item: MB where the blocks of tm split into groups
   * of MB. */
  int64_t BlocksPerItem(int64_t mblocks, int64_t tm, int64_t MB) const;
  /*! \brief The body of the plan of MB blocks an item (db: double-buffered patches; pipe:
   * items pipelined) with the sizes and flags as they are. */
  Stmt Build(int64_t MB, bool db, bool pipe) const;
  /*! \brief X[n, c .. c + cc, ih .. ih + rows, iw .. iw + cols], from L2 when staged. */
  BufferRegion XRegion(PrimExpr n, PrimExpr c, PrimExpr ih, int64_t iw, int64_t cc, int64_t rows,
                       int64_t cols) const;

  const OpCall& call;
  /*! \brief The geometry (a Conv reading every sh-th row of one kernel row: as a row stride
   * 1 one over those rows). */
  ConvGeom g;
  Params p;
  // the plan's variant, set by the search
  int64_t TM, NB = 1;      // output channels a block, images an item
  int64_t R, CC;           // output rows an item, input channels a chunk (Fit)
  bool resident = false;   // the whole weight matrix in L1 once a core
  bool pipelined = false;  // items pipelined: two sets of the per-item buffers
  bool staged = false;     // the input copied into L2 first
  bool w_staged = false;   // the weights copied into L2 first
  bool w_out = false;      // the weight blocks loaded on the DMA-out engine
  /*! \brief The scales (or f32 bias) and the int32 bias of every channel loaded into L1 once
   * a core, an item copying its channels' from there (direct.cc, ParamsResident). */
  bool params_resident = false;
  // derived from the call (direct.cc)
  DataType f32, ot, acc_t;
  MatrixPrecision mp;
  bool q, x_i8, cs_i8, qx, y_i8, skip, has_bias, cs, r_i8, few_positions, preset;
  double inv_scale, x_scale, cs_x_scale, y_inv, s_factor;
  int64_t zp, cs_x_zp, y_zp, x_rows, x_cols, KK, w_rows, w_cols, TW, few_k, budget, R0, CC0;
  Buffer X, Xsh, Xst, Wdram, Wsh, Wl2, Bv, Sv, Y, ScaleX, Rv;
  FusedEpilogue ep;
  ResidualUnits ru;
};

/*! \brief The most channels of a block of the depthwise matrix form (an mm's rows). */
inline constexpr int64_t kDepthwiseBlock = 16;

/*! \brief The outputs of a depthwise item (a 32 KiB tile of f32 or i32 sums), and of the
 * shifted matrix form's larger items (depthwise.cc). */
inline constexpr int64_t kDepthwiseTileElems = 8192;
inline constexpr int64_t kDepthwiseShiftedTileElems = 32768;

/*! \brief One form of a depthwise Conv (depthwise.cc describes each). */
struct DepthwiseForm {
  bool matrix = false;  // block-diagonal products on the matrix engine (int8, f16, bf16)
  int stages = 1;       // 1; 2: the next item's loads beside this one's compute; 3: (matrix) mm,
                        // taps and epilogue a step apart
  int64_t blocks = 1;   // (matrix) the most blocks of kDepthwiseBlock channels an item holds
  int64_t col_channels = kDepthwiseBlock;    // (matrix) the channels the column matrix is sized for
  bool shifted = false;                      // (matrix, unit strides) an mm a tap from its offset
  int64_t tile_elems = kDepthwiseTileElems;  // the most outputs an item
  bool converts_on_mm = false;               // (int8 matrix) the last mm's epilogue writes f32(acc)
};

/*! \brief A depthwise Conv (Cg = Mg = 1) on the vector engine, or in int8, f16 and bf16 on the
 * matrix engine as block-diagonal products, in `form` (depthwise.cc, where the forms are
 * described). */
PrimFunc LowerDepthwise(const OpCall& call, const ConvGeom& g, const Params& p,
                        const DepthwiseForm& form);

/*! \brief The fastest depthwise plan by the cost model (conv.depthwise.vector and .matrix,
 * the forms the tc_depthwise_* and tc_pipeline attributes leave). */
PrimFunc ChooseDepthwise(const OpCall& call, const ConvGeom& g, const Params& p);

/*! \brief The largest X tile (bytes, int8) the transposed plan keeps for all its items:
 * its two copies live through the whole kernel, beside the weights a core may keep, and in a
 * layer group the members' plans fill L1 up to what the group's descriptors leave (ResNet-50
 * int8's 50 KiB tiles of layer3 split its group). */
inline constexpr int64_t kResidentInputBytes = int64_t{32} << 10;

/*! \brief The most bytes of a Conv's per-channel scales (or of its int32 bias) the direct
 * plan keeps in L1 for all its items (DirectConv::params_resident). */
inline constexpr int64_t kResidentParamBytes = int64_t{8} << 10;
/*! \brief ... when the Conv has at least this many items a core. */
inline constexpr int64_t kMinItemsForParams = 4;

/*! \brief The most weight bytes (int8) every core of the transposed plan keeps, transposed
 * once, for all its items. */
inline constexpr int64_t kTransposedKeptWeightBytes = int64_t{256} << 10;

/*! \brief Resident weights up to a bank of L1 load with the bias and scales, before
 * their first wait (LowerConvTransposed). */
inline constexpr int64_t kEarlyWeightBytes = int64_t{tc1::kL1BankBytes};

/*! \brief How many of the fastest transposed plans are priced again with their weight
 * blocks on the DMA-out engine. */
inline constexpr int kTransposedOnOutPlans = 3;

/*! \brief Tile sizes of the transposed plan (LowerConvTransposed). */
struct TransposedPlan {
  int64_t tp = 0;  // output positions per item (the mm's rows)
  int64_t tm = 0;  // output channels per item (the mm's columns)
  // the residual added (and the activation applied) by the vector engine, not in the mm's
  // epilogue: an f32 residual streams at 4 bytes an element through the matrix engine,
  // as long as the product itself when K is small
  bool residual_on_vector = false;
  // every core keeps all the weights, transposed once (else each item loads its block): M x C
  // from DDR per core, against M x C per block of positions
  bool weights_resident = false;
  // (not resident) the weights copied once into L2, a share by each core: the items read
  // their blocks there
  bool weights_in_l2 = false;
  // images per item, each whole (tp covers an image's positions): their positions are the
  // mm's rows one image after another, and the item's weight block serves all of them
  int64_t nb = 1;
  // (not resident) the items' weight blocks loaded on the DMA-out engine, beside their X
  // tiles and residuals on the DMA-in engine (and behind the stores of the items before)
  bool weights_on_out = false;
  // of every implicit_den items of a core, the first implicit_num computed channel-major
  // instead (TransposedMixes: W x X in the matrix engine, the epilogue in the vector
  // engine, LowerConv's steps), so that both engines carry a share of the epilogue
  int64_t implicit_num = 0, implicit_den = 1;
  // the items of one X tile (its blocks of output channels) all on one core, one after
  // another (else they go round the cores): the tile is loaded twice in all (once per slot)
  // rather than by every core, or by every item when a tile has at most two items a core
  // (an X in the DDR, read once per block: ResNet-50's layer3 downsample at batch 8). Where
  // the X tiles are a multiple of the cores, with more than two items each (XMajorApplies).
  bool x_major = false;
};

/*! \brief The shares of a core's items the transposed plan may compute channel-major, as
 * (num, den): a small K leaves the matrix engine's epilogue (and an int8 residual streaming
 * through it) as long as the product, while the vector engine idles. */
inline constexpr std::pair<int64_t, int64_t> kImplicitShares[] = {{1, 4}, {1, 3}, {1, 2},
                                                                  {2, 3}, {3, 4}, {1, 1}};

/*! \brief How many of the fastest transposed plans are priced again with each X tile's
 * items on one core (TransposedPlan::x_major). */
inline constexpr int kTransposedXMajorPlans = 3;

/*! \brief How many of the fastest transposed plans are priced again with each share of
 * channel-major items. */
inline constexpr int kTransposedMixedPlans = 2;

/*! \brief The L1 a plan with channel-major items leaves beyond the 8 KiB any plan leaves, a
 * bank: a layer group's kernel holds the descriptors of all its members (SqueezeNet's 39:
 * 28 KiB), and a share's few percent is not worth a group that no longer builds. */
inline constexpr int64_t kMixedL1Headroom = int64_t(tc1::kL1BankBytes);

/*! \brief The widest K (input channels x taps) the transposed plan unfolds a Conv for: its
 * gain is the vector epilogue it saves, which a wide K's products outweigh (the plans priced
 * for a wider one only cost compile time). */
inline constexpr int64_t kTransposedUnfoldK = 640;
/*! \brief Taps beyond which an unfolding plan is priced only with its weights kept in every
 * core: each item's tap copies make every candidate's lowering long (ResNet's 7x7 stem, 49
 * an item: 18 candidates took a tenth of a second), and a stem's weights are small. */
inline constexpr int64_t kTransposedManyTaps = 9;

/*! \brief Whether the transposed plan unfolds the Conv's taps from a patch (a kernel wider
 * than 1x1, padding, or a row stride that skips rows unevenly) instead of transposing X. */
bool TransposedUnfolds(const ConvGeom& g);

/*! \brief Whether an int8 Conv can take the transposed plan: one group, K in one mm (a Conv
 * that unfolds its taps: at most kTransposedUnfoldK), an activation the mm epilogue has. */
bool TransposedFits(const OpCall& call, const FusedEpilogue& ep);

/*! \brief Whether the transposed plan may compute some items channel-major (implicit_num):
 * a 1x1 Conv that reads every input position (its X tile, loaded as is, is the product's
 * right operand) of an int8 X, whose residual (if any) comes before its activation. The plan
 * must also take one image an item. */
bool TransposedMixes(const OpCall& call, const ConvGeom& g, const FusedEpilogue& ep);

/*! \brief Whether a segment of `tiles` X tiles of `mcount` items each can give each tile's
 * items to one core (TransposedPlan::x_major): the tiles a multiple of the cores, and more
 * than two items a tile (two are loaded anyway, one per slot). */
bool XMajorSegment(int64_t tiles, int64_t mcount, int64_t cores);

/*! \brief Whether plan `t` has a segment of items XMajorSegment takes: its full tiles of
 * positions and of output channels (LowerConvTransposed's first segments). */
bool XMajorApplies(const ConvGeom& g, const TransposedPlan& t, int64_t cores);

/*! \brief Which items plan `t` computes channel-major (its share implicit_num of every
 * implicit_den of a core's items, but not a core's last), segment after segment, as
 * LowerConvTransposed takes them: two shares with the same items run the same commands. */
std::vector<bool> ChannelMajorItems(const ConvGeom& g, const TransposedPlan& t, int64_t cores);

/*! \brief The transposed plan of an int8 Conv, its epilogue in the matrix engine (transposed.cc,
 * where it is described). */
Stmt LowerConvTransposed(const OpCall& call, const Params& p, const TransposedPlan& tp);

}  // namespace conv
}  // namespace detail
}  // namespace compiler
}  // namespace tilecore
#endif  // TILECORE_SRC_COMPILER_CONV_CONV_PLANS_H_
