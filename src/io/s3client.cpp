// The S3 client of the `s3` backend (s3client.hpp): libcurl does HTTP and SigV4; this file does
// what S3 adds on top.
#include "ckptbench/io/s3client.hpp"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "ckptbench/base/error.hpp"

namespace ckpt::s3 {

namespace {

constexpr size_t kMaxResponse = size_t{32} << 20;  // XML answers (listings) kept at most

std::string trim(std::string s) {
  const auto a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const auto b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

bool transient_curl(int code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

bool transient_http(long status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

const char* method_of(Kind k) {
  switch (k) {
    case Kind::put:
    case Kind::part:
      return "PUT";
    case Kind::create_upload:
    case Kind::complete:
      return "POST";
    case Kind::abort:
    case Kind::del:
      return "DELETE";
    case Kind::head:
      return "HEAD";
    case Kind::get:
    case Kind::list:
      return "GET";
  }
  return "GET";
}

size_t on_write(char* p, size_t size, size_t n, void* ud) {
  auto* r = static_cast<Request*>(ud);
  const size_t len = size * n;
  long status = 0;
  curl_easy_getinfo(static_cast<CURL*>(r->easy), CURLINFO_RESPONSE_CODE, &status);
  if (r->into != nullptr && status >= 200 && status < 300) {
    if (r->got + len > r->into_len) return 0;  // longer than asked: fails the transfer
    std::memcpy(r->into + r->got, p, len);
  } else if (r->response.size() < kMaxResponse) {
    r->response.append(p, std::min(len, kMaxResponse - r->response.size()));
  }
  r->got += len;
  return len;
}

size_t on_read(char* p, size_t size, size_t n, void* ud) {
  auto* r = static_cast<Request*>(ud);
  const size_t len = std::min<uint64_t>(size * n, r->body_len - r->sent);
  if (len > 0) std::memcpy(p, r->body + r->sent, len);
  r->sent += len;
  return len;
}

int on_seek(void* ud, curl_off_t off, int origin) {
  auto* r = static_cast<Request*>(ud);
  if (origin != SEEK_SET || off < 0 || static_cast<uint64_t>(off) > r->body_len)
    return CURL_SEEKFUNC_CANTSEEK;
  r->sent = static_cast<uint64_t>(off);
  return CURL_SEEKFUNC_OK;
}

size_t on_header(char* p, size_t size, size_t n, void* ud) {
  auto* r = static_cast<Request*>(ud);
  const size_t len = size * n;
  std::string line(p, len);
  const auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const std::string value = trim(line.substr(colon + 1));
    if (name == "etag") r->etag = value;
    if (name == "content-length") r->content_length = std::strtoull(value.c_str(), nullptr, 10);
  }
  return len;
}

std::string decode_entities(std::string s) {
  static const std::pair<const char*, const char*> kEnt[] = {
      {"&quot;", "\""}, {"&apos;", "'"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}};
  for (const auto& [from, to] : kEnt)
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + 1))
      s.replace(p, std::strlen(from), to);
  return s;
}

uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// "HTTP 403 (SignatureDoesNotMatch: ...)" plus what it means for the user.
std::string http_error(const Request& r, const Settings& s, const Credentials& c,
                       const std::string& bucket) {
  const auto code = xml_values(r.response, "Code");
  const auto msg = xml_values(r.response, "Message");
  std::string e = "HTTP " + std::to_string(r.status);
  if (!code.empty()) e += " " + code[0];
  if (!msg.empty() && !msg[0].empty()) e += " (" + msg[0] + ")";
  const std::string c0 = code.empty() ? "" : code[0];
  if (c0 == "NoSuchBucket" || (r.status == 404 && r.key.empty()))
    e += ": bucket '" + bucket + "' does not exist at " + s.endpoint;
  else if (r.status == 403 || c0 == "InvalidAccessKeyId" || c0 == "SignatureDoesNotMatch")
    e += ": the credentials (" + c.source + ") were refused by " + s.endpoint;
  return e;
}

}  // namespace

std::string library_version() { return curl_version_info(CURLVERSION_NOW)->version; }

uint64_t part_count(uint64_t len, uint64_t part) {
  if (len <= part) return 1;
  const uint64_t n = len / part, rem = len % part;
  return rem >= kMinPart ? n + 1 : n;
}

ObjectParts object_parts(std::vector<WriterRun> runs, uint64_t size, uint64_t part, int writers) {
  ObjectParts out;
  std::sort(runs.begin(), runs.end(),
            [](const WriterRun& a, const WriterRun& b) { return a.start < b.start; });
  // Consecutive runs of one writer are one range (the hole between them is zeros): an object of
  // one writer is one range, however its extents are padded.
  std::vector<WriterRun> merged;
  for (const WriterRun& r : runs)
    if (!merged.empty() && merged.back().writer == r.writer && r.start >= merged.back().end)
      merged.back().end = r.end;
    else
      merged.push_back(r);
  uint64_t n = 0;
  for (size_t k = 0; k < merged.size(); k++) {
    const bool last = k + 1 == merged.size();
    const WriterRun& r = merged[k];
    if (!last && r.end > merged[k + 1].start) {
      out.error = "writers " + std::to_string(r.writer) + " and " +
                  std::to_string(merged[k + 1].writer) + " write overlapping bytes (internal)";
      return out;
    }
    const uint64_t start = k == 0 ? 0 : r.start;
    const uint64_t end = last ? std::max(size, r.end) : merged[k + 1].start;
    if (!last && end - start < kMinPart) {
      out.error = "writer " + std::to_string(r.writer) + "'s bytes " + std::to_string(start) + "-" +
                  std::to_string(end) +
                  " are fewer than S3's 5 MiB minimum for a part that is not the object's last "
                  "(fewer writers per object, or a larger model)";
      return out;
    }
    const uint64_t np = part_count(end - start, part);
    out.ranges.push_back(PartRange{start, end, n, np, r.writer});
    n += np;
  }
  if (merged.empty() && writers == 1) {  // nothing but its size (an empty object, say)
    out.ranges.push_back(PartRange{0, size, 0, 1, 0});
    n = 1;
  }
  if (n > kMaxParts) {
    out.error = "needs " + std::to_string(n) + " parts of block_size " + std::to_string(part) +
                "; S3 allows 10,000 parts per object: raise 'block_size'";
    return out;
  }
  out.parts = std::max<uint64_t>(n, 1);
  out.single_put = writers == 1 && out.parts == 1;
  return out;
}

Url parse_url(const std::string& s, const std::string& key) {
  const std::string allowed = "allowed: s3://BUCKET or s3://BUCKET/PREFIX";
  if (s.rfind("s3://", 0) != 0)
    throw ConfigError("'" + key + "': \"" + s + "\" is not an S3 URL (" + allowed + ")");
  std::string rest = s.substr(5);
  Url u;
  const auto slash = rest.find('/');
  u.bucket = rest.substr(0, slash);
  if (slash != std::string::npos) u.prefix = rest.substr(slash + 1);
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  bool ok = u.bucket.size() >= 3 && u.bucket.size() <= 63;
  for (char c : u.bucket)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.');
  if (!ok)
    throw ConfigError("'" + key + "': bucket \"" + u.bucket +
                      "\" is not a bucket name (3-63 characters of a-z, 0-9, '-', '.'; " + allowed +
                      ")");
  if (!u.prefix.empty() && (u.prefix.front() == '/' || u.prefix.find("//") != std::string::npos))
    throw ConfigError("'" + key + "': prefix \"" + u.prefix + "\" has an empty path segment (" +
                      allowed + ")");
  if (u.prefix.size() > 512)
    throw ConfigError("'" + key + "': the prefix is " + std::to_string(u.prefix.size()) +
                      " bytes; allowed at most 512 (S3 keys are at most 1024)");
  return u;
}

std::optional<Credentials> credentials_from_ini(const std::string& text,
                                                const std::string& profile) {
  std::istringstream in(text);
  std::string line, section;
  Credentials c;
  bool found = false;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim(line.substr(1, line.size() - 2));
      if (section == profile) found = true;
      continue;
    }
    if (section != profile) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = trim(line.substr(0, eq)), v = trim(line.substr(eq + 1));
    if (k == "aws_access_key_id") c.access_key = v;
    if (k == "aws_secret_access_key") c.secret_key = v;
    if (k == "aws_session_token") c.session_token = v;
  }
  if (!found || c.access_key.empty() || c.secret_key.empty()) return std::nullopt;
  return c;
}

