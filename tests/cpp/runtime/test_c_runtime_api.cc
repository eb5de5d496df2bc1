// tests/cpp/runtime/test_c_runtime_api.cc — the runtime's C API (c_runtime_api.h) on an
// executable whose outputs are known by hand: loading from memory and files, the signature,
// runs on raw buffers and DLTensors, statistics, and every bad argument or file returning a
// status and a message that names it. SHA-256 against the FIPS 180-2 examples.
#if TILECORE_ENABLE_NPU
#include "tilecore/runtime/c_runtime_api.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "increment_executable.h"
#include "runtime/sha256.h"

namespace {

using namespace tilecore;  // NOLINT(*)

std::string Bytes() { return runtime::Executable::Build(test_fixtures::Pipeline()).SaveToBytes(); }

TCRExecutable* Load(const std::string& bytes, const TCRLoadOptions* options = nullptr) {
  TCRExecutable* exe = nullptr;
  TCRStatus st = TCRExecutableLoadMemory(bytes.data(), bytes.size(), options, &exe);
  EXPECT_EQ(st, kTCROk) << TCRGetLastError();
  return exe;
}

TEST(CRuntimeApi, Sha256MatchesTheStandardsExamples) {
  EXPECT_EQ(runtime::Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(runtime::Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(runtime::Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(runtime::Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55 and 56 bytes: the padding's length fits the last block, or needs one more.
  EXPECT_EQ(runtime::Sha256Hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(runtime::Sha256Hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
}

TEST(CRuntimeApi, ListsTheSignature) {
  TCRExecutable* exe = Load(Bytes());
  ASSERT_NE(exe, nullptr);
  int32_t n_in = -1, n_out = -1;
  ASSERT_EQ(TCRExecutableNumInputs(exe, &n_in), kTCROk);
  ASSERT_EQ(TCRExecutableNumOutputs(exe, &n_out), kTCROk);
  EXPECT_EQ(n_in, 1);
  EXPECT_EQ(n_out, 1);
  TCRTensorInfo info;
  ASSERT_EQ(TCRExecutableInputInfo(exe, 0, &info), kTCROk);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype.code, kDLInt);
  EXPECT_EQ(info.dtype.bits, 32);
  ASSERT_EQ(info.ndim, 1);
  EXPECT_EQ(info.shape[0], 4);
  EXPECT_EQ(info.num_bytes, 16u);
  ASSERT_EQ(TCRExecutableOutputInfo(exe, 0, &info), kTCROk);
  EXPECT_STREQ(info.name, "y");
  int32_t index = -1;
  ASSERT_EQ(TCRExecutableFindOutput(exe, "y", &index), kTCROk);
  EXPECT_EQ(index, 0);
  EXPECT_EQ(TCRExecutableFindInput(exe, "z", &index), kTCRInvalidArgument);
  EXPECT_NE(
      std::string(TCRGetLastError()).find("no input named `z`; the executable has x: int32[4]"),
      std::string::npos)
      << TCRGetLastError();
  EXPECT_EQ(TCRExecutableInputInfo(exe, 1, &info), kTCRInvalidArgument);
  EXPECT_NE(std::string(TCRGetLastError()).find("input index 1 out of range"), std::string::npos);
  TCRExecutableFree(exe);
}

TEST(CRuntimeApi, RunsOnRawBuffersAndDLTensors) {
  TCRExecutable* exe = Load(Bytes());
  ASSERT_NE(exe, nullptr);
  size_t length = 0;
  EXPECT_EQ(TCRExecutableStatsJSON(exe, nullptr, 0, &length), kTCRInvalidArgument);
  EXPECT_NE(std::string(TCRGetLastError()).find("has not run yet"), std::string::npos);
  int32_t x[4] = {1, 2, 3, -4}, y[4] = {0, 0, 0, 0};
  const void* in[] = {x};
  void* out[] = {y};
  TCRRunStats stats;
  TCRRunStatsInit(&stats);
  ASSERT_EQ(TCRExecutableRun(exe, in, out, nullptr, &stats), kTCROk) << TCRGetLastError();
  EXPECT_EQ(std::vector<int32_t>(y, y + 4), (std::vector<int32_t>{3, 4, 5, -2}));
  EXPECT_GT(stats.cycles, 0u);
  EXPECT_EQ(stats.steps, 2);
  // The JSON: its length first, then a copy; a short buffer truncates.
  ASSERT_EQ(TCRExecutableStatsJSON(exe, nullptr, 0, &length), kTCROk);
  std::string json(length + 1, '\0');
  ASSERT_EQ(TCRExecutableStatsJSON(exe, json.data(), json.size(), &length), kTCROk);
  EXPECT_NE(json.find("\"cycles\": " + std::to_string(stats.cycles)), std::string::npos) << json;
  char small[8];
  ASSERT_EQ(TCRExecutableStatsJSON(exe, small, sizeof small, &length), kTCROk);
  EXPECT_EQ(std::string(small), json.substr(0, 7));

  int32_t y2[4] = {0, 0, 0, 0};
  int64_t shape[] = {4};
  DLTensor tx{x, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, shape, nullptr, 0};
  DLTensor ty{y2, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, shape, nullptr, 0};
  const DLTensor* tin[] = {&tx};
  const DLTensor* tout[] = {&ty};
  TCRRunOptions options;
  TCRRunOptionsInit(&options);
  options.device = 1;
  ASSERT_EQ(TCRExecutableRunDLTensors(exe, tin, 1, tout, 1, &options, nullptr), kTCROk)
      << TCRGetLastError();
  EXPECT_EQ(std::vector<int32_t>(y2, y2 + 4), (std::vector<int32_t>{3, 4, 5, -2}));

  // Wrong tensors are named against the signature; nothing runs.
  int64_t bad_shape[] = {2, 2};
  DLTensor wrong{x, {kDLCPU, 0}, 2, {kDLInt, 32, 1}, bad_shape, nullptr, 0};
  const DLTensor* win[] = {&wrong};
  EXPECT_EQ(TCRExecutableRunDLTensors(exe, win, 1, tout, 1, nullptr, nullptr), kTCRInvalidArgument);
  EXPECT_NE(std::string(TCRGetLastError())
                .find("input 0 `x` is int32[2, 2]; the executable expects int32[4]"),
            std::string::npos)
      << TCRGetLastError();
  EXPECT_EQ(TCRExecutableRunDLTensors(exe, tin, 2, tout, 1, nullptr, nullptr), kTCRInvalidArgument);
  DLTensor on_npu = tx;
  on_npu.device = {static_cast<DLDeviceType>(ffi::kDLNPU), 0};
  const DLTensor* nin[] = {&on_npu};
  EXPECT_EQ(TCRExecutableRunDLTensors(exe, nin, 1, tout, 1, nullptr, nullptr), kTCRInvalidArgument);
  EXPECT_NE(std::string(TCRGetLastError()).find("not in host memory"), std::string::npos);
  options.device = 16;
  EXPECT_EQ(TCRExecutableRun(exe, in, out, &options, nullptr), kTCRInvalidArgument);
  EXPECT_NE(std::string(TCRGetLastError()).find("16"), std::string::npos) << TCRGetLastError();
  const void* null_in[] = {nullptr};
  EXPECT_EQ(TCRExecutableRun(exe, null_in, out, nullptr, nullptr), kTCRInvalidArgument);
  EXPECT_NE(std::string(TCRGetLastError()).find("input 0 `x` is NULL"), std::string::npos);
  TCRExecutableFree(exe);
}

TEST(CRuntimeApi, ArenaBeyondTheDevicesDdrIsOutOfMemory) {
  runtime::ExecutableSpec spec = test_fixtures::Pipeline();
  spec.arena_size = uint64_t(3) << 30;  // fits TC1's addresses, not the default 256 MiB DDR
  TCRExecutable* exe = Load(runtime::Executable::Build(spec).SaveToBytes());
  ASSERT_NE(exe, nullptr);
  int32_t x[4] = {1, 2, 3, 4}, y[4];
  const void* in[] = {x};
  void* out[] = {y};
  TCRRunOptions options;
  TCRRunOptionsInit(&options);
  options.device = 2;
  EXPECT_EQ(TCRExecutableRun(exe, in, out, &options, nullptr), kTCROutOfMemory);
  EXPECT_NE(std::string(TCRGetLastError()).find("does not fit the DDR of npu:2"), std::string::npos)
      << TCRGetLastError();
  TCRExecutableFree(exe);
}

TEST(CRuntimeApi, BadFilesAreNamedNeverFatal) {
  std::string good = Bytes();
  TCRExecutable* exe = nullptr;
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x40;
  EXPECT_EQ(TCRExecutableLoadMemory(flipped.data(), flipped.size(), nullptr, &exe),
            kTCRFormatError);
  EXPECT_NE(std::string(TCRGetLastError()).find("checksum mismatch"), std::string::npos);
  for (size_t n : {size_t(0), size_t(5), size_t(31), good.size() - 1}) {
    EXPECT_EQ(TCRExecutableLoadMemory(good.data(), n, nullptr, &exe), kTCRFormatError) << n;
  }
  EXPECT_EQ(TCRExecutableLoadMemory("TCMODULE", 8, nullptr, &exe), kTCRFormatError);
  EXPECT_NE(std::string(TCRGetLastError()).find("not a tilecore executable"), std::string::npos);
  EXPECT_EQ(exe, nullptr);  // left as it was on every error
  EXPECT_EQ(TCRExecutableLoadMemory(nullptr, 4, nullptr, &exe), kTCRInvalidArgument);
  EXPECT_EQ(TCRExecutableLoadMemory(good.data(), good.size(), nullptr, nullptr),
            kTCRInvalidArgument);
  EXPECT_EQ(TCRExecutableLoadFile("/nonexistent/model.tcx", nullptr, &exe), kTCRIOError);
  EXPECT_NE(std::string(TCRGetLastError()).find("/nonexistent/model.tcx"), std::string::npos)
      << TCRGetLastError();
  EXPECT_EQ(TCRExecutableLoadFile(nullptr, nullptr, &exe), kTCRInvalidArgument);
  EXPECT_EQ(TCRExecutableNumInputs(nullptr, nullptr), kTCRInvalidArgument);
  TCRExecutableFree(nullptr);
  // The last error belongs to the thread that failed.
  std::string other = "unset";
  std::thread([&] { other = TCRGetLastError(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_STREQ(TCRStatusName(kTCRFormatError), "kTCRFormatError");
  EXPECT_STREQ(TCRStatusName(static_cast<TCRStatus>(99)), "unknown status");
}

TEST(CRuntimeApi, LoadsFilesAndChecksTheirSha256) {
  std::string good = Bytes();
  std::string path = ::testing::TempDir() + "c_runtime_api_pipeline.tcx";
  std::ofstream(path, std::ios::binary) << good;
  std::string sha = runtime::Sha256Hex(good);
  TCRLoadOptions options;
  TCRLoadOptionsInit(&options);
  options.expected_sha256 = sha.c_str();
  TCRExecutable* exe = nullptr;
  ASSERT_EQ(TCRExecutableLoadFile(path.c_str(), &options, &exe), kTCROk) << TCRGetLastError();
  TCRExecutableFree(exe);
  exe = nullptr;
  std::string upper = sha;
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  options.expected_sha256 = upper.c_str();
  ASSERT_EQ(TCRExecutableLoadFile(path.c_str(), &options, &exe), kTCROk) << TCRGetLastError();
  TCRExecutableFree(exe);
  exe = nullptr;
  std::string other = std::string(63, '0') + "1";
  options.expected_sha256 = other.c_str();
  EXPECT_EQ(TCRExecutableLoadFile(path.c_str(), &options, &exe), kTCRRefused);
  EXPECT_NE(std::string(TCRGetLastError()).find("SHA-256 is " + sha), std::string::npos)
      << TCRGetLastError();
  EXPECT_NE(std::string(TCRGetLastError()).find(path), std::string::npos);
  options.expected_sha256 = "abc";
  EXPECT_EQ(TCRExecutableLoadFile(path.c_str(), &options, &exe), kTCRInvalidArgument);
  EXPECT_NE(std::string(TCRGetLastError()).find("not 64 hexadecimal digits"), std::string::npos)
      << TCRGetLastError();
  options.struct_size = 0;
  EXPECT_EQ(TCRExecutableLoadFile(path.c_str(), &options, &exe), kTCRInvalidArgument);
  EXPECT_EQ(exe, nullptr);
  // An executable of npu code only loads when host code is refused.
  TCRLoadOptionsInit(&options);
  options.refuse_host_code = 1;
  ASSERT_EQ(TCRExecutableLoadFile(path.c_str(), &options, &exe), kTCROk) << TCRGetLastError();
  TCRExecutableFree(exe);
  std::remove(path.c_str());
}

TEST(CRuntimeApi, ConcurrentRunsOfOneExecutable) {
  TCRExecutable* exe = Load(Bytes());
  ASSERT_NE(exe, nullptr);
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      TCRRunOptions options;
      TCRRunOptionsInit(&options);
      options.device = t % 2;  // two threads share each device
      for (int i = 0; i < 20; ++i) {
        int32_t x[4] = {t, i, -t, -i}, y[4];
        const void* in[] = {x};
        void* out[] = {y};
        if (TCRExecutableRun(exe, in, out, &options, nullptr) != kTCROk || y[0] != t + 2 ||
            y[1] != i + 2 || y[2] != 2 - t || y[3] != 2 - i)
          ++wrong[size_t(t)];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
  TCRExecutableFree(exe);
}

}  // namespace
#endif  // TILECORE_ENABLE_NPU
