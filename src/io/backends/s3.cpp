// S3 backend: every file of the layout is an object below s3.url (KEY = PREFIX/<run>/<point>/
// <file>), moved by the S3 client (s3client.hpp: libcurl multi + SigV4). A save cuts each object
// into parts of block_size (the last may be up to 5 MiB longer, so that no part but the object's
// last is below S3's minimum), queue_depth of them in flight; an object of one part is one PUT. A
// restore reads the layout's transfers as ranged GETs, queue_depth in flight. A shared object
// (shared-file, aggregated-node, ranks_per_file > 1) is one multipart upload: its first writer
// creates it and sends the upload id to the others, each uploads the parts of its own region, the
// first writer completes it once all have finished, or aborts it when any failed.
// docs/backend-s3.md has the mapping and what does not apply (sync, the page cache).
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/backends/mpiio.hpp"
#include "ckptbench/io/s3client.hpp"
#include "ckptbench/mpi/agreement.hpp"
#include "ckptbench/plan/transfer.hpp"

namespace ckpt {

namespace {

using s3::kMaxPart;
using s3::kMaxParts;
using s3::kMinPart;
constexpr size_t kUploadIdMax = 1024;

struct S3Options {
  std::string url, endpoint, region = "us-east-1", profile;
  bool path_style = true;
  unsigned max_attempts = 6;
  unsigned backoff_ms = 100;
  double timeout_s = 120, connect_timeout_s = 10;
};

const OptionTable<S3Options>& option_table() {
  using O = S3Options;
  static const OptionTable<O> t{{
      {"url", [](ObjectReader& r, const std::string& k, O& o) { o.url = r.str(k, ""); }},
      {"endpoint", [](ObjectReader& r, const std::string& k, O& o) { o.endpoint = r.str(k, ""); }},
      {"region",
       [](ObjectReader& r, const std::string& k, O& o) { o.region = r.str(k, "us-east-1"); }},
      {"path_style",
       [](ObjectReader& r, const std::string& k, O& o) { o.path_style = r.boolean(k, true); }},
      {"profile", [](ObjectReader& r, const std::string& k, O& o) { o.profile = r.str(k, ""); }},
      {"max_attempts",
       [](ObjectReader& r, const std::string& k, O& o) {
         o.max_attempts = static_cast<unsigned>(r.integer(k, 6, 1, 100));
       }},
      {"backoff_ms",
       [](ObjectReader& r, const std::string& k, O& o) {
         o.backoff_ms = static_cast<unsigned>(r.integer(k, 100, 1, 60000));
       }},
      {"timeout_s", [](ObjectReader& r, const std::string& k,
                       O& o) { o.timeout_s = r.number(k, 120, 1, 86400); }},
      {"connect_timeout_s", [](ObjectReader& r, const std::string& k,
                               O& o) { o.connect_timeout_s = r.number(k, 10, 0.1, 600); }},
  }};
  return t;
}

S3Options parse_options(const PointConfig& p) {
  S3Options o = option_table().parse(p.backend_options, "s3");
  if (o.url.empty())
    throw ConfigError(
        "'s3.url' is required with backend s3 (allowed: s3://BUCKET or "
        "s3://BUCKET/PREFIX; the run's objects go below it)");
  s3::parse_url(o.url);
  if (o.endpoint.empty()) o.endpoint = "https://s3." + o.region + ".amazonaws.com";
  if (o.endpoint.rfind("http://", 0) != 0 && o.endpoint.rfind("https://", 0) != 0)
    throw ConfigError("'s3.endpoint': \"" + o.endpoint +
                      "\" is not an http:// or https:// URL (e.g. http://127.0.0.1:7480)");
  if (o.region.empty() || o.region.find_first_of(" /:") != std::string::npos)
    throw ConfigError("'s3.region': \"" + o.region + "\" is not a region name (e.g. us-east-1)");
  if (p.block_size < kMinPart || p.block_size > kMaxPart)
    throw ConfigError("'block_size': " + std::to_string(p.block_size) +
                      " bytes is the s3 backend's part size, and S3 allows parts of 5 MiB (" +
                      std::to_string(kMinPart) + ") to 5 GiB");
  if (p.queue_depth < 1 || p.queue_depth > 1024)
    throw ConfigError("'queue_depth': " + std::to_string(p.queue_depth) +
                      " is out of range for s3 (requests in flight per rank; allowed 1 to 1024)");
  if (p.direct)
    throw ConfigError(
        "'direct': O_DIRECT does not apply to s3 (objects on a remote store, no "
        "page cache on this side): set direct false for the s3 points");
  if (p.cache != CacheMode::auto_ && p.cache != CacheMode::none)
    throw ConfigError("'cache': \"" + cache_name(p.cache) +
                      "\" does not apply to s3 (objects on a remote store: no page cache on this "
                      "side): use \"auto\" or \"none\"");
  if (p.restore.method == RestoreMethod::mmap)
    throw ConfigError(
        "'restore.method': \"mmap\" maps files; s3 objects are read with ranged "
        "GETs: use \"read\"");
  if (p.layout.kind == LayoutKind::torch_dcp || p.layout.kind == LayoutKind::megatron_dist)
    throw ConfigError("'layout': \"" + layout_name(p.layout.kind) +
                      "\" writes DCP's commit record (.metadata) through the file system; the s3 "
                      "backend stores objects only: choose file-per-tensor, file-per-shard, "
                      "aggregated-rank, aggregated-node, shared-file or a ZeRO layout");
  return o;
}

s3::Settings settings_of(const S3Options& o) {
  s3::Settings s;
  s.endpoint = o.endpoint;
  s.region = o.region;
  s.path_style = o.path_style;
  s.max_attempts = o.max_attempts;
  s.backoff_base_s = o.backoff_ms / 1000.0;
  s.timeout_s = o.timeout_s;
  s.connect_timeout_s = o.connect_timeout_s;
  return s;
}

// The key prefix of a point's objects: PREFIX/<run directory's name>/<dir below it>.
std::string key_base(const std::string& prefix, const std::string& run_dir,
                     const std::string& dir) {
  namespace fs = std::filesystem;
  std::string rel = fs::path(dir).lexically_relative(fs::path(run_dir).parent_path()).string();
  if (rel.empty() || rel.rfind("..", 0) == 0) rel = fs::path(dir).filename().string();
  return prefix.empty() ? rel : prefix + "/" + rel;
}

class S3Backend final : public Backend {
 public:
  explicit S3Backend(const PointConfig& cfg) : cfg_(cfg), opt_(parse_options(cfg)) {
    url_ = s3::parse_url(opt_.url);
  }

