// include/tilecore/runtime/process.h — starting an external program (the C compiler of the
// `c` target) without a shell.
//
// The program and its arguments are a list, passed to posix_spawnp as they are: no shell
// parses them, so quotes, `;`, `$(...)` or spaces in a path are never interpreted.
#pragma once

#include <string>
#include <vector>

namespace tilecore::runtime {

/// Runs argv[0] (looked up in PATH) with `argv`, its stdout and stderr written to
/// `output_path`; waits for it. Returns its exit status, or 128 + the signal that ended
/// it; 127 if it cannot be started (as a shell does), with the reason in `output_path`.
int RunProcess(const std::vector<std::string>& argv, const std::string& output_path);

/// Splits a command option such as "ccache gcc -m64" at whitespace into a program and its
/// first arguments (no quoting: an option value names a program, not a shell command).
std::vector<std::string> SplitCommandWords(const std::string& command);

}  // namespace tilecore::runtime
