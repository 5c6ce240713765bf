// ringlab's RocksDB FileSystem plugin: random-access reads through io_uring,
// with every io_uring knob chosen at run time from the FileSystem URI.
//
//   LD_PRELOAD=libringlab_rocksdb_fs.so db_bench --fs_uri='ringlab://coop_taskrun' ...
//
// The library registers a factory for `ringlab://KNOBS` in
// ObjectLibrary::Default() from a static initializer, so any RocksDB program
// that is linked against the shared librocksdb and loads this library finds
// it through --fs_uri / FileSystem::CreateFromString. Everything except
// random-access reads (writes, metadata, sequential files) is the default
// (POSIX) FileSystem, untouched.
//
// One ring per thread and per FileSystem (thread_local): db_bench runs
// several threads, and SINGLE_ISSUER / DEFER_TASKRUN rings may only be
// entered by the thread that owns them.
//
// Knobs (the words of `ringlab io`'s flags): depth=N, coop_taskrun,
// taskrun_flag, single_issuer, defer_taskrun, sqpoll, sqpoll_cpu=N,
// sqpoll_idle=MS, force_async, fixed_files, fixed_buffers. A value may be
// written `k=v` or `k:v` (RocksDB's option-string parser splits on '=', so
// `k:v` is the form that always survives; the factory accepts both).
//
// Registered buffers: RocksDB owns the buffers reads land in (a new aligned
// buffer for nearly every direct read), so they cannot be registered once.
// With fixed_buffers each ring registers its own bounce pool (depth buffers
// of 64 KiB, page aligned), reads of up to 64 KiB go through
// IORING_OP_READ_FIXED into the pool and are copied into RocksDB's buffer;
// larger reads use RocksDB's buffer directly with a plain READ.
//
// ReadAsync (RocksDB's FilePrefetchBuffer with async_io, e.g. db_bench
// --async_io=1 on scans) submits the read on the calling thread's ring and
// returns at once with an io_handle; FileSystem::Poll reaps completions
// until every listed handle is done, then runs their callbacks (on the
// polling thread, which must be the submitting one, as with RocksDB's own
// io_uring backend); AbortIO cancels (IORING_OP_ASYNC_CANCEL) and waits
// until the kernel is done with the buffers, without callbacks. Short reads
// and EAGAIN are resubmitted as in the synchronous path. Completions of
// asynchronous reads that a synchronous Read reaps on the same ring are
// kept for Poll.

#include <algorithm>
#include <fcntl.h>
#include <liburing.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rocksdb/file_system.h"
#include "rocksdb/io_status.h"
#include "rocksdb/utilities/object_registry.h"

namespace ringlab {

using ROCKSDB_NAMESPACE::FileOptions;
using ROCKSDB_NAMESPACE::FileSystem;
using ROCKSDB_NAMESPACE::FileSystemWrapper;
using ROCKSDB_NAMESPACE::FSRandomAccessFile;
using ROCKSDB_NAMESPACE::FSRandomAccessFileOwnerWrapper;
using ROCKSDB_NAMESPACE::FSReadRequest;
using ROCKSDB_NAMESPACE::IODebugContext;
using ROCKSDB_NAMESPACE::IOHandleDeleter;
using ROCKSDB_NAMESPACE::IOOptions;
using ROCKSDB_NAMESPACE::IOStatus;
using ROCKSDB_NAMESPACE::ObjectLibrary;
using ROCKSDB_NAMESPACE::Slice;

constexpr unsigned kDepthMax = 4096;
constexpr unsigned kFileSlots = 1024;
constexpr size_t kBounceSize = 64 * 1024;

struct Knobs {
  unsigned depth = 256;  // RocksDB's own io_uring depth
  bool coop_taskrun = false;
  bool taskrun_flag = false;
  bool single_issuer = false;
  bool defer_taskrun = false;
  bool sqpoll = false;
  int sqpoll_cpu = -1;
  int sqpoll_idle_ms = -1;
  bool force_async = false;
  bool fixed_files = false;
  bool fixed_buffers = false;

  std::string Describe() const {
    std::ostringstream s;
    s << "depth=" << depth;
    if (coop_taskrun) s << ",coop_taskrun";
    if (taskrun_flag) s << ",taskrun_flag";
    if (single_issuer) s << ",single_issuer";
    if (defer_taskrun) s << ",defer_taskrun";
    if (sqpoll) s << ",sqpoll";
    if (sqpoll_cpu >= 0) s << ",sqpoll_cpu=" << sqpoll_cpu;
    if (sqpoll_idle_ms >= 0) s << ",sqpoll_idle=" << sqpoll_idle_ms;
    if (force_async) s << ",force_async";
    if (fixed_files) s << ",fixed_files";
    if (fixed_buffers) s << ",fixed_buffers";
    return s.str();
  }
};

const char* kKnobList =
    "depth=N, coop_taskrun, taskrun_flag, single_issuer, defer_taskrun, "
    "sqpoll, sqpoll_cpu=N, sqpoll_idle=MS, force_async, fixed_files, "
    "fixed_buffers";

static bool ParseUnsigned(const std::string& s, long max, long* out) {
  if (s.empty() || s.size() > 9) return false;
  long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v > max) return false;
  *out = v;
  return true;
}