  TransportCaps caps(const PhaseContext& ctx) const override {
    TransportCaps c;
    c.depth = static_cast<unsigned>(std::max(1, cfg_.queue_depth));
    c.collective_files = ctx.plan != nullptr && ctx.plan->any_shared;
    c.preallocate = false;
    c.objects = true;
    return c;
  }

  void begin(PhaseContext& ctx) override {
    ctx_ = &ctx;
    save_ = ctx.phase == Phase::save;
    if (!client_)
      client_ = std::make_unique<s3::Client>(settings_of(opt_), s3::load_credentials(opt_.profile),
                                             url_.bucket);
    client_->set_recorder(ctx.rec);
    base_ = key_base(url_.prefix, ctx.run_dir, ctx.dir);
    files_.assign(ctx.io->files.size(), Obj{});
    comms_ = std::make_unique<mpiio::FileComms>(ctx.comm, ctx.io->rank);
    done_.clear();
    gets_.assign(std::max<size_t>(1, ctx.pool->count()), s3::Request{});
    const size_t nbuf = static_cast<size_t>(std::max(1, cfg_.queue_depth)) + 1;
    if (save_ && parts_.size() != nbuf) {
      parts_.clear();
      for (size_t k = 0; k < nbuf; k++) parts_.push_back(PartBuf{});
    }
    for (auto& p : parts_) p.busy = false;
  }

  void end(PhaseContext&) noexcept override {
    if (!client_) return;
    client_->cancel_all();
    client_->set_recorder(nullptr);
    comms_.reset();
    ctx_ = nullptr;
  }

