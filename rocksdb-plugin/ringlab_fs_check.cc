// Reads a whole RocksDB database three ways and prints a checksum of every
// key and value: an iterator scan (FSRandomAccessFile::Read), a scan with
// async_io (ReadAsync where RocksDB uses it), and batched MultiGet of every
// key (MultiRead). With the block cache off, every block comes from the
// file system under test:
//
//   LD_PRELOAD=libringlab_rocksdb_fs.so ringlab_fs_check DB 'ringlab://KNOBS' 1
//
// With the plugin loaded, a second line counts its asynchronous reads
// (submitted by ReadAsync, delivered by Poll, aborted), so a test can tell
// that the async scan went through the ring and not a synchronous fallback.
//
// Used by ringlab-rocksdb's tests to prove that the plugin returns exactly
// what the default FileSystem returns. Exit 1 with the error on any failure.

#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/table.h"

using namespace ROCKSDB_NAMESPACE;

static uint64_t Fnv(uint64_t h, const Slice& s) {
  for (size_t i = 0; i < s.size(); i++) {
    h ^= static_cast<unsigned char>(s[i]);
    h *= 1099511628211ULL;
  }
  // Separate fields so that ("ab","c") and ("a","bc") differ.
  h ^= 0xff;
  h *= 1099511628211ULL;
  return h;
}

static int Fail(const std::string& what, const Status& s) {
  fprintf(stderr, "ringlab_fs_check: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: ringlab_fs_check DB FS_URI|'' DIRECT(0|1)\n");
    return 2;
  }
  std::string db_path = argv[1], uri = argv[2];
  bool direct = strcmp(argv[3], "1") == 0;
  Options options;
  std::shared_ptr<Env> env_guard;
  if (!uri.empty()) {
    Env* env = nullptr;
    Status s = Env::CreateFromUri(ConfigOptions(), "", uri, &env, &env_guard);
    if (!s.ok()) return Fail("fs_uri " + uri, s);
    options.env = env;
  }
  options.use_direct_reads = direct;
  BlockBasedTableOptions table;
  table.no_block_cache = true;
  options.table_factory.reset(NewBlockBasedTableFactory(table));
  DB* raw = nullptr;
  Status s = DB::OpenForReadOnly(options, db_path, &raw);
  if (!s.ok()) return Fail("open " + db_path, s);
  std::unique_ptr<DB> db(raw);

  std::vector<std::string> keys;
  uint64_t scan = 14695981039346656037ULL;
  {
    std::unique_ptr<Iterator> it(db->NewIterator(ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      scan = Fnv(Fnv(scan, it->key()), it->value());
      keys.push_back(it->key().ToString());
    }
    if (!it->status().ok()) return Fail("scan", it->status());
  }
  uint64_t async_scan = 14695981039346656037ULL;
  {
    ReadOptions ro;
    ro.async_io = true;
    ro.readahead_size = 64 * 1024;
    std::unique_ptr<Iterator> it(db->NewIterator(ro));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      async_scan = Fnv(Fnv(async_scan, it->key()), it->value());
    }
    if (!it->status().ok()) return Fail("async scan", it->status());
  }
  uint64_t multiget = 14695981039346656037ULL;
  const size_t kBatch = 16;
  for (size_t at = 0; at < keys.size(); at += kBatch) {
    size_t n = std::min(kBatch, keys.size() - at);
    std::vector<Slice> ks;
    for (size_t i = 0; i < n; i++) ks.emplace_back(keys[at + i]);
    std::vector<PinnableSlice> values(n);
    std::vector<Status> statuses(n);
    db->MultiGet(ReadOptions(), db->DefaultColumnFamily(), n, ks.data(), values.data(),
                 statuses.data(), /*sorted_input=*/true);
    for (size_t i = 0; i < n; i++) {
      if (!statuses[i].ok()) return Fail("multiget " + keys[at + i], statuses[i]);
      multiget = Fnv(Fnv(multiget, ks[i]), values[i]);
    }
  }
  printf("keys=%zu scan=%016" PRIx64 " async_scan=%016" PRIx64 " multiget=%016" PRIx64 "\n",
         keys.size(), scan, async_scan, multiget);
  using Stats = void (*)(uint64_t*, uint64_t*, uint64_t*);
  auto stats = reinterpret_cast<Stats>(dlsym(RTLD_DEFAULT, "ringlab_fs_async_stats"));
  if (stats != nullptr) {
    uint64_t submitted = 0, delivered = 0, aborted = 0;
    stats(&submitted, &delivered, &aborted);
    printf("async_reads submitted=%" PRIu64 " delivered=%" PRIu64 " aborted=%" PRIu64 "\n",
           submitted, delivered, aborted);
  }
  return 0;
}