// Parses the part of the URI after `ringlab://`. Returns "" or the error.
std::string ParseKnobs(const std::string& spec, Knobs* k) {
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) {
      if (end == spec.size()) break;
      continue;
    }
    std::string name = item, value;
    bool has_value = false;
    size_t sep = item.find_first_of("=:");
    if (sep != std::string::npos) {
      name = item.substr(0, sep);
      value = item.substr(sep + 1);
      has_value = true;
    }
    bool* flag = nullptr;
    if (name == "coop_taskrun") flag = &k->coop_taskrun;
    if (name == "taskrun_flag") flag = &k->taskrun_flag;
    if (name == "single_issuer") flag = &k->single_issuer;
    if (name == "defer_taskrun") flag = &k->defer_taskrun;
    if (name == "sqpoll") flag = &k->sqpoll;
    if (name == "force_async") flag = &k->force_async;
    if (name == "fixed_files") flag = &k->fixed_files;
    if (name == "fixed_buffers") flag = &k->fixed_buffers;
    if (flag != nullptr) {
      if (has_value) {
        return "ringlab fs_uri: knob '" + name +
               "' takes no value (got '" + item + "')";
      }
      *flag = true;
      continue;
    }
    long v = 0;
    if (name == "depth" || name == "sqpoll_cpu" || name == "sqpoll_idle") {
      long max = name == "depth" ? kDepthMax : (name == "sqpoll_cpu" ? 4095 : 3600000);
      if (!has_value || !ParseUnsigned(value, max, &v) ||
          (name == "depth" && v == 0)) {
        return "ringlab fs_uri: knob '" + name + "' needs a number" +
               (name == "depth" ? " from 1 to 4096" : "") + " (got '" + item +
               "'), e.g. " + name + "=1";
      }
      if (name == "depth") k->depth = static_cast<unsigned>(v);
      if (name == "sqpoll_cpu") k->sqpoll_cpu = static_cast<int>(v);
      if (name == "sqpoll_idle") k->sqpoll_idle_ms = static_cast<int>(v);
      continue;
    }
    return "ringlab fs_uri: unknown knob '" + name + "'; known knobs: " +
           kKnobList;
  }
  // What the kernel refuses, said before it refuses it.
  if (k->defer_taskrun && !k->single_issuer) {
    return "ringlab fs_uri: knob 'defer_taskrun' needs 'single_issuer' (the "
           "kernel refuses it alone): add single_issuer";
  }
  if (k->sqpoll) {
    const char* bad = k->coop_taskrun    ? "coop_taskrun"
                      : k->defer_taskrun ? "defer_taskrun"
                      : k->taskrun_flag  ? "taskrun_flag"
                                         : nullptr;
    if (bad != nullptr) {
      return std::string("ringlab fs_uri: knob '") + bad +
             "' cannot be combined with 'sqpoll': the kernel refuses it "
             "(EINVAL), since with SQPOLL the poller thread runs the "
             "completion work; drop one of them";
    }
  }
  if (k->taskrun_flag && !k->coop_taskrun && !k->defer_taskrun) {
    return "ringlab fs_uri: knob 'taskrun_flag' needs 'coop_taskrun' or "
           "'defer_taskrun' (the kernel refuses it alone): add one";
  }
  if (!k->sqpoll && (k->sqpoll_cpu >= 0 || k->sqpoll_idle_ms >= 0)) {
    return std::string("ringlab fs_uri: knob '") +
           (k->sqpoll_cpu >= 0 ? "sqpoll_cpu" : "sqpoll_idle") +
           "' only applies to an SQPOLL ring: add sqpoll";
  }
  return "";
}

// Files closed since start: rings drop their registered slots lazily (a
// SINGLE_ISSUER ring may only be updated by its own thread).
std::mutex g_closed_mu;
std::set<uint64_t> g_closed_files;
std::atomic<uint64_t> g_closed_generation{0};
std::atomic<uint64_t> g_next_file_id{1};
std::atomic<uint64_t> g_next_fs_id{1};

// user_data of an SQE: a synchronous op's index shifted left (even), an
// AsyncRead's address with the low bit set, or kIgnoreData (a cancel).
constexpr uint64_t kAsyncTag = 1;
constexpr uint64_t kIgnoreData = ~uint64_t(0) - 1;

// Counters of the asynchronous path, read by tools through
// ringlab_fs_async_stats().
std::atomic<uint64_t> g_async_submitted{0};
std::atomic<uint64_t> g_async_delivered{0};
std::atomic<uint64_t> g_async_aborted{0};

struct Ring;
struct AsyncRead;
void DeleteAsync(void* p);

struct Ring {
  struct io_uring ring;
  bool inited = false;
  // Set when the ring failed in a way that may leave stale submissions
  // queued: the ring is never used again.
  std::string broken;
  Knobs knobs;
  bool files_registered = false;
  std::unordered_map<uint64_t, int> slot_of_file;
  std::vector<int> free_slots;
  uint64_t seen_closed_generation = 0;
  char* bounce = nullptr;
  std::vector<int> free_bounce;
  // Asynchronous reads to (re)submit (short read, EAGAIN, SQ was full).
  std::vector<AsyncRead*> async_retry;
  unsigned async_inflight = 0;