  void open(PhaseContext& ctx, size_t i, int created_fd) override {
    if (created_fd >= 0) ::close(created_fd);  // never: caps().objects
    const FileSpec& f = ctx.io->files[i];
    Obj& o = files_[i];
    o.key = base_ + "/" + f.path;
    o.open = true;
    if (!save_) return;
    o.comm = f.shared && f.writers.size() > 1 ? comms_->get(f) : MPI_COMM_SELF;
    plan_parts(f, o);
    if (o.single_put) return;
    // The upload: created by the first writer, its id sent to the others.
    std::string id, err;
    int me = 0;
    MPI_Comm_rank(o.comm, &me);
    if (me == 0) {
      try {
        // The clean-up after a stop signal lists the run's uploads: none may start after it.
        if (stop_signal() != 0)
          throw IoError("s3: interrupted by signal " + std::to_string(stop_signal()) +
                        " before the upload of " + client_->where(o.key));
        s3::Request r;
        r.kind = s3::Kind::create_upload;
        r.key = o.key;
        r.query = "uploads=";
        client_->run(r);
        const auto ids = s3::xml_values(r.response, "UploadId");
        if (ids.empty() || ids[0].size() >= kUploadIdMax)
          throw IoError("s3: CreateMultipartUpload " + client_->where(o.key) +
                        " answered without an upload id");
        id = ids[0];
        ctx.rec->metadata();
        o.created_upload = true;
        o.upload_id = id;
        if (stop_signal() != 0) {
          abort_upload(o);
          throw IoError("s3: interrupted by signal " + std::to_string(stop_signal()) +
                        " while the upload of " + client_->where(o.key) + " was created");
        }
      } catch (const std::exception& e) {
        err = e.what();
      }
    }
    if (o.comm != MPI_COMM_SELF) {
      std::string msg = err.empty() ? "+" + id : "-" + err;
      msg.resize(kUploadIdMax + 512, '\0');
      MPI_Request req;
      MPI_Ibcast(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, o.comm, &req);
      wait_guarded(req, o.comm, *ctx.stall, "for the upload id of " + client_->where(o.key));
      msg.resize(std::strlen(msg.c_str()));
      if (msg.empty() || msg[0] == '-')
        err = msg.empty() ? "no upload id" : msg.substr(1);
      else
        id = msg.substr(1);
    }
    if (!err.empty()) {
      o.open = false;
      throw IoError(me == 0 ? err
                            : "another writer could not create the upload of " +
                                  client_->where(o.key) + ": " + err);
    }
    o.upload_id = id;
    o.owe_close = o.comm != MPI_COMM_SELF;
  }

  uint64_t size(size_t i) override {
    s3::Request r;
    r.kind = s3::Kind::head;
    r.key = files_[i].key;
    client_->run(r);
    ctx_->rec->metadata();
    return r.content_length;
  }

  void submit(size_t i, unsigned slot, uint64_t off, uint64_t len, std::byte* data) override {
    if (save_) {
      Obj& o = files_[i];
      // Ranges this transfer is past are finished (their rest is zeros: no one's bytes).
      while (o.ri < o.ranges.size() && off >= o.ranges[o.ri].end) finish_range(o, i);
      if (o.ri >= o.ranges.size() || off < o.pos)
        throw IoError("s3: a transfer at " + std::to_string(off) + " of " + client_->where(o.key) +
                      " is outside this writer's ranges (internal)");
      fill(o, i, nullptr, off - o.pos);
      fill(o, i, data, len);
      done_.push_back(slot);
      return;
    }
    s3::Request& r = gets_[slot];
    r = s3::Request{};
    r.kind = s3::Kind::get;
    r.key = files_[i].key;
    r.into = data;
    r.into_len = len;
    r.range_off = off;
    r.ranged = true;
    r.tag = slot;
    client_->start(r);
  }

  void reap(std::vector<unsigned>& done) override {
    if (save_) {
      if (done_.empty()) wait_parts(1);
      done.insert(done.end(), done_.begin(), done_.end());
      done_.clear();
      return;
    }
    std::vector<s3::Request*> got;
    while (got.empty()) {
      client_->wait(got);
      if (got.empty()) throw IoError("s3: no request in flight to wait for (internal)");
    }
    for (s3::Request* r : got) {
      if (!r->error.empty()) throw IoError("s3: " + r->error);
      ctx_->rec->op(r->into_len, now_ns() - r->t0_ns);
      done.push_back(static_cast<unsigned>(r->tag));
    }
  }

  void drain() noexcept override {
    if (client_) client_->cancel_all();
  }
  void sync(size_t) override {}  // an object is durable once its upload completed

  void close(size_t i) override {
    Obj& o = files_[i];
    if (!save_) {
      o.open = false;
      return;
    }
    std::exception_ptr err = error_of([&] {
      while (o.ri < o.ranges.size()) finish_range(o, i);
      while (o.parts_in_flight > 0) wait_parts(1);
    });
    if (o.owe_close) {
      finish_shared(o, err);
    } else {
      if (err) {
        abort_upload(o);
        std::rethrow_exception(err);
      }
      if (!o.single_put) complete(o, o.etags);  // this writer's are all of them
    }
    o.open = false;
  }

  void abandon() noexcept override {
    if (!client_) return;
    client_->cancel_all();
    for (auto& p : parts_) p.busy = false;
    for (size_t i = 0; i < files_.size(); i++) {
      Obj& o = files_[i];
      if (!o.open) continue;
      if (o.owe_close) {
        try {
          finish_shared(o, std::make_exception_ptr(IoError("this writer failed")));
        } catch (...) {
        }
      } else {
        abort_upload(o);
      }
      o.open = false;
    }
  }

