// include/tilecore/runtime/c_runtime_api.hpp — a header-only C++ wrapper over the runtime's C
// API (c_runtime_api.h): an executable that frees itself, errors as exceptions that carry the
// status and the message, the signature as std::vector. It uses nothing but the C API, so it
// builds against libtilecore_runtime alone. Thread safety is the C API's: one Executable may
// run from several threads at once.
//
//   tilecore::deploy::Executable exe = tilecore::deploy::Executable::LoadFile("model.tcx");
//   std::vector<float> x(exe.inputs()[0].num_bytes / 4), y(exe.outputs()[0].num_bytes / 4);
//   tilecore::deploy::RunStats st = exe.Run({x.data()}, {y.data()});
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tilecore/runtime/c_runtime_api.h"

namespace tilecore::deploy {

/// A failed call: its status and TCRGetLastError()'s message.
class Error : public std::runtime_error {
 public:
  Error(TCRStatus status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  TCRStatus status() const { return status_; }

 private:
  TCRStatus status_;
};

inline void Check(TCRStatus status) {
  if (status != kTCROk) throw Error(status, TCRGetLastError());
}

struct TensorInfo {
  std::string name;
  DLDataType dtype;
  std::vector<int64_t> shape;
  uint64_t num_bytes;
};

struct LoadOptions {
  bool refuse_host_code = false;  // refuse executables that hold host code
  std::string expected_sha256;    // empty, or the file's SHA-256 (64 hexadecimal digits)
};

struct RunStats {
  uint64_t cycles = 0;
  uint64_t macs = 0;
  double mac_utilisation = 0;
  double wall_seconds = 0;
  int32_t steps = 0;
};

/// A loaded executable; copies share one handle, freed with the last of them.
class Executable {
 public:
  static Executable LoadFile(const std::string& path, const LoadOptions& options = {}) {
    TCRLoadOptions o = COptions(options);
    TCRExecutable* h = nullptr;
    Check(TCRExecutableLoadFile(path.c_str(), &o, &h));
    return Executable(h);
  }
  static Executable LoadMemory(const void* data, size_t size, const LoadOptions& options = {}) {
    TCRLoadOptions o = COptions(options);
    TCRExecutable* h = nullptr;
    Check(TCRExecutableLoadMemory(data, size, &o, &h));
    return Executable(h);
  }

  /// The inputs (outputs) in the order Run takes them.
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }

  /// Runs on caller-owned host buffers: one per input (num_bytes each, only read) and one
  /// per output (num_bytes each, written), in signature order.
  RunStats Run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
               int32_t device = 0) const {
    if (inputs.size() != inputs_.size() || outputs.size() != outputs_.size()) {
      throw Error(kTCRInvalidArgument,
                  "ValueError: " + std::to_string(inputs.size()) + " inputs and " +
                      std::to_string(outputs.size()) + " outputs given; the executable has " +
                      std::to_string(inputs_.size()) + " and " + std::to_string(outputs_.size()));
    }
    TCRRunOptions o;
    TCRRunOptionsInit(&o);
    o.device = device;
    TCRRunStats s;
    TCRRunStatsInit(&s);
    Check(TCRExecutableRun(handle_.get(), inputs.data(), outputs.data(), &o, &s));
    return RunStats{s.cycles, s.macs, s.mac_utilisation, s.wall_seconds, s.steps};
  }

  /// The statistics of the last run that finished, as JSON (docs/executable.md).
  std::string StatsJSON() const {
    size_t length = 0;
    Check(TCRExecutableStatsJSON(handle_.get(), nullptr, 0, &length));
    std::string text(length + 1, '\0');
    Check(TCRExecutableStatsJSON(handle_.get(), text.data(), text.size(), &length));
    text.resize(std::min(length, text.size() - 1));
    return text;
  }

  TCRExecutable* handle() const { return handle_.get(); }

 private:
  explicit Executable(TCRExecutable* h) : handle_(h, &TCRExecutableFree) {
    int32_t n = 0;
    Check(TCRExecutableNumInputs(h, &n));
    for (int32_t i = 0; i < n; ++i) inputs_.push_back(Info(TCRExecutableInputInfo, i));
    Check(TCRExecutableNumOutputs(h, &n));
    for (int32_t i = 0; i < n; ++i) outputs_.push_back(Info(TCRExecutableOutputInfo, i));
  }

  static TCRLoadOptions COptions(const LoadOptions& options) {
    TCRLoadOptions o;
    TCRLoadOptionsInit(&o);
    o.refuse_host_code = options.refuse_host_code ? 1 : 0;
    o.expected_sha256 = options.expected_sha256.empty() ? nullptr : options.expected_sha256.c_str();
    return o;
  }

  TensorInfo Info(TCRStatus (*get)(const TCRExecutable*, int32_t, TCRTensorInfo*), int32_t i) {
    TCRTensorInfo t;
    Check(get(handle_.get(), i, &t));
    return TensorInfo{t.name, t.dtype, std::vector<int64_t>(t.shape, t.shape + t.ndim),
                      t.num_bytes};
  }

  std::shared_ptr<TCRExecutable> handle_;
  std::vector<TensorInfo> inputs_, outputs_;
};

}  // namespace tilecore::deploy