Credentials load_credentials(const std::string& profile_key) {
  const char* ak = std::getenv("AWS_ACCESS_KEY_ID");
  const char* sk = std::getenv("AWS_SECRET_ACCESS_KEY");
  if (ak != nullptr && sk != nullptr && *ak != '\0' && *sk != '\0' && profile_key.empty()) {
    Credentials c;
    c.access_key = ak;
    c.secret_key = sk;
    if (const char* t = std::getenv("AWS_SESSION_TOKEN")) c.session_token = t;
    c.source = "environment (AWS_ACCESS_KEY_ID)";
    return c;
  }
  std::string profile = profile_key;
  if (profile.empty()) {
    const char* p = std::getenv("AWS_PROFILE");
    profile = p != nullptr && *p != '\0' ? p : "default";
  }
  std::string file;
  if (const char* f = std::getenv("AWS_SHARED_CREDENTIALS_FILE"); f != nullptr && *f != '\0')
    file = f;
  else if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    file = std::string(h) + "/.aws/credentials";
  const std::string where =
      "no S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set" +
      std::string(profile_key.empty() ? "" : " (or 's3.profile' asks for a file's profile)") +
      ", and profile '" + profile + "' ";
  std::ifstream in(file);
  if (file.empty() || !in) throw ConfigError(where + "has no credentials file ('" + file + "')");
  std::stringstream ss;
  ss << in.rdbuf();
  auto c = credentials_from_ini(ss.str(), profile);
  if (!c)
    throw ConfigError(where + "is not in '" + file +
                      "' with both aws_access_key_id and aws_secret_access_key");
  c->source = file + " [" + profile + "]";
  return *c;
}

