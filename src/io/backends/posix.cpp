// POSIX backend: open/pwrite/pread/fsync/close, one synchronous transfer at a time — the way
// torch.save and most framework checkpointers do it. The reference path for the others.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/driver.hpp"

namespace ckpt {

namespace {

class PosixBackend final : public Backend {
 public:
  explicit PosixBackend(const PointConfig& cfg) : cfg_(cfg) {}

  TransportCaps caps(const PhaseContext&) const override { return TransportCaps{}; }

  void begin(PhaseContext& ctx) override {
    ctx_ = &ctx;
    files_.reset(ctx.io->files.size());
    done_.clear();
  }

  void end(PhaseContext&) noexcept override { ctx_ = nullptr; }

  void open(PhaseContext& ctx, size_t i, int created_fd) override {
    files_.open(ctx, i, created_fd);
  }

  uint64_t size(size_t i) override { return files_.size(i); }

  // One synchronous transfer, resuming short ones: complete when submit returns.
  void submit(size_t i, unsigned slot, uint64_t off, uint64_t len, std::byte* buf) override {
    pio_all(files_.fd(i), ctx_->phase == Phase::save, buf, off, len, files_.path(i), ctx_->rec);
    done_.push_back(slot);
  }

  void reap(std::vector<unsigned>& done) override {
    done.insert(done.end(), done_.begin(), done_.end());
    done_.clear();
  }

  void sync(size_t i) override { files_.fsync(i); }
  void close(size_t i) override { files_.close(i, *ctx_->rec); }
  void abandon() noexcept override { files_.close_all(); }

  nlohmann::json describe() const override {
    return {{"api", "open/pwrite/pread/fsync/close"},
            {"transfers_in_flight", 1},
            {"o_direct", cfg_.direct},
            {"sync_call", "fsync"}};
  }

 private:
  const PointConfig& cfg_;
  PhaseContext* ctx_ = nullptr;
  FdFiles files_;
  std::vector<unsigned> done_;
};

}  // namespace

BackendFactory posix_backend() {
  BackendFactory f;
  f.name = "posix";
  f.description = "open/pwrite/pread/fsync/close, one synchronous transfer at a time";
  f.probe = [] { return std::string(); };
  f.validate = [](const PointConfig& p) {
    // No options: the empty table rejects any key in the "posix" section.
    static const OptionTable<int> none;
    none.parse(p.backend_options, "posix");
    // queue_depth is accepted so that sweeps can cross it with backends; posix always keeps
    // one transfer in flight, and the report says so (transfers_in_flight: 1).
  };
  f.create = [](const PointConfig& p) -> std::unique_ptr<Backend> {
    return std::make_unique<PosixBackend>(p);
  };
  return f;
}

}  // namespace ckpt
