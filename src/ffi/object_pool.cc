/*
 * src/ffi/object_pool.cc — the memory of small objects: per-thread free lists by size
 * class (16-byte steps up to kPooledObjectBytes), refilled from a shared depot or from
 * fresh slabs.
 *
 * A compile makes and drops millions of IR nodes of a few sizes; a free list push or pop
 * is a handful of instructions where malloc's bins and consolidation cost tens to
 * hundreds. A thread whose list grows past kThreadBlocks (it frees what others made)
 * hands a batch to the depot, where the threads that allocate take it back; a thread's
 * lists go to the depot when it exits. Slabs are never returned to the system: the
 * pool's memory is the peak of its live objects.
 *
 * Under AddressSanitizer or ThreadSanitizer every object is its own operator new, so that
 * the sanitizers see each one's lifetime.
 */
#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

#include "tilecore/ffi/object.h"

#if defined(TILECORE_ADDRESS_SANITIZER) || defined(TILECORE_THREAD_SANITIZER)
#define TILECORE_OBJECT_POOL_OFF 1
#endif

namespace tilecore {
namespace ffi {
namespace details {

#if defined(TILECORE_OBJECT_POOL_OFF)

void* AllocObjectMemory(size_t bytes) { return ::operator new(bytes); }
void FreeObjectMemory(void* memory, size_t) noexcept { ::operator delete(memory); }

#else

namespace {

constexpr size_t kGranule = 16;
constexpr size_t kClasses = kPooledObjectBytes / kGranule;
constexpr size_t kSlabBytes = size_t{32} << 10;
constexpr uint32_t kThreadBlocks = 1 << 16;  // a list longer than this spills
constexpr uint32_t kBatch = 1024;            // blocks moved between a thread and the depot

struct Block {
  Block* next;
};

size_t ClassOf(size_t bytes) { return (bytes + kGranule - 1) / kGranule - 1; }

/*! \brief Blocks given up by threads (spilled, or left at exit) and every slab. */
class Depot {
 public:
  static Depot& Get() {
    static Depot* depot = new Depot();  // never destroyed: threads free into it until exit
    return *depot;
  }
  /*! \brief Takes the list head..tail of blocks of class c. */
  void Give(size_t c, Block* head, Block* tail) {
    std::lock_guard<std::mutex> lock(mu_);
    tail->next = heads_[c];
    heads_[c] = head;
  }
  /*! \brief Up to max blocks of class c as a list (*n of them), or nullptr. */
  Block* Take(size_t c, uint32_t max, uint32_t* n) {
    std::lock_guard<std::mutex> lock(mu_);
    Block* head = heads_[c];
    if (head == nullptr) {
      *n = 0;
      return nullptr;
    }
    Block* last = head;
    uint32_t taken = 1;
    while (taken < max && last->next != nullptr) {
      last = last->next;
      ++taken;
    }
    heads_[c] = last->next;
    last->next = nullptr;
    *n = taken;
    return head;
  }
  /*! \brief A fresh slab of class c's blocks as a list (*n of them). */
  Block* Carve(size_t c, uint32_t* n) {
    const size_t size = (c + 1) * kGranule;
    char* slab = static_cast<char*>(::operator new(kSlabBytes));
    {
      std::lock_guard<std::mutex> lock(mu_);
      slabs_.push_back(slab);  // (kept reachable: leak checkers see the pool's memory)
    }
    const uint32_t count = static_cast<uint32_t>(kSlabBytes / size);
    for (uint32_t i = 0; i + 1 < count; ++i)
      reinterpret_cast<Block*>(slab + i * size)->next =
          reinterpret_cast<Block*>(slab + (i + 1) * size);
    reinterpret_cast<Block*>(slab + (count - 1) * size)->next = nullptr;
    *n = count;
    return reinterpret_cast<Block*>(slab);
  }
  // A fork while another thread holds the lock would leave the child's depot locked.
  void LockForFork() { mu_.lock(); }
  void UnlockAfterFork() { mu_.unlock(); }

