// tests/cpp/ffi/test_object_pool.cc — the memory of objects: distinct, aligned blocks of
// every size class, reused; objects made on one thread and freed on another, and freed while
// a thread exits; constructors that throw.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/object.h"

namespace {
using namespace tilecore::ffi;

/*! \brief An object of sizeof(Object) + Bytes whose payload is a checkable pattern. */
template <size_t Bytes>
struct Payload : public Object {
  unsigned char data[Bytes];
  explicit Payload(unsigned char seed = 0) { Fill(seed); }
  void Fill(unsigned char seed) {
    for (size_t i = 0; i < Bytes; ++i) data[i] = static_cast<unsigned char>(seed + i);
  }
  bool Intact(unsigned char seed) const {
    for (size_t i = 0; i < Bytes; ++i)
      if (data[i] != static_cast<unsigned char>(seed + i)) return false;
    return true;
  }
};
// (the kinds: one type key each)
struct Small : public Payload<8> {
  using Payload::Payload;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("test.PoolSmall", Small, Object);
};
struct Medium : public Payload<100> {
  using Payload::Payload;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("test.PoolMedium", Medium, Object);
};
struct Largest : public Payload<details::kPooledObjectBytes - sizeof(Object)> {
  using Payload::Payload;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("test.PoolLargest", Largest, Object);
};
struct Unpooled : public Payload<1000> {
  using Payload::Payload;
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("test.PoolUnpooled", Unpooled, Object);
};

static_assert(details::kPooledObject<Small> && details::kPooledObject<Largest>);
static_assert(!details::kPooledObject<Unpooled>);

template <typename T>
void ExpectDistinctAlignedIntact(int count) {
  std::vector<ObjectPtr<T>> live;
  std::set<const void*> seen;
  for (int i = 0; i < count; ++i) {
    live.push_back(make_object<T>(static_cast<unsigned char>(i)));
    const void* p = live.back().get();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
    EXPECT_TRUE(seen.insert(p).second) << "two live objects share a block";
  }
  // (a block handed out twice, or overlapping its neighbour, breaks a pattern)
  for (int i = 0; i < count; ++i)
    ASSERT_TRUE(live[size_t(i)]->Intact(static_cast<unsigned char>(i)));
}

TEST(ObjectPool, LiveObjectsOfEverySizeAreDistinctAlignedAndIntact) {
  ExpectDistinctAlignedIntact<Small>(20000);
  ExpectDistinctAlignedIntact<Medium>(5000);
  ExpectDistinctAlignedIntact<Largest>(3000);
  ExpectDistinctAlignedIntact<Unpooled>(100);
}

TEST(ObjectPool, FreedBlocksAreReused) {
  const void* first = nullptr;
  {
    ObjectPtr<Medium> a = make_object<Medium>();
    first = a.get();
  }
  ObjectPtr<Medium> b = make_object<Medium>();
#if !defined(TILECORE_ADDRESS_SANITIZER) && !defined(TILECORE_THREAD_SANITIZER)
  EXPECT_EQ(b.get(), first);  // (the last block freed is the next one made)
#endif
  EXPECT_TRUE(b->Intact(0));
}

struct Throws : public Object {
  explicit Throws(bool fail) {
    if (fail) throw std::runtime_error("no");
  }
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("test.PoolThrows", Throws, Object);
};

TEST(ObjectPool, AConstructorThatThrowsGivesItsBlockBack) {
  for (int i = 0; i < 1000; ++i) EXPECT_THROW(make_object<Throws>(true), std::runtime_error);
  EXPECT_NE(make_object<Throws>(false).get(), nullptr);
}

TEST(ObjectPool, ObjectsFreedOnAnotherThreadAreReusedThere) {
  // More than a thread's list keeps (it hands batches to the depot), freed by a thread that
  // made none of them, then made again by threads that come and go.
  constexpr int kCount = 200000;
  std::vector<ObjectPtr<Small>> made;
  made.reserve(kCount);
  std::thread maker([&] {
    for (int i = 0; i < kCount; ++i)
      made.push_back(make_object<Small>(static_cast<unsigned char>(i)));
  });
  maker.join();
  for (int i = 0; i < kCount; i += 997)
    ASSERT_TRUE(made[size_t(i)]->Intact(static_cast<unsigned char>(i)));
  std::thread freer([&] { made.clear(); });
  freer.join();
  std::vector<std::thread> workers;
  std::vector<std::vector<ObjectPtr<Small>>> kept(4);
  for (int w = 0; w < 4; ++w)
    workers.emplace_back([&, w] {
      for (int i = 0; i < kCount / 4; ++i)
        kept[size_t(w)].push_back(make_object<Small>(static_cast<unsigned char>(w)));
    });
  for (std::thread& t : workers) t.join();
  std::set<const void*> seen;
  for (int w = 0; w < 4; ++w)
    for (const ObjectPtr<Small>& o : kept[size_t(w)]) {
      ASSERT_TRUE(o->Intact(static_cast<unsigned char>(w)));
      ASSERT_TRUE(seen.insert(o.get()).second);
    }
}

TEST(ObjectPool, ObjectsFreedWhileTheirThreadExits) {
  // A thread-local made before the thread's first object is destroyed after the thread's
  // lists went to the depot: its objects are freed into the depot.
  std::thread t([] {
    thread_local std::vector<ObjectPtr<Medium>> holder;
    for (int i = 0; i < 5000; ++i) holder.push_back(make_object<Medium>(7));
    for (int i = 0; i < 1000; ++i) (void)make_object<Medium>(9);  // (some in the list)
  });
  t.join();
  ExpectDistinctAlignedIntact<Medium>(10000);
}

TEST(ObjectPool, ArrayStorageOfAnySize) {
  for (size_t n : {1u, 15u, 16u, 17u, 1000u}) {
    Array<int64_t> a;
    for (size_t i = 0; i < n; ++i) a.push_back(int64_t(i) * 3);
    Array<int64_t> b = a;  // (shared: the push below copies)
    b.push_back(-1);
    ASSERT_EQ(a.size(), n);
    ASSERT_EQ(b.size(), n + 1);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], int64_t(i) * 3);
    EXPECT_EQ(b[n], -1);
  }
}

}  // namespace
