// examples/runtime/two_models.cpp — two models in one process, run concurrently from two
// threads through the runtime's C++ wrapper (c_runtime_api.hpp). Each model runs once alone
// (its reference outputs), then both threads run their model --iterations times at once,
// and every output must equal the reference bit for bit.
//
//   two_models A.tcx A_INPUT.npy B.tcx B_INPUT.npy [--iterations N] [--same-device]
//              [--out-dir DIR]
//
// By default the two models run on npu devices 0 and 1 (in parallel); --same-device runs both
// on device 0, where they take turns. Given the same file twice, it is loaded once and both
// threads run the one executable. --out-dir writes each model's reference outputs as
// DIR/<a|b>_<output name>.npy. Exit status 0 when every run matched, 1 otherwise.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "npy.h"
#include "tilecore/runtime/c_runtime_api.hpp"

namespace {

using tilecore::deploy::Executable;

struct Model {
  std::string tag;
  Executable exe;
  std::vector<unsigned char> input;
  std::vector<std::vector<unsigned char>> reference;

  // Runs once into fresh output buffers.
  std::vector<std::vector<unsigned char>> Run(int device) const {
    std::vector<std::vector<unsigned char>> out;
    std::vector<void*> ptrs;
    for (const auto& o : exe.outputs()) out.emplace_back(o.num_bytes);
    for (auto& o : out) ptrs.push_back(o.data());
    exe.Run({input.data()}, ptrs, device);
    return out;
  }
};

Model Load(const std::string& tag, const char* tcx, const char* npy) {
  Executable exe = Executable::LoadFile(tcx);
  if (exe.inputs().size() != 1)
    throw std::runtime_error(std::string(tcx) + ": one input is needed");
  npy_array a;
  char err[512];
  if (npy_read(npy, &a, err, sizeof err) != 0) throw std::runtime_error(err);
  const auto& want = exe.inputs()[0];
  bool same = a.dtype.code == want.dtype.code && a.dtype.bits == want.dtype.bits &&
              std::vector<int64_t>(a.shape, a.shape + a.ndim) == want.shape;
  std::vector<unsigned char> bytes(static_cast<unsigned char*>(a.data),
                                   static_cast<unsigned char*>(a.data) + a.num_bytes);
  npy_free(&a);
  if (!same)
    throw std::runtime_error(std::string(npy) +
                             " does not hold the dtype and shape of the input `" + want.name +
                             "` of " + tcx);
  return Model{tag, std::move(exe), std::move(bytes), {}};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const char*> files;
  int iterations = 100;
  bool same_device = false;
  std::string out_dir;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--same-device") == 0) {
      same_device = true;
    } else if (std::strcmp(argv[i], "--out-dir") == 0 && i + 1 < argc) {
      out_dir = argv[++i];
    } else {
      files.push_back(argv[i]);
    }
  }
  if (files.size() != 4 || iterations < 1) {
    std::fprintf(stderr,
                 "usage: two_models A.tcx A_INPUT.npy B.tcx B_INPUT.npy [--iterations N] "
                 "[--same-device] [--out-dir DIR]\n");
    return 2;
  }
  try {
    std::vector<Model> models;
    models.push_back(Load("a", files[0], files[1]));
    models.push_back(Load("b", files[2], files[3]));
    if (std::strcmp(files[0], files[2]) == 0) models[1].exe = models[0].exe;  // one handle
    for (Model& m : models) m.reference = m.Run(0);
    if (!out_dir.empty()) {
      for (const Model& m : models) {
        for (size_t o = 0; o < m.reference.size(); ++o) {
          const auto& info = m.exe.outputs()[o];
          std::string path = out_dir + "/" + m.tag + "_" + info.name + ".npy";
          char err[512];
          if (npy_write(path.c_str(), info.dtype, int32_t(info.shape.size()), info.shape.data(),
                        m.reference[o].data(), info.num_bytes, err, sizeof err) != 0)
            throw std::runtime_error(err);
        }
      }
    }
    std::vector<std::atomic<int>> mismatches(2);
    std::vector<std::string> failures(2);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        try {
          for (int i = 0; i < iterations; ++i) {
            if (models[t].Run(same_device ? 0 : int(t)) != models[t].reference) ++mismatches[t];
          }
        } catch (const std::exception& e) {
          failures[t] = e.what();
        }
      });
    }
    for (std::thread& th : threads) th.join();
    int status = 0;
    for (size_t t = 0; t < 2; ++t) {
      if (!failures[t].empty()) {
        std::fprintf(stderr, "two_models: model %s: %s\n", models[t].tag.c_str(),
                     failures[t].c_str());
        status = 1;
        continue;
      }
      std::printf("model %s: %d concurrent runs on npu:%d, %d differ from the run alone\n",
                  models[t].tag.c_str(), iterations, same_device ? 0 : int(t),
                  mismatches[t].load());
      if (mismatches[t] != 0) status = 1;
    }
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "two_models: %s\n", e.what());
    return 1;
  }
}