  nlohmann::json describe() const override {
    nlohmann::json j{{"api", "S3 REST over libcurl (multi interface, SigV4 signing)"},
                     {"endpoint", opt_.endpoint},
                     {"bucket", url_.bucket},
                     {"prefix", url_.prefix},
                     {"region", opt_.region},
                     {"path_style", opt_.path_style},
                     {"credentials", client_ ? client_->credentials().source : "not loaded"},
                     {"part_size_bytes", cfg_.block_size},
                     {"last_part_max_bytes", cfg_.block_size + kMinPart - 1},
                     {"single_put_max_bytes", cfg_.block_size},
                     {"requests_in_flight", cfg_.queue_depth},
                     {"max_attempts", opt_.max_attempts},
                     {"backoff_base_ms", opt_.backoff_ms},
                     {"sync",
                      "not applicable: an object is durable once its PUT or "
                      "CompleteMultipartUpload returned"},
                     {"cache",
                      "not applicable: this side keeps no cache of objects; a restore "
                      "reads from the gateway (whose own caches are the store's)"}};
    return j;
  }

 private:
  struct PartBuf {
    std::unique_ptr<std::byte[]> mem;
    bool busy = false;
    s3::Request req;
    size_t file = 0;
    uint64_t part = 0;  // part number (1-based)
    uint64_t data = 0;  // bytes of it that are the layout's (the rest: zeros of holes)
  };
  // A contiguous range of the object whose bytes one writer uploads as consecutive parts.
  struct Range {
    uint64_t start = 0, end = 0;
    uint64_t first_part = 0;  // its first part's number - 1
    uint64_t nparts = 0;
  };
  struct Obj {
    std::string key, upload_id;
    MPI_Comm comm = MPI_COMM_SELF;
    bool open = false, single_put = false, owe_close = false, created_upload = false;
    std::vector<Range> ranges;  // this writer's, in offset order
    uint64_t total_parts = 0;   // of the whole object
    size_t ri = 0;              // range being filled
    uint64_t pos = 0;           // next byte of it to take
    uint64_t part = 0;          // its part being filled (index within the range)
    int buf = -1;               // that part's buffer
    uint64_t fill = 0;          // bytes in it
    uint64_t data = 0;          // of which the layout's
    uint64_t parts_in_flight = 0;
    std::map<uint64_t, std::string> etags;  // part number -> ETag, this writer's parts
  };

  uint64_t part_len(const Range& r, uint64_t k) const {
    return k + 1 < r.nparts ? cfg_.block_size
                            : (r.end - r.start) - (r.nparts - 1) * cfg_.block_size;
  }

  // This writer's ranges of the object and their part numbers. The writers' runs (stretches of
  // contiguous extents: a region, an index footer) are exchanged; sorted by offset, each run's
  // range reaches to the next run's start (the first from 0, the last to the object's end), so
  // the ranges cover the object and a part never holds two writers' bytes. Parts are numbered
  // in offset order.
  void plan_parts(const FileSpec& f, Obj& o) {
    std::vector<uint64_t> mine;  // start, end pairs
    for (const auto& e : f.extents) {
      if (e.padded == 0) continue;
      if (!mine.empty() && mine.back() == e.offset)
        mine.back() = e.offset + e.padded;
      else
        mine.insert(mine.end(), {e.offset, e.offset + e.padded});
    }
    int me = 0, n = 1;
    MPI_Comm_rank(o.comm, &me);
    MPI_Comm_size(o.comm, &n);
    std::vector<uint64_t> all = mine;
    std::vector<int> counts(static_cast<size_t>(n), static_cast<int>(mine.size()));
    if (n > 1) {
      const std::string what = "for the writers' ranges of " + client_->where(o.key);
      int mc = static_cast<int>(mine.size());
      MPI_Request req;
      MPI_Iallgather(&mc, 1, MPI_INT, counts.data(), 1, MPI_INT, o.comm, &req);
      wait_guarded(req, o.comm, *ctx_->stall, what);
      std::vector<int> displs(static_cast<size_t>(n), 0);
      int total = 0;
      for (int k = 0; k < n; k++) {
        displs[static_cast<size_t>(k)] = total;
        total += counts[static_cast<size_t>(k)];
      }
      all.assign(static_cast<size_t>(total), 0);
      MPI_Iallgatherv(mine.data(), mc, MPI_UINT64_T, all.data(), counts.data(), displs.data(),
                      MPI_UINT64_T, o.comm, &req);
      wait_guarded(req, o.comm, *ctx_->stall, what);
    }
    std::vector<s3::WriterRun> runs;
    size_t at = 0;
    for (int k = 0; k < n; k++)
      for (int c = 0; c < counts[static_cast<size_t>(k)]; c += 2, at += 2)
        runs.push_back(
            s3::WriterRun{all[at], all[at + 1], n > 1 ? f.writers[static_cast<size_t>(k)] : k});
    const int me_real = n > 1 ? f.writers[static_cast<size_t>(me)] : 0;
    s3::ObjectParts parts = s3::object_parts(std::move(runs), f.size, cfg_.block_size, n);
    if (!parts.error.empty()) throw IoError("s3: " + client_->where(o.key) + ": " + parts.error);
    o.ranges.clear();
    for (const auto& r : parts.ranges)
      if (r.writer == me_real) o.ranges.push_back(Range{r.start, r.end, r.first_part, r.nparts});
    o.total_parts = parts.parts;
    o.single_put = parts.single_put;
    o.ri = 0;
    o.pos = o.ranges.empty() ? 0 : o.ranges[0].start;
    o.part = 0;
    o.fill = 0;
    o.data = 0;
    o.buf = -1;
    o.etags.clear();
  }