std::string encode(const std::string& s, bool keep_slash) {
  std::string out;
  static const char* kHex = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::vector<std::string> xml_values(const std::string& xml, const std::string& tag) {
  std::vector<std::string> v;
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  for (size_t p = xml.find(open); p != std::string::npos; p = xml.find(open, p)) {
    p += open.size();
    const size_t e = xml.find(close, p);
    if (e == std::string::npos) break;
    v.push_back(decode_entities(xml.substr(p, e - p)));
    p = e + close.size();
  }
  return v;
}

std::string complete_body(const std::vector<std::string>& etags) {
  std::string b = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); i++)
    b += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags[i] +
         "</ETag></Part>";
  return b + "</CompleteMultipartUpload>";
}

Client::Client(Settings s, Credentials c, std::string bucket)
    : s_(std::move(s)), c_(std::move(c)), bucket_(std::move(bucket)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  multi_ = curl_multi_init();
  if (multi_ == nullptr) throw IoError("s3: curl_multi_init failed");
  rng_ = static_cast<uint64_t>(now_ns()) ^ (static_cast<uint64_t>(::getpid()) << 32);
}

Client::~Client() {
  cancel_all();
  for (void* e : idle_) curl_easy_cleanup(static_cast<CURL*>(e));
  curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

std::string Client::where(const std::string& key) const { return "s3://" + bucket_ + "/" + key; }

std::string Client::url_of(const Request& r) const {
  std::string base = s_.endpoint;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string url;
  if (s_.path_style) {
    url = base + "/" + bucket_;
  } else {
    const auto scheme = base.find("://");
    const size_t host = scheme == std::string::npos ? 0 : scheme + 3;
    url = base.substr(0, host) + bucket_ + "." + base.substr(host);
  }
  if (!r.key.empty()) url += "/" + encode(r.key, true);
  if (!r.query.empty()) url += "?" + r.query;
  return url;
}

void Client::start(Request& r) {
  r.attempts = 0;
  r.error.clear();
  launch(r);
}

void Client::launch(Request& r) {
  CURL* e;
  if (!idle_.empty()) {
    e = static_cast<CURL*>(idle_.back());
    idle_.pop_back();
    curl_easy_reset(e);
  } else {
    e = curl_easy_init();
    if (e == nullptr) throw IoError("s3: curl_easy_init failed");
  }
  r.easy = e;
  r.attempts++;
  r.sent = r.got = 0;
  r.status = 0;
  r.etag.clear();
  r.response.clear();
  r.content_length = 0;
  const std::string url = url_of(r);
  const std::string sigv4 = "aws:amz:" + s_.region + ":s3";
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(e, CURLOPT_USERNAME, c_.access_key.c_str());
  curl_easy_setopt(e, CURLOPT_PASSWORD, c_.secret_key.c_str());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  // CKPT_S3_TRACE=1: libcurl's trace of every request on stderr (headers with the signature and
  // the access key id; never the secret, which only feeds the signature).
  if (const char* t = std::getenv("CKPT_S3_TRACE"); t != nullptr && *t == '1')
    curl_easy_setopt(e, CURLOPT_VERBOSE, 1L);
  curl_easy_setopt(e, CURLOPT_PRIVATE, &r);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(s_.timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(s_.connect_timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &r);
  curl_slist* h = nullptr;
  // libcurl 7.88 signs host and x-amz-date only; S3 servers want the payload's hash declared.
  h = curl_slist_append(h, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  // An empty "Expect:" (no 100-continue) would be signed as an empty header by libcurl 7.88 and
  // refused: uploads keep the 100-continue exchange, as boto3's do.
  if (!c_.session_token.empty())
    h = curl_slist_append(h, ("x-amz-security-token: " + c_.session_token).c_str());
  if (r.ranged && r.into_len > 0)
    h = curl_slist_append(h, ("Range: bytes=" + std::to_string(r.range_off) + "-" +
                              std::to_string(r.range_off + r.into_len - 1))
                                 .c_str());
  switch (r.kind) {
    case Kind::put:
    case Kind::part:
      curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
      curl_easy_setopt(e, CURLOPT_READDATA, &r);
      curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
      curl_easy_setopt(e, CURLOPT_SEEKDATA, &r);
      curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body_len));
      break;
    case Kind::create_upload:
    case Kind::complete:
      curl_easy_setopt(e, CURLOPT_POST, 1L);
      // Never a null body: libcurl would read the request body from stdin.
      curl_easy_setopt(e, CURLOPT_POSTFIELDS,
                       r.body != nullptr ? reinterpret_cast<const char*>(r.body) : "");
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body_len));
      if (r.kind == Kind::complete) h = curl_slist_append(h, "Content-Type: application/xml");
      break;
    case Kind::abort:
    case Kind::del:
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
      break;
    case Kind::head:
      curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
      break;
    case Kind::get:
    case Kind::list:
      break;
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  r.headers = h;
  r.t0_ns = now_ns();
  const CURLMcode mc = curl_multi_add_handle(static_cast<CURLM*>(multi_), e);
  if (mc != CURLM_OK) {
    curl_slist_free_all(h);
    r.headers = nullptr;
    idle_.push_back(e);
    r.easy = nullptr;
    throw IoError("s3: curl_multi_add_handle: " + std::string(curl_multi_strerror(mc)));
  }
  inflight_.insert(&r);
  active_++;
}