  ~Ring() {
    if (inited) io_uring_queue_exit(&ring);
    free(bounce);
  }

  // The slot of the file for IOSQE_FIXED_FILE, or -1 to use the fd.
  int SlotFor(uint64_t file_id, int fd) {
    if (!files_registered) return -1;
    DropClosedFiles();
    auto it = slot_of_file.find(file_id);
    if (it != slot_of_file.end()) return it->second;
    if (free_slots.empty()) return -1;
    int slot = free_slots.back();
    if (io_uring_register_files_update(&ring, slot, &fd, 1) != 1) return -1;
    free_slots.pop_back();
    slot_of_file[file_id] = slot;
    return slot;
  }

  void DropClosedFiles() {
    uint64_t gen = g_closed_generation.load(std::memory_order_acquire);
    if (gen == seen_closed_generation) return;
    std::lock_guard<std::mutex> lock(g_closed_mu);
    for (auto it = slot_of_file.begin(); it != slot_of_file.end();) {
      if (g_closed_files.count(it->first) != 0) {
        int none = -1;
        io_uring_register_files_update(&ring, it->second, &none, 1);
        free_slots.push_back(it->second);
        it = slot_of_file.erase(it);
      } else {
        ++it;
      }
    }
    seen_closed_generation = gen;
  }
};

// Builds a ring with the knobs; on failure returns null and says why.
std::unique_ptr<Ring> MakeRing(const Knobs& k, std::string* why) {
  std::unique_ptr<Ring> r(new Ring());
  r->knobs = k;
  struct io_uring_params p;
  memset(&p, 0, sizeof(p));
  if (k.coop_taskrun) p.flags |= IORING_SETUP_COOP_TASKRUN;
  if (k.taskrun_flag) p.flags |= IORING_SETUP_TASKRUN_FLAG;
  if (k.single_issuer) p.flags |= IORING_SETUP_SINGLE_ISSUER;
  if (k.defer_taskrun) p.flags |= IORING_SETUP_DEFER_TASKRUN;
  if (k.sqpoll) p.flags |= IORING_SETUP_SQPOLL;
  if (k.sqpoll_cpu >= 0) {
    p.flags |= IORING_SETUP_SQ_AFF;
    p.sq_thread_cpu = static_cast<unsigned>(k.sqpoll_cpu);
  }
  if (k.sqpoll_idle_ms >= 0) p.sq_thread_idle = static_cast<unsigned>(k.sqpoll_idle_ms);
  int rc = io_uring_queue_init_params(k.depth, &r->ring, &p);
  if (rc < 0) {
    std::string hint;
    if (rc == -EINVAL) {
      hint = ": the kernel refuses one of the setup flags (COOP_TASKRUN and "
             "TASKRUN_FLAG need 5.19, SINGLE_ISSUER 6.0, DEFER_TASKRUN 6.1; "
             "sqpoll_cpu must be an online CPU)";
    } else if (rc == -EPERM) {
      hint = ": io_uring is disabled (sysctl kernel.io_uring_disabled) or "
             "blocked by seccomp";
    } else if (rc == -ENOMEM) {
      hint = ": locked-memory limit too low for the ring (ulimit -l)";
    }
    *why = "ringlab fs: io_uring_queue_init_params(" + k.Describe() +
           ") failed: " + strerror(-rc) + hint;
    return nullptr;
  }
  r->inited = true;
  if (k.fixed_files) {
    rc = io_uring_register_files_sparse(&r->ring, kFileSlots);
    if (rc < 0) {
      *why = std::string("ringlab fs: fixed_files: registering a sparse file "
                         "table failed: ") +
             strerror(-rc) + " (needs Linux 5.19)";
      return nullptr;
    }
    r->files_registered = true;
    for (int s = kFileSlots - 1; s >= 0; s--) r->free_slots.push_back(s);
  }
  if (k.fixed_buffers) {
    size_t bytes = static_cast<size_t>(k.depth) * kBounceSize;
    void* mem = nullptr;
    if (posix_memalign(&mem, 4096, bytes) != 0) {
      *why = "ringlab fs: fixed_buffers: cannot allocate the bounce pool";
      return nullptr;
    }
    r->bounce = static_cast<char*>(mem);
    std::vector<struct iovec> iov(k.depth);
    for (unsigned i = 0; i < k.depth; i++) {
      iov[i].iov_base = r->bounce + i * kBounceSize;
      iov[i].iov_len = kBounceSize;
    }
    rc = io_uring_register_buffers(&r->ring, iov.data(), k.depth);
    if (rc < 0) {
      *why = std::string("ringlab fs: fixed_buffers: registering the bounce "
                         "pool failed: ") +
             strerror(-rc) +
             (rc == -ENOMEM ? " (raise the locked-memory limit, ulimit -l)" : "");
      return nullptr;
    }
    for (int i = static_cast<int>(k.depth) - 1; i >= 0; i--) r->free_bounce.push_back(i);
  }
  return r;
}