  // Appends n bytes (zeros when src is null) to the current range's parts, sending each full
  // part; at the range's end the next range begins.
  void fill(Obj& o, size_t i, const std::byte* src, uint64_t n) {
    while (n > 0) {
      if (o.ri >= o.ranges.size())
        throw IoError("s3: more bytes than the plan gives " + client_->where(o.key) +
                      " (internal)");
      const Range& r = o.ranges[o.ri];
      if (o.buf < 0) o.buf = take_buffer();
      PartBuf& b = parts_[static_cast<size_t>(o.buf)];
      const uint64_t want = part_len(r, o.part);
      const uint64_t take = std::min(n, want - o.fill);
      if (src != nullptr) {
        std::memcpy(b.mem.get() + o.fill, src, take);
        src += take;
        o.data += take;
      } else {
        std::memset(b.mem.get() + o.fill, 0, take);
      }
      o.fill += take;
      o.pos += take;
      n -= take;
      if (o.fill == want) flush_part(o, i);
      if (o.part == r.nparts) next_range(o);
    }
  }

  void next_range(Obj& o) {
    o.ri++;
    o.part = 0;
    o.fill = 0;
    if (o.ri < o.ranges.size()) o.pos = o.ranges[o.ri].start;
  }

  // The rest of the current range: zeros (bytes no writer has), sent; then the next range.
  void finish_range(Obj& o, size_t i) {
    const Range& r = o.ranges[o.ri];
    if (o.pos < r.end)
      fill(o, i, nullptr, r.end - o.pos);
    else if (r.end == r.start && o.part == 0) {  // an empty object: one empty PUT
      o.buf = take_buffer();
      flush_part(o, i);
      next_range(o);
    }
  }

  int take_buffer() {
    for (;;) {
      for (size_t k = 0; k < parts_.size(); k++)
        if (!parts_[k].busy) {
          if (!parts_[k].mem) parts_[k].mem.reset(new std::byte[cfg_.block_size + kMinPart]);
          parts_[k].busy = true;
          return static_cast<int>(k);
        }
      wait_parts(1);
    }
  }

  // Sends the part being filled (when it holds its bytes).
  void flush_part(Obj& o, size_t i) {
    const Range& r = o.ranges[o.ri];
    if (o.buf < 0 || o.part >= r.nparts || o.fill != part_len(r, o.part)) return;
    PartBuf& b = parts_[static_cast<size_t>(o.buf)];
    b.file = i;
    b.part = r.first_part + o.part + 1;
    b.req = s3::Request{};
    b.req.kind = o.single_put ? s3::Kind::put : s3::Kind::part;
    b.req.key = o.key;
    if (!o.single_put)
      b.req.query =
          "partNumber=" + std::to_string(b.part) + "&uploadId=" + s3::encode(o.upload_id, false);
    b.req.body = b.mem.get();
    b.req.body_len = o.fill;
    b.req.tag = static_cast<uint64_t>(o.buf);
    b.data = o.data;
    o.data = 0;
    ctx_->rec->count(Counter::submit_calls);
    client_->start(b.req);
    o.parts_in_flight++;
    o.part++;
    o.fill = 0;
    o.buf = -1;
    ctx_->rec->count_max(Counter::max_in_flight, client_->in_flight());
  }

