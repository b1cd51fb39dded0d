// An S3 client for the `s3` backend: libcurl's multi interface drives many requests from one
// thread, libcurl's SigV4 (CURLOPT_AWS_SIGV4) signs them; this file adds what S3 needs beside:
// the target URL, credentials from the environment or an AWS credentials file, retries with
// exponential backoff and full jitter for throttling and transient failures, per-kind request
// counts and latencies, and the few XML elements S3 answers with. DESIGN: docs/backend-s3.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "ckptbench/base/metrics.hpp"

namespace ckpt::s3 {

// S3's multipart limits.
inline constexpr uint64_t kMinPart = uint64_t{5} << 20;  // every part but an upload's last
inline constexpr uint64_t kMaxPart = uint64_t{5} << 30;  // any part
inline constexpr uint64_t kMaxParts = 10000;             // parts of one upload
// How many parts a range of len bytes is cut into with part size `part`: whole parts, the
// remainder its own part when it is at least kMinPart, else added to the last (which is then up
// to part + kMinPart - 1 bytes). 1 for len <= part.
uint64_t part_count(uint64_t len, uint64_t part);

// Where an object's parts are, from what its writers send: the backend cuts a save with it and
// `plan` counts requests with it (pure). A writer's run: bytes [start, end) of the object that one
// writer sends. Sorted by offset, each run's range reaches to the next run's start (the first from
// 0, the last to the object's end), so the ranges cover the object and a part never holds two
// writers' bytes; consecutive runs of one writer are one range; parts are numbered in offset
// order.
struct WriterRun {
  uint64_t start = 0, end = 0;
  int writer = 0;
};
struct PartRange {
  uint64_t start = 0, end = 0;
  uint64_t first_part = 0;  // its first part's number - 1
  uint64_t nparts = 0;
  int writer = 0;
};
struct ObjectParts {
  std::vector<PartRange> ranges;  // every writer's, in offset order
  uint64_t parts = 1;             // of the whole object
  bool single_put = false;        // one writer and one part: a plain PUT, no multipart upload
  // Not empty: S3 would refuse the object (a writer's range below 5 MiB that is not the last,
  // more than 10,000 parts) or writers overlap; says which writer, which bytes and the limit.
  std::string error;
};
ObjectParts object_parts(std::vector<WriterRun> runs, uint64_t size, uint64_t part, int writers);

// s3://BUCKET[/PREFIX]: the bucket and the key prefix the run's objects go under (no leading or
// trailing '/'). Throws ConfigError naming `key` and what is allowed.
struct Url {
  std::string bucket, prefix;
};
Url parse_url(const std::string& s, const std::string& key = "s3.url");

// Where the keys come from: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else
// profile `profile` (empty: AWS_PROFILE, else "default") of the credentials file
// (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials). Never from the command line or the
// config.
struct Credentials {
  std::string access_key, secret_key, session_token;
  std::string source;  // "environment" or "<file> [profile]": for the report (no secret)
};
// Throws ConfigError saying what was looked for where (never a key's value).
Credentials load_credentials(const std::string& profile);
// The profile's keys in the text of a credentials file (INI; `[name]` sections; `key = value`).
std::optional<Credentials> credentials_from_ini(const std::string& text,
                                                const std::string& profile);

struct Settings {
  std::string endpoint;  // http://host:port or https://host (no path)
  std::string region = "us-east-1";
  bool path_style = true;  // endpoint/BUCKET/KEY; false: BUCKET.host/KEY
  unsigned max_attempts = 6;
  double backoff_base_s = 0.1, backoff_max_s = 5;
  double timeout_s = 120, connect_timeout_s = 10;
};

// Request kinds, each counted and timed on its own: the report's ObjectRequest kinds.
using Kind = ObjectRequest;
inline constexpr int kKinds = kObjectRequests;
inline const char* kind_name(Kind k) { return object_request_name(k); }

struct Request {
  Kind kind = Kind::get;
  std::string key;    // object key below the bucket ("" = the bucket itself)
  std::string query;  // encoded, its parameters sorted ("partNumber=3&uploadId=...")
  // PUT / part / complete: the body. get with `into`: exactly into_len bytes land there (a range
  // from range_off when `ranged`); without `into` the body goes to `response` (XML answers).
  const std::byte* body = nullptr;
  uint64_t body_len = 0;
  std::byte* into = nullptr;
  uint64_t into_len = 0;
  uint64_t range_off = 0;
  bool ranged = false;
  uint64_t tag = 0;  // the caller's