// This thread's ring of FileSystem `fs_id`, made on first use.
Ring* ThreadRing(uint64_t fs_id, const Knobs& k, std::string* why) {
  thread_local std::unordered_map<uint64_t, std::unique_ptr<Ring>> rings;
  auto it = rings.find(fs_id);
  if (it != rings.end()) return it->second.get();
  std::unique_ptr<Ring> r = MakeRing(k, why);
  if (!r) return nullptr;
  Ring* raw = r.get();
  rings[fs_id] = std::move(r);
  return raw;
}

struct Op {
  uint64_t offset;
  size_t len;
  char* buf;
  size_t done = 0;
  int bounce = -1;  // bounce buffer index while in flight
  bool finished = false;
  unsigned retries = 0;
  int err = 0;  // positive errno
};

// Shared by the synchronous and the asynchronous read paths.

// Prepares `sqe` to read `op`'s remaining bytes from `target` (an fd, or a
// registered slot with `fixed`), into a free bounce buffer when there is one
// (read_fixed: the bounce buffers are registered).
static void PrepRead(Ring* r, Op& op, struct io_uring_sqe* sqe, int target, bool fixed) {
  uint64_t off = op.offset + op.done;
  size_t left = op.len - op.done;
  if (op.bounce < 0 && !r->free_bounce.empty() && op.len <= kBounceSize) {
    op.bounce = r->free_bounce.back();
    r->free_bounce.pop_back();
  }
  if (op.bounce >= 0) {
    char* b = r->bounce + static_cast<size_t>(op.bounce) * kBounceSize + op.done;
    io_uring_prep_read_fixed(sqe, target, b, left, off, op.bounce);
  } else {
    io_uring_prep_read(sqe, target, op.buf + op.done, left, off);
  }
  if (fixed) sqe->flags |= IOSQE_FIXED_FILE;
  if (r->knobs.force_async) sqe->flags |= IOSQE_ASYNC;
}

// Accounts for a read's completion `res`: true when the op must be
// submitted again (EAGAIN/EINTR, or a short read with more to come), false
// when it is over (op.err set on failure; res == 0 is the end of the file).
// `stop`: never again (the read was aborted or orphaned).
static bool ReadAgain(Op& op, int res, bool direct, bool stop) {
  if ((res == -EAGAIN || res == -EINTR) && !stop && ++op.retries < 10000) return true;
  if (res < 0) {
    op.err = -res;
  } else if (res > 0) {
    op.done += static_cast<size_t>(res);
    bool unaligned = direct && (op.done % 512) != 0;
    if (op.done < op.len && !unaligned && !stop && ++op.retries < 10000) return true;
  }
  return false;
}

// Gives `op`'s bounce buffer back, copying what was read out of it first
// when `copy`.
static void ReleaseBounce(Ring* r, Op& op, bool copy) {
  if (op.bounce < 0) return;
  if (copy) memcpy(op.buf, r->bounce + static_cast<size_t>(op.bounce) * kBounceSize, op.done);
  r->free_bounce.push_back(op.bounce);
  op.bounce = -1;
}

// One ReadAsync: the io_handle RocksDB holds until it calls del_fn.
struct AsyncRead {
  static constexpr uint64_t kMagic = 0x72696e676c616231ULL;  // "ringlab1"
  uint64_t magic = kMagic;
  Ring* ring = nullptr;
  std::thread::id owner;
  Op op;
  int target = -1;  // fd or registered slot
  bool fixed = false;
  bool direct = false;
  std::string fname;
  FSReadRequest req;
  std::function<void(const FSReadRequest&, void*)> cb;
  void* cb_arg = nullptr;
  enum State { kInFlight, kQueued, kDone, kDelivered } state = kInFlight;
  bool aborted = false;      // AbortIO asked: no resubmission, no callback
  bool cancel_sent = false;
  bool orphaned = false;     // del_fn ran while the kernel still had it
};

static AsyncRead* AsAsync(void* h) {
  AsyncRead* a = static_cast<AsyncRead*>(h);
  return (a != nullptr && a->magic == AsyncRead::kMagic) ? a : nullptr;
}

// Queues the read's (remaining) bytes on its ring; false if the SQ is full.
static bool PrepAsync(AsyncRead* a) {
  Ring* r = a->ring;
  struct io_uring_sqe* sqe = io_uring_get_sqe(&r->ring);
  if (sqe == nullptr) return false;
  PrepRead(r, a->op, sqe, a->target, a->fixed);
  io_uring_sqe_set_data64(sqe, reinterpret_cast<uint64_t>(a) | kAsyncTag);
  a->state = AsyncRead::kInFlight;
  r->async_inflight++;
  return true;
}

// Queues the asynchronous reads waiting for resubmission, as SQEs allow.
static void FinishAsync(AsyncRead* a);

static void FlushAsyncRetries(Ring* r) {
  while (!r->async_retry.empty()) {
    AsyncRead* a = r->async_retry.back();
    if (a->orphaned) {
      // Its buffer may be gone: never hand it to the kernel again.
      r->async_retry.pop_back();
      a->op.err = ECANCELED;
      FinishAsync(a);
      continue;
    }
    if (!PrepAsync(a)) return;
    r->async_retry.pop_back();
  }
}

