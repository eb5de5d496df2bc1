// src/runtime/process.cc — RunProcess: posix_spawnp with the output redirected to a file.
#include "tilecore/runtime/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "tilecore/ffi/error.h"

extern char** environ;

namespace tilecore::runtime {

int RunProcess(const std::vector<std::string>& argv, const std::string& output_path) {
  if (argv.empty() || argv[0].empty())
    TILECORE_THROW(ValueError) << "RunProcess: no program to run";
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    // As a shell reports a program it cannot start: status 127, the reason in the output.
    std::ofstream(output_path) << "cannot run `" << argv[0] << "`: " << std::strerror(err) << "\n";
    return 127;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      TILECORE_THROW(OSError) << "waiting for `" << argv[0] << "` failed: " << std::strerror(errno);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::vector<std::string> SplitCommandWords(const std::string& command) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : command) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

}  // namespace tilecore::runtime
