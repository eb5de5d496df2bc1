// tests/cpp/arch/test_tile_ops.cc — the table of tile operations (tile_ops.def) and the
// instructions it makes in isa.def.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tilecore/arch/isa.h"
#include "tilecore/arch/tile_ops.h"

using namespace tilecore::arch;

TEST(TileOps, EveryRowIsAVectorEngineInstructionOfItsMnemonic) {
  ASSERT_GE(kNumTileOps, 23u);
  for (const TileOpInfo& r : kTileOpRows) {
    const InstrInfo& ins = instruction_table()[size_t(r.op)];
    EXPECT_EQ(ins.mnemonic, r.mnemonic) << r.name;
    EXPECT_EQ(ins.unit, Unit::Vector) << r.name;
    EXPECT_EQ(ins.summary, r.summary) << r.name;
    Format want = r.form == TileForm::Binary                                     ? Format::Tile3
                  : (r.form == TileForm::Convert || r.form == TileForm::Requant) ? Format::TileCvt
                                                                                 : Format::Tile2;
    EXPECT_EQ(ins.format, want) << r.name;
    EXPECT_EQ(ins.cost, r.types == TileTypes::Float ? CostClass::VectorSlow : CostClass::Vector)
        << r.name;
  }
}

TEST(TileOps, NamesAreUniqueAndFound) {
  std::set<std::string> names;
  for (const TileOpInfo& r : kTileOpRows) {
    EXPECT_TRUE(names.insert(std::string(r.name)).second) << r.name;
    EXPECT_EQ(FindTileOp(r.name), &r);
    EXPECT_EQ(FindTileIntrinsic("tile.vec_" + std::string(r.name)), &r);
    EXPECT_EQ(FindTileOpByOpcode(r.op), &r);
  }
  EXPECT_EQ(FindTileIntrinsic("tile.vec_nothing"), nullptr);
  EXPECT_EQ(FindTileIntrinsic("tile.mm"), nullptr);
  EXPECT_EQ(FindTileOpByOpcode(Opcode::Tlut), nullptr);
}

TEST(TileOps, ElementOperationsHaveCSemantics) {
  for (const TileOpInfo& r : kTileOpRows) {
    bool element = r.form != TileForm::Convert && r.form != TileForm::Requant;
    EXPECT_EQ(!r.c_float.empty(), element) << r.name;
    EXPECT_EQ(!r.c_int.empty(), element && r.types != TileTypes::Float) << r.name;
    EXPECT_EQ(!r.c_init.empty(), r.form == TileForm::Reduce) << r.name;
  }
  ASSERT_NE(FindTileOpForScalar("tir.exp"), nullptr);
  EXPECT_EQ(FindTileOpForScalar("tir.exp")->op, Opcode::Texp);
}

// The opcodes of TC1's first vector-engine group never move (saved programs stay valid).
TEST(TileOps, OpcodesKeepTheirNumbers) {
  EXPECT_EQ(int(Opcode::Tredmin) - int(Opcode::Tadd), 22);
  EXPECT_EQ(int(Opcode::Tlut), int(Opcode::Tredmin) + 1);
  EXPECT_EQ(int(Opcode::Hcall), int(Opcode::Tlut) + 1);
}
