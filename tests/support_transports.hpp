// Transports for the phase driver's tests, standing where posix or io_uring stand under
// Backend::run (src/io/driver.cpp), so that what a test asserts is the driver's policy alone:
// which requests it issues in which order, when it syncs and closes, what it does on an error.
// - NullTransport accepts every request, moves no byte and records every call.
// - FaultTransport is a NullTransport whose Nth transfer fails with a chosen errno, at submit (a
//   synchronous transport: pwrite) or when it is reaped (an asynchronous one: io_uring).
// Test-only: the production transports are in src/io/backends/; nothing here is in ckptbench.
#pragma once
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/plan/transfer.hpp"

namespace ckpt_test {

// One call the driver made on a transport.
struct Call {
  enum class Kind {
    begin,
    open,
    size,
    submit,
    flush,
    reap,
    drain,
    transfer_file,
    sync,
    sync_all,
    close,
    abandon,
    end
  };
  static constexpr size_t kNoFile = SIZE_MAX;
  Kind kind = Kind::begin;
  size_t file = kNoFile;
  uint64_t offset = 0, len = 0;  // submit
  int fd = -1;                   // open: the descriptor the driver created (-1: none)
  std::vector<size_t> files;     // sync_all

  static Call of(Kind k, size_t i = kNoFile) {
    Call c;
    c.kind = k;
    c.file = i;
    return c;
  }
};

// Accepts every request and does nothing with it. open keeps the descriptor the driver created
// (a transport owns it) and close or abandon closes it; size is the plan's file size (or
// `size_of`); a transfer completes when it is reaped: reap hands back every queued one, oldest
// first, or with `newest_first` only the newest (completions out of submission order, as
// io_uring may give them). transfer_file (caps.whole_file) walks the file's transfers through
// the data path as a whole-file transport would.
class NullTransport : public ckpt::Backend {
 public:
  using Kind = Call::Kind;
  explicit NullTransport(ckpt::TransportCaps caps = {}) : caps_(caps) {}
  ~NullTransport() override { close_held(); }

  std::vector<Call> calls;
  bool newest_first = false;
  std::function<uint64_t(size_t)> size_of;  // size(i) when set

  ckpt::TransportCaps caps(const ckpt::PhaseContext&) const override { return caps_; }
  void begin(ckpt::PhaseContext& ctx) override {
    close_held();
    queued_.clear();
    dir_ = ctx.dir;
    files_ = &ctx.io->files;
    held_.assign(files_->size(), -1);
    record(Kind::begin);
  }
  void end(ckpt::PhaseContext&) noexcept override { record(Kind::end); }
  void open(ckpt::PhaseContext&, size_t i, int created_fd) override {
    Call c = Call::of(Kind::open, i);
    c.fd = created_fd;
    calls.push_back(c);
    held_[i] = created_fd;
  }
  uint64_t size(size_t i) override {
    record(Kind::size, i);
    return size_of ? size_of(i) : (*files_)[i].size;
  }
  void submit(size_t i, unsigned slot, uint64_t offset, uint64_t len, std::byte*) override {
    Call c = Call::of(Kind::submit, i);
    c.offset = offset;
    c.len = len;
    calls.push_back(c);
    queued_.push_back(slot);
  }
  void flush() override { record(Kind::flush); }
  void reap(std::vector<unsigned>& done) override {
    record(Kind::reap);
    if (newest_first) {
      done.push_back(queued_.back());
      queued_.pop_back();
      return;
    }
    done.insert(done.end(), queued_.begin(), queued_.end());
    queued_.clear();
  }
  void drain() noexcept override {
    record(Kind::drain);
    queued_.clear();
  }
  void transfer_file(ckpt::PhaseContext& ctx, size_t i) override {
    record(Kind::transfer_file, i);
    const ckpt::FileSpec& f = (*files_)[i];
    ckpt::TransferCursor c(f, ctx.cfg->block_size, ctx.cfg->transfer,
                           ctx.phase == ckpt::Phase::restore);
    ckpt::Transfer t;
    while (c.next(t)) {
      if (ctx.phase == ckpt::Phase::save)
        ctx.data->produce(f, t, ctx.pool->at(0));
      else
        ctx.data->consume(f, t, ctx.pool->at(0));
      ctx.rec->op(t.len, 0);
    }
  }
  void sync(size_t i) override { record(Kind::sync, i); }
  void sync_all(const std::vector<size_t>& files) override {
    Call c = Call::of(Kind::sync_all);
    c.files = files;
    calls.push_back(c);
  }
  void close(size_t i) override {
    record(Kind::close, i);
    close_fd(i);
  }
  void abandon() noexcept override {
    record(Kind::abandon);
    close_held();
  }
  nlohmann::json describe() const override { return {{"transport", "null"}}; }

