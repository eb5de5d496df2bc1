// tests/cpp/arch/test_isa_doc.cc — docs/tc1.md carries the generated instruction
// reference, unchanged. Set TILECORE_UPDATE_DOCS=1 to rewrite that section.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tilecore/arch/isa.h"
#include "tilecore/arch/isa_doc.h"

using namespace tilecore::arch;

namespace {

std::string doc_path() { return std::string(TILECORE_SOURCE_DIR) + "/docs/tc1.md"; }

}  // namespace

TEST(IsaDoc, EveryInstructionHasAnEntry) {
  std::string md = isa_reference_markdown();
  for (const auto& row : instruction_table())
    EXPECT_NE(md.find("#### `" + std::string(row.mnemonic) + "`"), std::string::npos)
        << row.mnemonic;
}

TEST(IsaDoc, DocsCarryTheGeneratedReference) {
  std::string path = doc_path();
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  size_t b = doc.find(kIsaDocBegin), e = doc.find(kIsaDocEnd);
  ASSERT_NE(b, std::string::npos) << "docs/tc1.md lacks the begin marker";
  ASSERT_NE(e, std::string::npos) << "docs/tc1.md lacks the end marker";
  size_t body = b + kIsaDocBegin.size() + 1;
  std::string want = isa_reference_markdown();
  std::string have = doc.substr(body, e - body);
  if (have != want && std::getenv("TILECORE_UPDATE_DOCS")) {
    std::ofstream out(path, std::ios::binary);
    out << doc.substr(0, body) << want << doc.substr(e);
    GTEST_SKIP() << "rewrote the instruction reference in " << path;
  }
  EXPECT_EQ(have, want)
      << "docs/tc1.md is out of date: run the arch tests with TILECORE_UPDATE_DOCS=1";
}
