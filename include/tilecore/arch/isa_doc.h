// include/tilecore/arch/isa_doc.h — the instruction reference, generated from isa.def.
//
// docs/tc1.md embeds this text between the markers below; a test fails when the
// two differ and rewrites the section when TILECORE_UPDATE_DOCS=1 is set, so the
// reference can never drift from the table.
#pragma once

#include <string>
#include <string_view>

#include "tilecore/arch/isa.h"

namespace tilecore::arch {

inline constexpr std::string_view kIsaDocBegin =
    "<!-- BEGIN GENERATED: instruction reference (isa_reference_markdown) -->";
inline constexpr std::string_view kIsaDocEnd = "<!-- END GENERATED: instruction reference -->";

/// Markdown: the format table and one entry per instruction (opcode, syntax,
/// dtypes, unit, semantics, cost).
std::string isa_reference_markdown();

/// The cost formula of a cost class, as prose.
std::string_view cost_text(CostClass c);

}  // namespace tilecore::arch
