// tests/cpp/ffi/test_ndarray.cc — NDArray allocation, strided copies and DLPack ownership.
#include <gtest/gtest.h>

#include <numeric>

#include "tilecore/ffi/ndarray.h"

namespace {
using namespace tilecore::ffi;

constexpr DLDevice kCPU{kDLCPU, 0};

TEST(NDArray, EmptyIsCompactAndAligned) {
  NDArray a = NDArray::Empty({2, 3}, StringToDLDataType("float32"), kCPU);
  EXPECT_EQ(a.NumElements(), 6);
  EXPECT_EQ(a.NumBytes(), 24u);
  EXPECT_TRUE(a.IsContiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data<float>()) % 64, 0u);
  // The DLTensor sits right after the header, as the C ABI promises.
  EXPECT_EQ(
      TCFFINDArrayGetDLTensorPtr(reinterpret_cast<TCFFIObject*>(const_cast<NDArrayObj*>(a.get()))),
      &a->tensor);
  EXPECT_THROW(NDArray::Empty({-1}, StringToDLDataType("int8"), kCPU), Error);
}

TEST(NDArray, UnknownDeviceIsAnError) {
  try {
    NDArray::Empty({4}, StringToDLDataType("int8"), DLDevice{kDLVulkan, 0});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), "ValueError");
    EXPECT_NE(e.message().find("vulkan"), std::string_view::npos);
  }
}

TEST(NDArray, StridedCopyTransposes) {
  NDArray src = NDArray::Empty({2, 3}, StringToDLDataType("int32"), kCPU);
  std::iota(src.data<int32_t>(), src.data<int32_t>() + 6, 0);  // [[0 1 2] [3 4 5]]
  NDArray dst = NDArray::Empty({3, 2}, StringToDLDataType("int32"), kCPU);
  // View src as its transpose: shape (3, 2), strides (1, 3).
  DLTensor view = src->tensor;
  int64_t shape[] = {3, 2};
  int64_t strides[] = {1, 3};
  view.shape = shape;
  view.strides = strides;
  CopyDLTensor(view, dst->tensor);
  const int32_t expect[] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(dst.data<int32_t>()[i], expect[i]);
}

TEST(NDArray, CopyRejectsMismatchedShapes) {
  NDArray a = NDArray::Empty({2, 3}, StringToDLDataType("int32"), kCPU);
  NDArray b = NDArray::Empty({3, 2}, StringToDLDataType("int32"), kCPU);
  NDArray c = NDArray::Empty({2, 3}, StringToDLDataType("float32"), kCPU);
  EXPECT_THROW(a.CopyTo(b), Error);
  EXPECT_THROW(a.CopyTo(c), Error);
}

TEST(NDArray, DLPackExportKeepsArrayAliveAndSharesMemory) {
  DLManagedTensorVersioned* m = nullptr;
  float* data = nullptr;
  {
    NDArray a = NDArray::Empty({4}, StringToDLDataType("float32"), kCPU);
    data = a.data<float>();
    m = a.ToDLPackVersioned();
    EXPECT_EQ(a.use_count(), 2u);
  }
  ASSERT_EQ(m->dl_tensor.data, data);
  data[3] = 1.5f;  // still alive: the managed tensor holds a reference
  NDArray back = NDArray::FromDLPackVersioned(m);  // takes ownership of m
  EXPECT_EQ(back.data<float>(), data);
  EXPECT_FLOAT_EQ(back.data<float>()[3], 1.5f);
}

TEST(NDArray, ForeignDeleterRunsOnce) {
  static int deleted = 0;
  static int64_t shape[] = {2};
  static float storage[2] = {1, 2};
  auto* m = new DLManagedTensor{};
  m->dl_tensor = DLTensor{storage, kCPU, 1, StringToDLDataType("float32"), shape, nullptr, 0};
  m->deleter = [](DLManagedTensor* self) {
    ++deleted;
    delete self;
  };
  {
    NDArray a = NDArray::FromDLPack(m);
    EXPECT_EQ(a.data<float>(), storage);
    NDArray b = a;
  }
  EXPECT_EQ(deleted, 1);
}

TEST(NDArray, BadForeignTensorIsRejectedAndReleased) {
  static int deleted = 0;
  static int64_t shape[] = {-3};
  auto* m = new DLManagedTensor{};
  m->dl_tensor = DLTensor{nullptr, kCPU, 1, StringToDLDataType("float32"), shape, nullptr, 0};
  m->deleter = [](DLManagedTensor* self) {
    ++deleted;
    delete self;
  };
  EXPECT_THROW(NDArray::FromDLPack(m), Error);
  EXPECT_EQ(deleted, 1);
}

}  // namespace