static void FinishAsync(AsyncRead* a) {
  Ring* r = a->ring;
  Op& op = a->op;
  ReleaseBounce(r, op, op.err == 0 && !a->orphaned);
  if (op.err != 0) {
    a->req.status = IOStatus::IOError("ringlab fs: async read " + a->fname + " at offset " +
                                      std::to_string(op.offset) + ": " + strerror(op.err));
    a->req.result = Slice(op.buf, 0);
  } else {
    a->req.status = IOStatus::OK();
    a->req.result = Slice(op.buf, op.done);
  }
  a->state = AsyncRead::kDone;
  if (a->orphaned) delete a;
}

// Handles a CQE that is not a synchronous op's: true if it was an
// asynchronous read's or a cancel's (consumed), false for a synchronous op.
static bool TakeAsyncCqe(Ring* r, const struct io_uring_cqe* cqe) {
  uint64_t ud = io_uring_cqe_get_data64(cqe);
  if (ud == kIgnoreData) return true;
  if ((ud & kAsyncTag) == 0) return false;
  AsyncRead* a = reinterpret_cast<AsyncRead*>(ud & ~kAsyncTag);
  r->async_inflight--;
  if (ReadAgain(a->op, cqe->res, a->direct, a->aborted || a->orphaned)) {
    a->state = AsyncRead::kQueued;
    r->async_retry.push_back(a);  // EAGAIN, or a short read: ask for the rest
    return true;
  }
  FinishAsync(a);
  return true;
}

// Takes a read waiting for resubmission off its ring's retry queue.
void DropFromRetry(AsyncRead* a) {
  auto& q = a->ring->async_retry;
  auto it = std::find(q.begin(), q.end(), a);
  if (it != q.end()) q.erase(it);
}

// RocksDB's del_fn for our io_handles.
void DeleteAsync(void* p) {
  AsyncRead* a = AsAsync(p);
  if (a == nullptr) return;
  bool live = a->state == AsyncRead::kInFlight || a->state == AsyncRead::kQueued;
  if (live && (a->state == AsyncRead::kInFlight || a->owner != std::this_thread::get_id())) {
    // RocksDB polls or aborts before deleting; should it not, the kernel
    // still owns the SQE (or another thread's ring holds it): the owner's
    // reaper frees it, and a queued retry is never submitted.
    a->orphaned = true;
    return;
  }
  if (a->state == AsyncRead::kQueued) {
    DropFromRetry(a);
    if (a->op.bounce >= 0) a->ring->free_bounce.push_back(a->op.bounce);
  }
  a->magic = 0;
  delete a;
}

// Submits every op and waits until all are finished. Short reads are
// resubmitted for the rest; EAGAIN and EINTR are resubmitted; a read of 0
// bytes is the end of the file. Returns an error only for a failure of the
// ring itself (then no op is in flight any more, or the ring is abandoned).
IOStatus RunOps(Ring* r, int fd, uint64_t file_id, bool direct, std::vector<Op>& ops,
                const std::string& fname) {
  if (!r->broken.empty()) return IOStatus::IOError(r->broken);
  int slot = r->SlotFor(file_id, fd);
  size_t next = 0;      // first op never submitted
  std::vector<size_t> retry;  // ops to (re)submit
  size_t finished = 0, inflight = 0;
  for (auto& op : ops) {
    if (op.len == 0) {
      op.finished = true;
      finished++;
    }
  }
  while (finished < ops.size()) {
    // Queue what fits: retries first, then new ops.
    unsigned queued = 0;
    while (true) {
      size_t i;
      if (!retry.empty()) {
        i = retry.back();
      } else {
        while (next < ops.size() && ops[next].finished) next++;
        if (next >= ops.size()) break;
        i = next;
      }
      struct io_uring_sqe* sqe = io_uring_get_sqe(&r->ring);
      if (sqe == nullptr) break;
      if (!retry.empty()) {
        retry.pop_back();
      } else {
        next++;
      }
      PrepRead(r, ops[i], sqe, slot >= 0 ? slot : fd, slot >= 0);
      io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(i) << 1);
      queued++;
    }
    FlushAsyncRetries(r);
    inflight += queued;
    int rc = io_uring_submit_and_wait(&r->ring, 1);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      // The SQEs are still queued (not consumed): nothing of them is in
      // flight in the kernel, but earlier ones may be. Wait those out so no
      // read lands in a buffer RocksDB has reused.
      std::string what = std::string("ringlab fs: io_uring_submit_and_wait on ") +
                         fname + ": " + strerror(-rc);
      r->broken = what + " (this thread's ring is not used again)";
      inflight -= queued;  // still in the SQ, never seen by the kernel
      while (inflight > 0) {
        struct io_uring_cqe* c;
        if (io_uring_wait_cqe(&r->ring, &c) < 0) break;
        if (!TakeAsyncCqe(r, c)) inflight--;
        io_uring_cqe_seen(&r->ring, c);
      }
      return IOStatus::IOError(what);
    }
    struct io_uring_cqe* cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&r->ring, head, cqe) {
      seen++;
      if (TakeAsyncCqe(r, cqe)) continue;
      size_t i = static_cast<size_t>(io_uring_cqe_get_data64(cqe) >> 1);
      inflight--;
      if (i >= ops.size()) continue;
      Op& op = ops[i];
      if (ReadAgain(op, cqe->res, direct, false)) {
        retry.push_back(i);  // EAGAIN, or a short read: ask for the rest
        continue;
      }
      ReleaseBounce(r, op, op.err == 0);
      op.finished = true;
      finished++;
    }
    io_uring_cq_advance(&r->ring, seen);
  }
  return IOStatus::OK();
}