  // Results.
  long status = 0;
  std::string etag;  // ETag response header, quotes kept
  uint64_t content_length = 0;
  std::string response;  // error or XML body (bounded)
  std::string error;     // "" when it succeeded (2xx after at most max_attempts)
  unsigned attempts = 0;

  // The client's.
  uint64_t sent = 0, got = 0;
  uint64_t t0_ns = 0;
  double due_s = 0;
  void* easy = nullptr;
  void* headers = nullptr;
};

class Client {
 public:
  Client(Settings s, Credentials c, std::string bucket);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Starts r (which must stay put until it is done).
  void start(Request& r);
  // Drives the transfers; blocks until at least one started request is done (succeeded, or failed
  // for good after its retries) and appends those. Nothing in flight: returns at once.
  void wait(std::vector<Request*>& done);
  // Starts r and waits for it; throws IoError with its error.
  void run(Request& r);
  size_t in_flight() const { return active_ + delayed_.size(); }
  // Drops every request in flight (after an error; the buffers may then be freed).
  void cancel_all() noexcept;

  // s3://bucket/key, for messages.
  std::string where(const std::string& key) const;
  const Settings& settings() const { return s_; }
  const Credentials& credentials() const { return c_; }
  // Where each request that succeeded (PhaseRecorder::request), each retry (Counter::retries)
  // and each throttling answer (Counter::throttled) is also recorded; null: nowhere.
  void set_recorder(PhaseRecorder* rec) { rec_ = rec; }

 private:
  void launch(Request& r);
  void finish(Request& r, int curl_code);
  std::string url_of(const Request& r) const;

  Settings s_;
  Credentials c_;
  std::string bucket_;
  void* multi_ = nullptr;
  std::vector<void*> idle_;                // easy handles to reuse
  std::deque<Request*> delayed_;           // waiting out their backoff
  std::vector<Request*> ready_;            // done, not yet handed out
  std::unordered_set<Request*> inflight_;  // in the multi handle
  size_t active_ = 0;
  uint64_t rng_;
  PhaseRecorder* rec_ = nullptr;
};

// libcurl's version ("7.88.1").
std::string library_version();

// The text of each <tag>...</tag> in xml, entities decoded (S3's answers: UploadId, Key, ETag,
// Code, Message...).
std::vector<std::string> xml_values(const std::string& xml, const std::string& tag);
// CompleteMultipartUpload's body for parts 1..n with their ETags.
std::string complete_body(const std::vector<std::string>& etags);
// key, percent-encoded as S3 wants it in a path ('/' kept) or a query value ('/' encoded).
std::string encode(const std::string& s, bool keep_slash);

// Every object key below prefix (ListObjectsV2, paged) and every multipart upload (key, upload id)
// still open below it (ListMultipartUploads). Throw IoError.
std::vector<std::string> list_keys(Client& c, const std::string& prefix);
// The same listing with each object's size (bytes).
std::vector<std::pair<std::string, uint64_t>> list_objects(Client& c, const std::string& prefix);
std::vector<std::pair<std::string, std::string>> list_uploads(Client& c, const std::string& prefix);
// Aborts every open multipart upload and deletes every object below prefix; returns how many of
// each. Throws IoError on the first failure.
std::pair<size_t, size_t> remove_prefix(Client& c, const std::string& prefix);

}  // namespace ckpt::s3