void Client::finish(Request& r, int code) {
  CURL* e = static_cast<CURL*>(r.easy);
  const uint64_t dt = now_ns() - r.t0_ns;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
  curl_multi_remove_handle(static_cast<CURLM*>(multi_), e);
  curl_slist_free_all(static_cast<curl_slist*>(r.headers));
  r.headers = nullptr;
  idle_.push_back(e);
  r.easy = nullptr;
  inflight_.erase(&r);
  active_--;
  const bool short_get = code == CURLE_OK && r.into != nullptr && r.status >= 200 &&
                         r.status < 300 && r.got != r.into_len;
  const bool ok = code == CURLE_OK && r.status >= 200 && r.status < 300 && !short_get;
  if (ok) {
    if (rec_ != nullptr) rec_->request(r.kind, dt);
    ready_.push_back(&r);
    return;
  }
  const bool transient = (code != CURLE_OK && transient_curl(code)) ||
                         (code == CURLE_OK && transient_http(r.status)) || short_get;
  std::string why;
  if (code != CURLE_OK)
    why = curl_easy_strerror(static_cast<CURLcode>(code)) +
          std::string(code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST
                          ? " (endpoint " + s_.endpoint + ")"
                          : "");
  else if (short_get)
    why = "the answer held " + std::to_string(r.got) + " bytes, " + std::to_string(r.into_len) +
          " were asked";
  else
    why = http_error(r, s_, c_, bucket_);
  if (transient && r.attempts < s_.max_attempts) {
    if (rec_ != nullptr) {
      rec_->count(Counter::retries);
      if (r.status == 503 || r.status == 429) rec_->count(Counter::throttled);
    }
    const double cap = std::min(
        s_.backoff_max_s, s_.backoff_base_s * static_cast<double>(1u << std::min(r.attempts, 20u)));
    const double u = static_cast<double>(splitmix(rng_) >> 11) / static_cast<double>(1ULL << 53);
    r.due_s = now_s() + cap * u;  // full jitter
    delayed_.push_back(&r);
    return;
  }
  if (transient && (r.status == 503 || r.status == 429)) {
    if (rec_ != nullptr) rec_->count(Counter::throttled);
  }
  r.error = std::string(method_of(r.kind)) + " " + where(r.key) +
            (r.query.empty() ? "" : "?" + r.query.substr(0, r.query.find('=')) + "...") + ": " +
            why + (transient ? " (after " + std::to_string(r.attempts) + " attempts)" : "");
  ready_.push_back(&r);
}