  // Waits until at least `n` part uploads finished; a failed one throws.
  void wait_parts(size_t n) {
    std::vector<s3::Request*> got;
    while (got.size() < n) {
      const size_t before = got.size();
      client_->wait(got);
      if (got.size() == before) throw IoError("s3: no upload in flight to wait for (internal)");
    }
    for (s3::Request* r : got) {
      PartBuf& b = parts_[r->tag];
      Obj& o = files_[b.file];
      o.parts_in_flight--;
      b.busy = false;
      if (!r->error.empty()) throw IoError("s3: " + r->error);
      o.etags[b.part] = r->etag;                   // by part number
      ctx_->rec->op(b.data, now_ns() - r->t0_ns);  // the layout's bytes, as for a file
    }
  }

  // etags: every part's, by part number (1..total_parts).
  void complete(Obj& o, const std::map<uint64_t, std::string>& etags) {
    std::vector<std::string> list;
    for (uint64_t k = 1; k <= o.total_parts; k++) {
      auto it = etags.find(k);
      if (it == etags.end() || it->second.empty())
        throw IoError("s3: part " + std::to_string(k) + " of " + client_->where(o.key) +
                      " has no ETag (not uploaded)");
      list.push_back(it->second);
    }
    const std::string body = s3::complete_body(list);
    s3::Request r;
    r.kind = s3::Kind::complete;
    r.key = o.key;
    r.query = "uploadId=" + s3::encode(o.upload_id, false);
    r.body = reinterpret_cast<const std::byte*>(body.data());
    r.body_len = body.size();
    client_->run(r);
    // S3 may answer 200 with an error document when the completion failed late.
    if (!s3::xml_values(r.response, "Code").empty() &&
        r.response.find("<Error>") != std::string::npos)
      throw IoError("s3: CompleteMultipartUpload " + client_->where(o.key) + ": " +
                    s3::xml_values(r.response, "Code")[0]);
    o.created_upload = false;
    ctx_->rec->metadata();  // metadata: each CreateMultipartUpload, CompleteMultipartUpload, HEAD
  }

  void abort_upload(Obj& o) noexcept {
    if (!o.created_upload || o.upload_id.empty()) return;
    try {
      s3::Request r;
      r.kind = s3::Kind::abort;
      r.key = o.key;
      r.query = "uploadId=" + s3::encode(o.upload_id, false);
      client_->run(r);
    } catch (...) {
      // The run's clean-up (remove_run) lists and aborts what is left.
    }
    o.created_upload = false;
  }

  // A shared object's end, collective over its writers: each sends the first writer its parts'
  // ETags or that it failed; the first writer completes the upload (or aborts it) and tells all.
  void finish_shared(Obj& o, std::exception_ptr err) {
    o.owe_close = false;
    int me = 0, n = 1;
    MPI_Comm_rank(o.comm, &me);
    MPI_Comm_size(o.comm, &n);
    std::string mine = err ? std::string("-") : "+";
    for (const auto& [num, e] : o.etags) mine += std::to_string(num) + " " + e + "\n";
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<size_t>(n)), displs(static_cast<size_t>(n));
    const std::string what = "at the end of " + client_->where(o.key);
    MPI_Request req;
    MPI_Igather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, o.comm, &req);
    wait_guarded(req, o.comm, *ctx_->stall, what);
    std::string all;
    if (me == 0) {
      int at = 0;
      for (int k = 0; k < n; k++) {
        displs[static_cast<size_t>(k)] = at;
        at += lens[static_cast<size_t>(k)];
      }
      all.resize(static_cast<size_t>(at));
    }
    MPI_Igatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
                 o.comm, &req);
    wait_guarded(req, o.comm, *ctx_->stall, what);
    char verdict[512] = {};
    if (me == 0) {
      std::string why;
      std::map<uint64_t, std::string> etags;
      for (int k = 0; k < n; k++) {
        const std::string s = all.substr(static_cast<size_t>(displs[static_cast<size_t>(k)]),
                                         static_cast<size_t>(lens[static_cast<size_t>(k)]));
        if (s.empty() || s[0] != '+') {
          if (why.empty()) why = "writer " + std::to_string(k) + " failed";
          continue;
        }
        size_t p = 1;
        for (size_t q; (q = s.find('\n', p)) != std::string::npos; p = q + 1) {
          const std::string line = s.substr(p, q - p);
          const size_t sp = line.find(' ');
          if (sp != std::string::npos)
            etags[std::strtoull(line.c_str(), nullptr, 10)] = line.substr(sp + 1);
        }
      }
      if (why.empty()) {
        try {
          complete(o, etags);
        } catch (const std::exception& e) {
          why = e.what();
        }
      }
      if (!why.empty()) abort_upload(o);
      std::snprintf(verdict, sizeof verdict, "%s", why.c_str());
    }
    MPI_Ibcast(verdict, sizeof verdict, MPI_CHAR, 0, o.comm, &req);
    wait_guarded(req, o.comm, *ctx_->stall, what);
    if (err) std::rethrow_exception(err);
    if (verdict[0] != '\0')
      throw PeerLeftError("s3: the upload of " + client_->where(o.key) +
                          " was aborted: " + verdict);
  }

  const PointConfig& cfg_;
  S3Options opt_;
  s3::Url url_;
  std::unique_ptr<s3::Client> client_;
  PhaseContext* ctx_ = nullptr;
  bool save_ = true;
  std::string base_;
  std::vector<Obj> files_;
  std::unique_ptr<mpiio::FileComms> comms_;
  std::vector<unsigned> done_;
  std::vector<s3::Request> gets_;
  std::vector<PartBuf> parts_;
};

