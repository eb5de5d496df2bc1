// tests/cpp/ffi/test_object.cc — object header layout, reference counting and O(1) isinstance.
#include <gtest/gtest.h>

#include "tilecore/ffi/any.h"
#include "tilecore/ffi/container/array.h"
#include "tilecore/ffi/function.h"

namespace {
using namespace tilecore::ffi;

class AnimalNode : public Object {
 public:
  int legs{0};
  TILECORE_FFI_DECLARE_OBJECT_INFO("test.Animal", AnimalNode, Object);
};
class DogNode : public AnimalNode {
 public:
  TILECORE_FFI_DECLARE_OBJECT_INFO("test.Dog", DogNode, AnimalNode);
};
class PuppyNode : public DogNode {
 public:
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("test.Puppy", PuppyNode, DogNode);
};
class CatNode : public AnimalNode {
 public:
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("test.Cat", CatNode, AnimalNode);
};

TEST(Object, HeaderIs24BytesAndFirst) {
  EXPECT_EQ(sizeof(TCFFIObject), 24u);
  EXPECT_EQ(sizeof(TCFFIAny), 16u);
  auto dog = make_object<DogNode>();
  EXPECT_EQ(reinterpret_cast<TCFFIObject*>(dog.get())->type_index, DogNode::RuntimeTypeIndex());
  EXPECT_GE(DogNode::RuntimeTypeIndex(), kTCFFIDynObjectBegin);
}

int destroyed = 0;
struct Counted : public Object {
  ~Counted() { ++destroyed; }
  TILECORE_FFI_DECLARE_OBJECT_INFO_FINAL("test.Counted", Counted, Object);
};

TEST(Object, ReferenceCountingAndDeletion) {
  {
    ObjectPtr<Counted> a = make_object<Counted>();
    EXPECT_EQ(a.use_count(), 1u);
    {
      ObjectPtr<Counted> b = a;
      EXPECT_EQ(a.use_count(), 2u);
      ObjectPtr<Object> c = std::move(b);
      EXPECT_EQ(a.use_count(), 2u);
    }
    EXPECT_EQ(a.use_count(), 1u);
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 1);
}

TEST(Object, IsInstanceFollowsHierarchy) {
  ObjectPtr<Object> puppy = make_object<PuppyNode>();
  ObjectPtr<Object> cat = make_object<CatNode>();
  EXPECT_TRUE(puppy->IsInstance<Object>());
  EXPECT_TRUE(puppy->IsInstance<AnimalNode>());
  EXPECT_TRUE(puppy->IsInstance<DogNode>());
  EXPECT_TRUE(puppy->IsInstance<PuppyNode>());
  EXPECT_FALSE(puppy->IsInstance<CatNode>());
  EXPECT_TRUE(cat->IsInstance<AnimalNode>());
  EXPECT_FALSE(cat->IsInstance<DogNode>());
  EXPECT_FALSE(cat->IsInstance<ArrayObj>());
}

TEST(Object, TypeInfoRecordsAncestors) {
  const TCFFITypeInfo* info = TCFFIGetTypeInfo(PuppyNode::RuntimeTypeIndex());
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(std::string(info->type_key.data, info->type_key.size), "test.Puppy");
  ASSERT_EQ(info->type_depth, 3);
  EXPECT_EQ(info->type_ancestors[0], kTCFFIObject);
  EXPECT_EQ(info->type_ancestors[1], AnimalNode::RuntimeTypeIndex());
  EXPECT_EQ(info->type_ancestors[2], DogNode::RuntimeTypeIndex());
  EXPECT_EQ(TCFFIGetTypeInfo(99999), nullptr);
}

TEST(Object, TypeKeyLookupAndConflicts) {
  // Kinds register on first use (or at load time when they declare reflection).
  int32_t dog_index = DogNode::RuntimeTypeIndex();
  int32_t index = -1;
  TCFFIByteArray key{"test.Dog", 8};
  ASSERT_EQ(TCFFITypeKeyToIndex(&key, &index), 0);
  EXPECT_EQ(index, dog_index);
  // Same key, different parent: refused with a message naming both parents.
  int32_t out = 0;
  EXPECT_EQ(TCFFITypeGetOrAllocIndex(&key, -1, kTCFFIObject, &out), -1);
  TCFFIObjectHandle err = nullptr;
  TCFFIErrorMoveFromRaised(&err);
  ASSERT_NE(err, nullptr);
  Error e{details::ObjectUnsafe::MoveFromHandle(err)};
  EXPECT_EQ(e.kind(), "ValueError");
  EXPECT_NE(e.message().find("test.Animal"), std::string_view::npos);
  TCFFIByteArray unknown{"no.such.Type", 12};
  EXPECT_EQ(TCFFITypeKeyToIndex(&unknown, &index), -1);
  TCFFIErrorMoveFromRaised(&err);
  Error e2{details::ObjectUnsafe::MoveFromHandle(err)};
  EXPECT_EQ(e2.kind(), "KeyError");
}

TEST(Object, ObjectRefAs) {
  ObjectRef ref(make_object<PuppyNode>());
  EXPECT_NE(ref.as<DogNode>(), nullptr);
  EXPECT_EQ(ref.as<CatNode>(), nullptr);
  EXPECT_EQ(ref->GetTypeKey(), "test.Puppy");
}

}  // namespace