void Client::wait(std::vector<Request*>& done) {
  auto* m = static_cast<CURLM*>(multi_);
  for (;;) {
    const double now = now_s();
    for (size_t n = delayed_.size(); n > 0; n--) {
      Request* r = delayed_.front();
      delayed_.pop_front();
      if (r->due_s <= now)
        launch(*r);
      else
        delayed_.push_back(r);
    }
    int running = 0;
    curl_multi_perform(m, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(m, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Request* r = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&r));
      finish(*r, msg->data.result);
    }
    if (!ready_.empty()) {
      done.insert(done.end(), ready_.begin(), ready_.end());
      ready_.clear();
      return;
    }
    if (active_ == 0 && delayed_.empty()) return;
    int timeout_ms = 1000;
    for (const Request* r : delayed_)
      timeout_ms = std::min(timeout_ms, std::max(0, static_cast<int>((r->due_s - now_s()) * 1000)));
    curl_multi_poll(m, nullptr, 0, timeout_ms, nullptr);
  }
}

void Client::run(Request& r) {
  start(r);
  std::vector<Request*> done, others;
  bool mine = false;
  while (!mine) {
    done.clear();
    wait(done);
    if (done.empty()) throw IoError("s3: request lost (internal error)");
    for (Request* d : done)
      if (d == &r)
        mine = true;
      else
        others.push_back(d);
  }
  // Someone else's: handed out by the next wait.
  ready_.insert(ready_.end(), others.begin(), others.end());
  if (!r.error.empty()) throw IoError("s3: " + r.error);
}

void Client::cancel_all() noexcept {
  auto* m = static_cast<CURLM*>(multi_);
  for (Request* r : delayed_) r->error = "cancelled";
  delayed_.clear();
  ready_.clear();
  // curl 7.88 has no curl_multi_get_handles: walk what launch() recorded instead.
  for (Request* r : inflight_) {
    if (r->easy == nullptr) continue;
    curl_multi_remove_handle(m, static_cast<CURL*>(r->easy));
    curl_slist_free_all(static_cast<curl_slist*>(r->headers));
    r->headers = nullptr;
    idle_.push_back(r->easy);
    r->easy = nullptr;
    r->error = "cancelled";
  }
  inflight_.clear();
  active_ = 0;
}

std::vector<std::string> list_keys(Client& c, const std::string& prefix) {
  std::vector<std::string> keys;
  for (auto& [k, size] : list_objects(c, prefix)) keys.push_back(std::move(k));
  return keys;
}