// Before any I/O: the credentials load, the endpoint answers, they are accepted and the bucket
// exists (HEAD on the bucket).
std::string reach(const PointConfig& p) {
  const S3Options o = parse_options(p);
  const s3::Url u = s3::parse_url(o.url);
  s3::Credentials c;
  try {
    c = s3::load_credentials(o.profile);
  } catch (const ConfigError& e) {
    return std::string("s3: ") + e.what();
  }
  s3::Settings s = settings_of(o);
  s.max_attempts = std::min(s.max_attempts, 3u);
  s3::Client client(s, c, u.bucket);
  s3::Request r;
  r.kind = s3::Kind::head;
  try {
    client.run(r);
  } catch (const IoError& e) {
    std::string why = e.what();
    if (r.status == 404)
      why += ": bucket '" + u.bucket + "' does not exist at " + o.endpoint;
    else if (r.status == 403)
      why += ": the credentials (" + c.source + ") were refused by " + o.endpoint;
    else if (r.status == 0)
      why += ": the endpoint " + o.endpoint + " does not answer";
    return why;
  }
  return "";
}

std::string remove_data(const PointConfig& p, const std::string& run_dir, const std::string& dir) {
  const S3Options o = parse_options(p);
  const s3::Url u = s3::parse_url(o.url);
  // A generous budget: after a failure that was the gateway's, it may take a while to come back,
  // and what the run leaves then is orphaned uploads (about a minute of attempts).
  s3::Settings s = settings_of(o);
  s.max_attempts = std::max(s.max_attempts, 20u);
  s.backoff_max_s = 5;
  s3::Client client(s, s3::load_credentials(o.profile), u.bucket);
  const std::string prefix = key_base(u.prefix, run_dir, dir) + "/";
  const auto [aborted, deleted] = s3::remove_prefix(client, prefix);
  return "s3://" + u.bucket + "/" + prefix + ": " + std::to_string(deleted) + " objects deleted, " +
         std::to_string(aborted) + " unfinished uploads aborted";
}

// The objects, parts and requests of a point's plan (`plan`, the report's plan section), checked
// before any I/O: an object S3 would refuse (too many parts, a writer's range below 5 MiB that is
// not the object's last) is a ConfigError naming the object, the limit and the key to change.
nlohmann::json plan_requests(const IoPlan& plan, const PointConfig& p) {
  struct Obj {
    uint64_t size = 0;
    int writers = 0;
    std::string path;
    std::vector<s3::WriterRun> runs;
  };
  std::map<uint32_t, Obj> objs;
  uint64_t heads = 0;
  for (const auto& r : plan.ranks)
    for (const auto& f : r.files) {
      Obj& o = objs[f.id];
      o.size = f.size;
      o.path = f.path;
      o.writers = std::max<int>(1, static_cast<int>(f.writers.size()));
      heads++;
      for (const auto& e : f.extents) {
        if (e.padded == 0) continue;
        if (!o.runs.empty() && o.runs.back().writer == r.rank && o.runs.back().end == e.offset)
          o.runs.back().end = e.offset + e.padded;
        else
          o.runs.push_back(s3::WriterRun{e.offset, e.offset + e.padded, r.rank});
      }
    }
  uint64_t puts = 0, uploads = 0, parts = 0, max_parts = 0, shared = 0;
  for (auto& [id, o] : objs) {
    const s3::ObjectParts op = s3::object_parts(std::move(o.runs), o.size, p.block_size, o.writers);
    if (!op.error.empty())
      throw ConfigError("s3: layout '" + layout_name(p.layout.kind) + "', block_size " +
                        std::to_string(p.block_size) + ": object '" + o.path + "': " + op.error);
    if (op.single_put) {
      puts++;
      continue;
    }
    uploads++;
    parts += op.parts;
    max_parts = std::max(max_parts, op.parts);
    if (o.writers > 1) shared++;
  }
  // The restore's ranged GETs, as the driver cuts them (a framed file: its runs, streamed).
  uint64_t gets = 0;
  for (const auto& r : plan.ranks)
    for (const auto& f : r.files) {
      const bool streamed = !f.read_reqs.empty();
      for_each_transfer(
          f, p.block_size, streamed ? TransferMode::stream : p.transfer,
          [&](const Transfer&) { gets++; }, true, !streamed);
    }
  return {
      {"objects", objs.size()},
      {"single_put_objects", puts},
      {"multipart_objects", uploads},
      {"shared_objects", shared},
      {"parts", parts},
      {"max_parts_per_object", max_parts},
      {"save", {{"put", puts}, {"create_upload", uploads}, {"part", parts}, {"complete", uploads}}},
      {"restore", {{"head", heads}, {"get", gets}}},
      {"clean_up", {{"list", 1 + objs.size() / 1000}, {"delete", objs.size()}}}};
}