class RinglabFileSystem;

class RinglabRandomAccessFile : public FSRandomAccessFileOwnerWrapper {
 public:
  RinglabRandomAccessFile(std::unique_ptr<FSRandomAccessFile>&& t, int fd, bool direct,
                          std::string fname, const RinglabFileSystem* fs)
      : FSRandomAccessFileOwnerWrapper(std::move(t)),
        fd_(fd),
        direct_(direct),
        id_(g_next_file_id.fetch_add(1)),
        fname_(std::move(fname)),
        fs_(fs) {}

  ~RinglabRandomAccessFile() override {
    {
      std::lock_guard<std::mutex> lock(g_closed_mu);
      g_closed_files.insert(id_);
    }
    g_closed_generation.fetch_add(1, std::memory_order_release);
    close(fd_);
  }

  IOStatus Read(uint64_t offset, size_t n, const IOOptions& options, Slice* result,
                char* scratch, IODebugContext* dbg) const override;
  IOStatus MultiRead(FSReadRequest* reqs, size_t num_reqs, const IOOptions& options,
                     IODebugContext* dbg) override;
  IOStatus ReadAsync(FSReadRequest& req, const IOOptions& opts,
                     std::function<void(const FSReadRequest&, void*)> cb, void* cb_arg,
                     void** io_handle, IOHandleDeleter* del_fn,
                     IODebugContext* dbg) override;

 private:
  IOStatus Do(std::vector<Op>& ops) const;
  int fd_;
  bool direct_;
  uint64_t id_;
  std::string fname_;
  const RinglabFileSystem* fs_;
};

class RinglabFileSystem : public FileSystemWrapper {
 public:
  RinglabFileSystem(const std::shared_ptr<FileSystem>& base, const Knobs& k)
      : FileSystemWrapper(base), knobs_(k), id_(g_next_fs_id.fetch_add(1)) {}

  static const char* kClassName() { return "RinglabFileSystem"; }
  const char* Name() const override { return kClassName(); }

  IOStatus NewRandomAccessFile(const std::string& fname, const FileOptions& opts,
                               std::unique_ptr<FSRandomAccessFile>* result,
                               IODebugContext* dbg) override {
    std::unique_ptr<FSRandomAccessFile> base;
    IOStatus s = target()->NewRandomAccessFile(fname, opts, &base, dbg);
    if (!s.ok()) return s;
    int flags = O_RDONLY | O_CLOEXEC;
    if (opts.use_direct_reads) flags |= O_DIRECT;
    int fd = open(fname.c_str(), flags);
    if (fd < 0) {
      return IOStatus::IOError("ringlab fs: open " + fname + ": " + strerror(errno));
    }
    result->reset(new RinglabRandomAccessFile(std::move(base), fd, opts.use_direct_reads,
                                              fname, this));
    return IOStatus::OK();
  }

  IOStatus Poll(std::vector<void*>& io_handles, size_t min_completions) override;
  IOStatus AbortIO(std::vector<void*>& io_handles) override;

  Ring* RingHere(std::string* why) const { return ThreadRing(id_, knobs_, why); }
  const Knobs& knobs() const { return knobs_; }

 private:
  Knobs knobs_;
  uint64_t id_;
};

IOStatus RinglabRandomAccessFile::Do(std::vector<Op>& ops) const {
  std::string why;
  Ring* r = fs_->RingHere(&why);
  if (r == nullptr) return IOStatus::IOError(why);
  return RunOps(r, fd_, id_, direct_, ops, fname_);
}

static IOStatus OpStatus(const Op& op, const std::string& fname) {
  if (op.err != 0) {
    return IOStatus::IOError("ringlab fs: read " + fname + " at offset " +
                             std::to_string(op.offset) + ": " + strerror(op.err));
  }
  return IOStatus::OK();
}

IOStatus RinglabRandomAccessFile::Read(uint64_t offset, size_t n, const IOOptions&,
                                       Slice* result, char* scratch,
                                       IODebugContext*) const {
  std::vector<Op> ops(1);
  ops[0].offset = offset;
  ops[0].len = n;
  ops[0].buf = scratch;
  IOStatus s = Do(ops);
  if (!s.ok()) {
    *result = Slice(scratch, 0);
    return s;
  }
  s = OpStatus(ops[0], fname_);
  *result = Slice(scratch, s.ok() ? ops[0].done : 0);
  return s;
}