 private:
  Depot() {
    pthread_atfork([] { Get().LockForFork(); }, [] { Get().UnlockAfterFork(); },
                   [] { Get().UnlockAfterFork(); });
  }
  std::mutex mu_;
  Block* heads_[kClasses] = {};
  std::vector<char*> slabs_;
};

/*! \brief A thread's free lists. */
struct ThreadLists {
  Block* heads[kClasses] = {};
  uint32_t counts[kClasses] = {};
};
// (initial-exec: a load relative to the thread pointer, where the default model calls
// __tls_get_addr for every object made and freed; 9 bytes of the static TLS that the
// libraries a process loads later share)
__attribute__((tls_model("initial-exec"))) thread_local ThreadLists* current = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local bool exited = false;

/*! \brief Hands the thread's blocks to the depot when it exits. */
struct ThreadExit {
  ~ThreadExit() {
    if (ThreadLists* t = current) {
      for (size_t c = 0; c < kClasses; ++c) {
        Block* head = t->heads[c];
        if (head == nullptr) continue;
        Block* tail = head;
        while (tail->next != nullptr) tail = tail->next;
        Depot::Get().Give(c, head, tail);
      }
      current = nullptr;
      delete t;
    }
    exited = true;  // (objects freed later, by other thread-locals' destructors: the depot)
  }
};

/*! \brief The thread's lists, made at its first object; nullptr once it is exiting, or
 * when there is no memory for them (FreeObjectMemory cannot throw: its block then goes to
 * the depot, and the thread tries again at its next). */
ThreadLists* Start() {
  if (exited) return nullptr;
  thread_local ThreadExit at_exit;
  (void)at_exit;
  current = new (std::nothrow) ThreadLists();
  return current;
}

/*! \brief A block of class c when the thread's list is empty: a batch from the depot, or a
 * fresh slab. */
void* Refill(size_t c) {
  ThreadLists* t = current != nullptr ? current : Start();
  uint32_t n = 0;
  Block* head = Depot::Get().Take(c, t != nullptr ? kBatch : 1, &n);
  if (t == nullptr) return head != nullptr ? head : ::operator new((c + 1) * kGranule);
  if (head == nullptr) head = Depot::Get().Carve(c, &n);
  t->heads[c] = head->next;
  t->counts[c] = n - 1;
  return head;
}

/*! \brief Moves kBatch blocks of class c from the thread's list to the depot. */
void Spill(ThreadLists* t, size_t c) {
  Block* head = t->heads[c];
  Block* tail = head;
  for (uint32_t i = 1; i < kBatch; ++i) tail = tail->next;
  t->heads[c] = tail->next;
  t->counts[c] -= kBatch;
  Depot::Get().Give(c, head, tail);
}

}  // namespace

void* AllocObjectMemory(size_t bytes) {
  const size_t c = ClassOf(bytes);
  if (c >= kClasses) return ::operator new(bytes);
  if (ThreadLists* t = current) {
    if (Block* b = t->heads[c]) {
      t->heads[c] = b->next;
      --t->counts[c];
      return b;
    }
  }
  return Refill(c);
}

void FreeObjectMemory(void* memory, size_t bytes) noexcept {
  const size_t c = ClassOf(bytes);
  if (c >= kClasses) {
    ::operator delete(memory);
    return;
  }
  Block* b = static_cast<Block*>(memory);
  ThreadLists* t = current;
  if (t == nullptr && (t = Start()) == nullptr) {
    Depot::Get().Give(c, b, b);
    return;
  }
  b->next = t->heads[c];
  t->heads[c] = b;
  if (++t->counts[c] > kThreadBlocks) Spill(t, c);
}

#endif  // TILECORE_OBJECT_POOL_OFF

}  // namespace details
}  // namespace ffi
}  // namespace tilecore