std::map<std::string, uint64_t> stored_sizes(const PointConfig& p, const std::string& run_dir,
                                             const std::string& dir) {
  const S3Options o = parse_options(p);
  const s3::Url u = s3::parse_url(o.url);
  s3::Client client(settings_of(o), s3::load_credentials(o.profile), u.bucket);
  const std::string prefix = key_base(u.prefix, run_dir, dir) + "/";
  std::map<std::string, uint64_t> out;
  for (auto& [key, size] : s3::list_objects(client, prefix)) out[key.substr(prefix.size())] = size;
  return out;
}

// characterize's metadata stage on an object store (BackendFactory::metadata_probe): PUT, HEAD,
// LIST and DELETE rates of empty objects below PREFIX/<dir's parent's name>/<dir's name>/, each
// rank's requests one at a time (as a run creates, opens and removes its objects).
MdSample metadata_probe(const PointConfig& p, const std::string& dir, int n, MPI_Comm comm) {
  namespace fs = std::filesystem;
  const S3Options o = parse_options(p);
  const s3::Url u = s3::parse_url(o.url);
  s3::Client client(settings_of(o), s3::load_credentials(o.profile), u.bucket);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const fs::path d(dir);
  const std::string base = (u.prefix.empty() ? "" : u.prefix + "/") +
                           d.parent_path().filename().string() + "/" + d.filename().string() + "/";
  auto key = [&](int i) { return base + "f" + std::to_string(rank) + "." + std::to_string(i); };
  auto each = [&](s3::Kind kind) {
    return [&, kind] {
      for (int i = 0; i < n; i++) {
        s3::Request r;
        r.kind = kind;
        r.key = key(i);
        client.run(r);
      }
    };
  };
  MdSample s;
  s.files_per_rank = n;
  s.ranks = size;
  try {
    s.create_s = timed_step(comm, each(s3::Kind::put));
    s.stat_s = s.open_s = timed_step(comm, each(s3::Kind::head));
    s.list_s = timed_step(comm, [&] {
      if (rank != 0) return;
      const size_t got = s3::list_keys(client, base).size();
      if (got != static_cast<size_t>(n) * static_cast<size_t>(size))
        throw IoError("s3: LIST of " + client.where(base) + " gave " + std::to_string(got) +
                      " keys, " + std::to_string(n * size) + " were PUT");
    });
    s.lists = 1 + n * size / 1000;
    s.unlink_s = timed_step(comm, each(s3::Kind::del));
  } catch (...) {
    // Whatever a rank made, removed by rank 0 once every rank is past the failed step.
    if (rank == 0) try {
        s3::remove_prefix(client, base);
      } catch (const std::exception&) {  // the probe's error is the one to report
      }
    throw;
  }
  return s;
}

}  // namespace

BackendFactory s3_backend() {
  BackendFactory f;
  f.name = "s3";
  f.description =
      "S3 objects through libcurl (SigV4): block_size parts, queue_depth requests in flight, "
      "ranged GETs; shared objects as one multipart upload";
  f.probe = [] { return std::string(); };
  f.library = [] { return std::make_pair(std::string("libcurl_version"), s3::library_version()); };
  f.validate = [](const PointConfig& p) { parse_options(p); };
  f.option_keys = option_table().keys();
  f.create = [](const PointConfig& p) -> std::unique_ptr<Backend> {
    return std::make_unique<S3Backend>(p);
  };
  f.objects = true;
  f.reach = reach;
  f.remove_data = remove_data;
  f.plan_requests = plan_requests;
  f.metadata_probe = metadata_probe;
  f.stored_sizes = stored_sizes;
  f.min_block_size = kMinPart;
  f.stream_refusal = "";
  return f;
}

}  // namespace ckpt
