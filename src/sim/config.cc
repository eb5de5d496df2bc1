// src/sim/config.cc — target strings and modes.
#include "tilecore/sim/config.h"

#include <cctype>
#include <cstdint>
#include <string>

#include "tilecore/sim/sim_error.h"

namespace tilecore::sim {

namespace {

[[noreturn]] void usage(const std::string& msg) {
  throw SimError(SimError::Kind::Usage, -1, 0, "", msg);
}

uint64_t parse_size(std::string_view opt, std::string_view v) {
  uint64_t mult = 1;
  auto ends = [&](std::string_view suf) {
    if (v.size() > suf.size() && v.substr(v.size() - suf.size()) == suf) {
      v.remove_suffix(suf.size());
      return true;
    }
    return false;
  };
  if (ends("TiB"))
    mult = uint64_t(1) << 40;
  else if (ends("GiB"))
    mult = uint64_t(1) << 30;
  else if (ends("MiB"))
    mult = uint64_t(1) << 20;
  else if (ends("KiB"))
    mult = uint64_t(1) << 10;
  if (v.empty()) usage("target option " + std::string(opt) + ": missing number");
  uint64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9')
      usage("target option " + std::string(opt) + ": '" + std::string(v) +
            "' is not a size (e.g. 256MiB)");
    n = n * 10 + uint64_t(c - '0');
    if (n > (uint64_t(1) << 40)) usage("target option " + std::string(opt) + ": size too large");
  }
  if (n > UINT64_MAX / mult) usage("target option " + std::string(opt) + ": size too large");
  return n * mult;
}

}  // namespace

std::string_view mode_name(Mode m) {
  switch (m) {
    case Mode::FunctionalTiming:
      return "functional+timing";
    case Mode::Functional:
      return "functional";
    case Mode::Timing:
      return "timing";
    case Mode::HazardCheck:
      return "hazard";
  }
  return "?";
}

Mode parse_mode(std::string_view s) {
  if (s == "functional+timing" || s == "default") return Mode::FunctionalTiming;
  if (s == "functional") return Mode::Functional;
  if (s == "timing") return Mode::Timing;
  if (s == "hazard" || s == "hazard-check") return Mode::HazardCheck;
  usage("unknown simulation mode '" + std::string(s) +
        "' (functional+timing, functional, timing, hazard)");
}

SimConfig SimConfig::from_target(std::string_view target) {
  SimConfig cfg;
  size_t i = 0;
  bool first = true;
  while (i < target.size()) {
    // Any whitespace separates options (a tab or newline as well as a space).
    while (i < target.size() && std::isspace(static_cast<unsigned char>(target[i]))) ++i;
    size_t j = i;
    while (j < target.size() && !std::isspace(static_cast<unsigned char>(target[j]))) ++j;
    std::string_view tok = target.substr(i, j - i);
    i = j;
    if (tok.empty()) continue;
    if (first) {
      if (tok != "npu")
        usage("target '" + std::string(target) + "': the simulator runs target kind 'npu', not '" +
              std::string(tok) + "'");
      first = false;
      continue;
    }
    size_t eq = tok.find('=');
    std::string_view key = tok.substr(0, eq),
                     val = eq == std::string_view::npos ? "" : tok.substr(eq + 1);
    if (key == "-cores") {
      uint64_t n = parse_size(key, val);
      if (n < 1 || n > uint64_t(arch::tc1::kMaxCores))
        usage("target option -cores=" + std::string(val) + ": must be 1..16");
      cfg.cores = int(n);
    } else if (key == "-ddr") {
      cfg.ddr_bytes = parse_size(key, val);
      if (cfg.ddr_bytes == 0) usage("target option -ddr: must be at least 1 byte");
      if (cfg.ddr_bytes > arch::tc1::kMaxDdrBytes)
        usage("target option -ddr: " + std::string(val) +
              " is larger than the simulator's limit of 4GiB");
    } else if (key == "-l2") {
      cfg.l2_bytes = parse_size(key, val);
      if (cfg.l2_bytes == 0 || cfg.l2_bytes > arch::tc1::kMaxDdrBytes)
        usage("target option -l2: must be 1 byte .. 4GiB");
    } else if (key == "-l1") {
      cfg.l1_bytes = parse_size(key, val);
      if (cfg.l1_bytes == 0 || cfg.l1_bytes > arch::tc1::kMaxDdrBytes)
        usage("target option -l1: must be 1 byte .. 4GiB per core");
    } else if (key == "-mode") {
      cfg.mode = parse_mode(val);
    } else if (key == "-queue") {
      uint64_t n = parse_size(key, val);
      if (n < 1 || n > 4096) usage("target option -queue: must be 1..4096");
      cfg.queue_depth = int(n);
    } else if (key == "-trace") {
      cfg.trace = true;
    } else {
      usage("unknown target option '" + std::string(tok) +
            "' (-cores= -ddr= -l2= -l1= -mode= -queue= -trace)");
    }
  }
  if (first) usage("empty target string (expected e.g. \"npu -cores=4\")");
  return cfg;
}

}  // namespace tilecore::sim