  // The calls of one kind, in order.
  std::vector<Call> of(Kind k) const {
    std::vector<Call> v;
    for (const auto& c : calls)
      if (c.kind == k) v.push_back(c);
    return v;
  }
  // (offset, len) of every submit of file i, in order.
  std::vector<std::pair<uint64_t, uint64_t>> submits_of(size_t i) const {
    std::vector<std::pair<uint64_t, uint64_t>> v;
    for (const auto& c : calls)
      if (c.kind == Kind::submit && c.file == i) v.emplace_back(c.offset, c.len);
    return v;
  }
  // The position in `calls` of the first (last: `last`) call of kind k on file i; -1: none.
  long position(Kind k, size_t i, bool last = false) const {
    long at = -1;
    for (size_t n = 0; n < calls.size(); n++)
      if (calls[n].kind == k && calls[n].file == i) {
        at = static_cast<long>(n);
        if (!last) break;
      }
    return at;
  }

 protected:
  void record(Kind k, size_t i = Call::kNoFile) { calls.push_back(Call::of(k, i)); }
  std::string path(size_t i) const { return dir_ + "/" + (*files_)[i].path; }
  std::deque<unsigned> queued_;

 private:
  void close_fd(size_t i) {
    if (held_[i] >= 0) ::close(held_[i]);
    held_[i] = -1;
  }
  void close_held() noexcept {
    for (size_t i = 0; i < held_.size(); i++) close_fd(i);
  }
  ckpt::TransportCaps caps_;
  std::string dir_;
  const std::vector<ckpt::FileSpec>* files_ = nullptr;
  std::vector<int> held_;
};

// A NullTransport whose `fail_at`-th transfer of the phase (1-based, counted over every file)
// fails with `err`: at its submit, or with `at_reap` when it is reaped. The message is a real
// transport's ("write '<path>' offset O length L: <errno text>").
class FaultTransport : public NullTransport {
 public:
  FaultTransport(uint64_t fail_at, int err, bool at_reap = false, ckpt::TransportCaps caps = {})
      : NullTransport(caps), fail_at_(fail_at), err_(err), at_reap_(at_reap) {}

  void begin(ckpt::PhaseContext& ctx) override {
    save_ = ctx.phase == ckpt::Phase::save;
    submitted_ = 0;
    failing_slot_ = -1;
    NullTransport::begin(ctx);
  }
  void submit(size_t i, unsigned slot, uint64_t offset, uint64_t len, std::byte* data) override {
    if (++submitted_ == fail_at_) {
      if (!at_reap_) fail(i, offset, len);
      failing_slot_ = static_cast<long>(slot);
      failing_ = {i, offset, len};
    }
    NullTransport::submit(i, slot, offset, len, data);
  }
  void reap(std::vector<unsigned>& done) override {
    if (failing_slot_ >= 0)
      for (unsigned s : queued_)
        if (static_cast<long>(s) == failing_slot_) {
          record(Kind::reap);
          fail(failing_.file, failing_.offset, failing_.len);
        }
    NullTransport::reap(done);
  }

 private:
  struct Where {
    size_t file = 0;
    uint64_t offset = 0, len = 0;
  };
  [[noreturn]] void fail(size_t i, uint64_t offset, uint64_t len) {
    ckpt::throw_errno(std::string(save_ ? "write" : "read") + " '" + path(i) + "' offset " +
                          std::to_string(offset) + " length " + std::to_string(len),
                      err_);
  }
  uint64_t fail_at_;
  int err_;
  bool at_reap_;
  bool save_ = true;
  uint64_t submitted_ = 0;
  long failing_slot_ = -1;
  Where failing_;
};

}  // namespace ckpt_test