IOStatus RinglabRandomAccessFile::MultiRead(FSReadRequest* reqs, size_t num_reqs,
                                            const IOOptions&, IODebugContext*) {
  std::vector<Op> ops(num_reqs);
  for (size_t i = 0; i < num_reqs; i++) {
    if (reqs[i].scratch == nullptr) {
      return IOStatus::InvalidArgument("ringlab fs: MultiRead request without a buffer");
    }
    ops[i].offset = reqs[i].offset;
    ops[i].len = reqs[i].len;
    ops[i].buf = reqs[i].scratch;
  }
  IOStatus s = Do(ops);
  if (!s.ok()) return s;
  for (size_t i = 0; i < num_reqs; i++) {
    reqs[i].status = OpStatus(ops[i], fname_);
    reqs[i].result = Slice(reqs[i].scratch, reqs[i].status.ok() ? ops[i].done : 0);
  }
  return IOStatus::OK();
}

// RocksDB 7.8 calls ReadAsync from FilePrefetchBuffer (async_io scans):
// submit on this thread's ring and return; Poll runs the callback.
IOStatus RinglabRandomAccessFile::ReadAsync(
    FSReadRequest& req, const IOOptions& opts,
    std::function<void(const FSReadRequest&, void*)> cb, void* cb_arg, void** io_handle,
    IOHandleDeleter* del_fn, IODebugContext* dbg) {
  if (io_handle != nullptr) *io_handle = nullptr;
  if (del_fn != nullptr) *del_fn = nullptr;
  if (io_handle == nullptr || del_fn == nullptr || req.len == 0 || req.scratch == nullptr) {
    // Nowhere to keep a handle (or nothing to read): read now, as the
    // base class does.
    req.status = Read(req.offset, req.len, opts, &req.result, req.scratch, dbg);
    cb(req, cb_arg);
    return IOStatus::OK();
  }
  std::string why;
  Ring* r = fs_->RingHere(&why);
  if (r == nullptr) return IOStatus::IOError(why);
  if (!r->broken.empty()) return IOStatus::IOError(r->broken);
  int slot = r->SlotFor(id_, fd_);
  std::unique_ptr<AsyncRead> a(new AsyncRead());
  a->ring = r;
  a->owner = std::this_thread::get_id();
  a->op.offset = req.offset;
  a->op.len = req.len;
  a->op.buf = req.scratch;
  a->target = slot >= 0 ? slot : fd_;
  a->fixed = slot >= 0;
  a->direct = direct_;
  a->fname = fname_;
  a->req.offset = req.offset;
  a->req.len = req.len;
  a->req.scratch = req.scratch;
  a->cb = std::move(cb);
  a->cb_arg = cb_arg;
  FlushAsyncRetries(r);
  if (!PrepAsync(a.get())) {
    io_uring_submit(&r->ring);  // make room in the SQ
    if (!PrepAsync(a.get())) {
      // Still full: read now instead.
      req.status = Read(req.offset, req.len, opts, &req.result, req.scratch, dbg);
      a->cb(req, cb_arg);
      return IOStatus::OK();
    }
  }
  int rc = io_uring_submit(&r->ring);
  if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
    // The SQE may yet reach the kernel (an SQPOLL poller reads the SQ on
    // its own): the handle stays allocated for it, and the ring is not
    // used again.
    r->broken = std::string("ringlab fs: io_uring_submit (async read of ") + fname_ +
                "): " + strerror(-rc) + " (this thread's ring is not used again)";
    a.release()->orphaned = true;
    return IOStatus::IOError(r->broken);
  }
  // EINTR/EAGAIN/EBUSY: the SQE stays queued and goes with the next
  // submission (Poll submits before it waits).
  g_async_submitted.fetch_add(1, std::memory_order_relaxed);
  *io_handle = a.release();
  *del_fn = DeleteAsync;
  return IOStatus::OK();
}

// Reaps the ring of `a` until `a` is no longer in flight or queued.
static IOStatus WaitAsync(AsyncRead* a) {
  Ring* r = a->ring;
  while (a->state == AsyncRead::kInFlight || a->state == AsyncRead::kQueued) {
    FlushAsyncRetries(r);
    int rc = io_uring_submit_and_wait(&r->ring, r->async_inflight > 0 ? 1 : 0);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      return IOStatus::IOError(std::string("ringlab fs: io_uring_submit_and_wait (Poll of ") +
                               a->fname + "): " + strerror(-rc));
    }
    struct io_uring_cqe* cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&r->ring, head, cqe) {
      seen++;
      // No synchronous op is in flight between calls: one that shows
      // here is stale and dropped.
      TakeAsyncCqe(r, cqe);
    }
    io_uring_cq_advance(&r->ring, seen);
  }
  return IOStatus::OK();
}

static IOStatus CheckHandle(void* h, AsyncRead** out) {
  AsyncRead* a = AsAsync(h);
  *out = a;
  if (h == nullptr) return IOStatus::OK();
  if (a == nullptr) {
    return IOStatus::InvalidArgument("ringlab fs: Poll/AbortIO got an io_handle that is not "
                                     "one of ringlab's ReadAsync");
  }
  if (a->owner != std::this_thread::get_id()) {
    return IOStatus::NotSupported(
        "ringlab fs: Poll/AbortIO on another thread than the ReadAsync's (each thread "
        "has its own ring; SINGLE_ISSUER and DEFER_TASKRUN rings serve only their "
        "thread)");
  }
  return IOStatus::OK();
}