std::vector<std::pair<std::string, uint64_t>> list_objects(Client& c, const std::string& prefix) {
  std::vector<std::pair<std::string, uint64_t>> objs;
  std::string token;
  for (;;) {
    Request r;
    r.kind = Kind::list;
    r.query = (token.empty() ? "" : "continuation-token=" + encode(token, false) + "&") +
              "list-type=2&prefix=" + encode(prefix, false);
    c.run(r);
    auto keys = xml_values(r.response, "Key");
    const auto sizes = xml_values(r.response, "Size");
    if (sizes.size() != keys.size())
      throw IoError("s3: LIST " + c.where(prefix) + " answered " + std::to_string(keys.size()) +
                    " keys with " + std::to_string(sizes.size()) + " sizes");
    for (size_t i = 0; i < keys.size(); i++)
      objs.emplace_back(std::move(keys[i]), std::strtoull(sizes[i].c_str(), nullptr, 10));
    const auto trunc = xml_values(r.response, "IsTruncated");
    const auto next = xml_values(r.response, "NextContinuationToken");
    if (trunc.empty() || trunc[0] != "true" || next.empty()) break;
    token = next[0];
  }
  return objs;
}

std::vector<std::pair<std::string, std::string>> list_uploads(Client& c,
                                                              const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> ups;
  std::string key_marker, id_marker;
  for (;;) {
    Request r;
    r.kind = Kind::list;
    r.query = (key_marker.empty() ? "" : "key-marker=" + encode(key_marker, false) + "&") +
              "prefix=" + encode(prefix, false) +
              (id_marker.empty() ? "" : "&upload-id-marker=" + encode(id_marker, false)) +
              "&uploads=";
    c.run(r);
    // Each <Upload> holds a <Key> and an <UploadId>, in that order.
    const auto blocks = xml_values(r.response, "Upload");
    for (const auto& b : blocks) {
      const auto k = xml_values(b, "Key");
      const auto id = xml_values(b, "UploadId");
      if (!k.empty() && !id.empty()) ups.emplace_back(k[0], id[0]);
    }
    const auto trunc = xml_values(r.response, "IsTruncated");
    const auto nk = xml_values(r.response, "NextKeyMarker");
    const auto ni = xml_values(r.response, "NextUploadIdMarker");
    if (trunc.empty() || trunc[0] != "true" || nk.empty()) break;
    key_marker = nk[0];
    id_marker = ni.empty() ? "" : ni[0];
  }
  return ups;
}

std::pair<size_t, size_t> remove_prefix(Client& c, const std::string& prefix) {
  // Many requests at once (bounded), each checked.
  auto each = [&c](std::vector<Request>& reqs) {
    constexpr size_t kWindow = 32;
    size_t next = 0, busy = 0;
    std::vector<Request*> done;
    std::string first_error;
    while (next < reqs.size() || busy > 0) {
      while (next < reqs.size() && busy < kWindow) {
        c.start(reqs[next++]);
        busy++;
      }
      done.clear();
      c.wait(done);
      for (Request* r : done) {
        busy--;
        // Gone already (another cleaner, a retried DELETE): that is what was wanted.
        if (!r->error.empty() && r->status != 404 && first_error.empty()) first_error = r->error;
      }
    }
    if (!first_error.empty()) throw IoError("s3: " + first_error);
  };
  const auto ups = list_uploads(c, prefix);
  std::vector<Request> aborts(ups.size());
  for (size_t i = 0; i < ups.size(); i++) {
    aborts[i].kind = Kind::abort;
    aborts[i].key = ups[i].first;
    aborts[i].query = "uploadId=" + encode(ups[i].second, false);
  }
  each(aborts);
  const auto keys = list_keys(c, prefix);
  std::vector<Request> dels(keys.size());
  for (size_t i = 0; i < keys.size(); i++) {
    dels[i].kind = Kind::del;
    dels[i].key = keys[i];
  }
  each(dels);
  return {ups.size(), keys.size()};
}

}  // namespace ckpt::s3