IOStatus RinglabFileSystem::Poll(std::vector<void*>& io_handles, size_t /*min_completions*/) {
  // Like RocksDB's own backend: wait for every listed read (at least
  // min_completions), then run the callbacks of those that are done.
  for (void* h : io_handles) {
    AsyncRead* a;
    IOStatus s = CheckHandle(h, &a);
    if (!s.ok()) return s;
    if (a == nullptr) continue;
    s = WaitAsync(a);
    if (!s.ok()) return s;
  }
  for (void* h : io_handles) {
    AsyncRead* a = AsAsync(h);
    if (a == nullptr || a->state != AsyncRead::kDone || a->aborted) continue;
    a->state = AsyncRead::kDelivered;
    g_async_delivered.fetch_add(1, std::memory_order_relaxed);
    a->cb(a->req, a->cb_arg);
  }
  return IOStatus::OK();
}

IOStatus RinglabFileSystem::AbortIO(std::vector<void*>& io_handles) {
  for (void* h : io_handles) {
    AsyncRead* a;
    IOStatus s = CheckHandle(h, &a);
    if (!s.ok()) return s;
    if (a == nullptr || a->state == AsyncRead::kDelivered) continue;
    if (!a->aborted) g_async_aborted.fetch_add(1, std::memory_order_relaxed);
    a->aborted = true;
    if (a->state == AsyncRead::kQueued) {
      // Waiting for resubmission: the kernel has nothing of it.
      DropFromRetry(a);
      a->op.err = ECANCELED;
      FinishAsync(a);
      continue;
    }
    if (a->state == AsyncRead::kInFlight && !a->cancel_sent) {
      Ring* r = a->ring;
      struct io_uring_sqe* sqe = io_uring_get_sqe(&r->ring);
      if (sqe == nullptr) {
        io_uring_submit(&r->ring);
        sqe = io_uring_get_sqe(&r->ring);
      }
      if (sqe != nullptr) {
        // Without an SQE the read is simply waited for below.
        io_uring_prep_cancel64(sqe, reinterpret_cast<uint64_t>(a) | kAsyncTag, 0);
        io_uring_sqe_set_data64(sqe, kIgnoreData);
        a->cancel_sent = true;
      }
    }
  }
  // The kernel must be done with every buffer before RocksDB frees it.
  for (void* h : io_handles) {
    AsyncRead* a = AsAsync(h);
    if (a == nullptr) continue;
    IOStatus s = WaitAsync(a);
    if (!s.ok()) return s;
  }
  return IOStatus::OK();
}

static bool Register() {
  ObjectLibrary::Default()->AddFactory<FileSystem>(
      ObjectLibrary::PatternEntry("ringlab", false).AddSeparator("://", false),
      [](const std::string& uri, std::unique_ptr<FileSystem>* guard,
         std::string* errmsg) -> FileSystem* {
        Knobs k;
        size_t at = uri.find("://");
        std::string spec = at == std::string::npos ? "" : uri.substr(at + 3);
        std::string err = ParseKnobs(spec, &k);
        if (err.empty()) {
          // Build one ring now so the kernel's refusal is an open error,
          // not an I/O error later.
          std::unique_ptr<Ring> probe = MakeRing(k, &err);
        }
        if (!err.empty()) {
          *errmsg = err;
          fprintf(stderr, "%s\n", err.c_str());
          return nullptr;
        }
        if (getenv("RINGLAB_FS_QUIET") == nullptr) {
          fprintf(stderr, "ringlab fs: io_uring reads with %s (one ring per thread)\n",
                  k.Describe().c_str());
        }
        guard->reset(new RinglabFileSystem(FileSystem::Default(), k));
        return guard->get();
      });
  return true;
}

static const bool g_registered = Register();

// RINGLAB_FS_ASYNC_STATS=1: the asynchronous reads of the process, on
// standard error at exit (for db_bench --async_io=1 runs).
struct AsyncStatsAtExit {
  ~AsyncStatsAtExit() {
    if (getenv("RINGLAB_FS_ASYNC_STATS") == nullptr) return;
    fprintf(stderr,
            "ringlab fs: async_reads submitted=%llu delivered=%llu aborted=%llu\n",
            static_cast<unsigned long long>(g_async_submitted.load()),
            static_cast<unsigned long long>(g_async_delivered.load()),
            static_cast<unsigned long long>(g_async_aborted.load()));
  }
};
static AsyncStatsAtExit g_async_stats_at_exit;

}  // namespace ringlab

// For tests and tools: asynchronous reads submitted, delivered through
// Poll, and aborted, since the library was loaded.
extern "C" void ringlab_fs_async_stats(uint64_t* submitted, uint64_t* delivered,
                                       uint64_t* aborted) {
  *submitted = ringlab::g_async_submitted.load();
  *delivered = ringlab::g_async_delivered.load();
  *aborted = ringlab::g_async_aborted.load();
}

// For tests and tools: parse a knob string, return "" or the error.
extern "C" const char* ringlab_fs_parse_knobs(const char* spec) {
  static thread_local std::string err;
  ringlab::Knobs k;
  err = ringlab::ParseKnobs(spec == nullptr ? "" : spec, &k);
  return err.c_str();
}
