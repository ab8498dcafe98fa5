#include "analysis/atomic_file.hpp"

#include "sim/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <streambuf>

namespace zerosim::analysis {

namespace fs = std::filesystem;

namespace {

/// A write-only stream buffer on a file descriptor that keeps the errno of the first failed write(2), so that the
/// error can say why (ENOSPC, EDQUOT, EIO): std::ofstream only sets badbit and the errno is lost by the time the
/// stream is checked.
class FdWriteBuf : public std::streambuf {
 public:
  explicit FdWriteBuf(int fd) : fd_(fd) { setp(buf_.data(), buf_.data() + buf_.size()); }

  /// The errno of the first failed write(2), or 0.
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain())
      return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }

  int sync() override { return drain() ? 0 : -1; }

 private:
  /// Writes the buffered bytes out; false (and error_ set) on the first failed write(2).
  bool drain() {
    if (error_ != 0)
      return false;
    const char* p = pbase();
    while (p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<std::size_t>(pptr() - p));
      if (n < 0) {
        if (errno == EINTR)
          continue;
        error_ = errno;
        return false;
      }
      p += n;
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return true;
  }

  int fd_;
  int error_ = 0;
  std::array<char, 1 << 16> buf_{};
};

/// Opens `target` for writing (truncating), runs `fill`, flushes and closes; errors name `given` (what the user
/// typed) and the OS reason. `cannot_open` says what an open failure means for this kind of target.
void write_to(const std::string& target, const std::string& given, const std::string& cannot_open,
              const std::function<void(std::ostream&)>& fill) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0)
    throw Error(given + ": " + cannot_open + ": " + std::strerror(errno));
  FdWriteBuf buf(fd);
  std::ostream out(&buf);
  try {
    fill(out);
    out.flush();
  } catch (...) {
    ::close(fd);
    throw;
  }
  int err = out ? 0 : buf.error();
  bool failed = !out;
  // close(2) can report a write the kernel deferred (NFS, a quota).
  if (::close(fd) != 0 && !failed) {
    failed = true;
    err = errno;
  }
  if (failed)
    throw Error(given + ": write failed: " + (err != 0 ? std::strerror(err) : "the output stream failed"));
}

} // namespace

void write_file_atomic(const std::string& given, const std::function<void(std::ostream&)>& fill) {
  // A symlink is written through (its target is replaced, not the link); a path that is not a regular file
  // (/dev/stdout, a FIFO, a device) is written in place: renaming over it would replace the device node.
  std::error_code ec;
  const fs::path p(given);
  const std::string path = fs::is_symlink(p, ec) ? fs::weakly_canonical(p, ec).string() : given;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    if (fs::is_directory(path, ec))
      throw Error(given + ": is a directory");
    write_to(path, given, "cannot open for writing", fill);
    return;
  }
  const std::string tmp = path + ".tmp";
  try {
    write_to(tmp, given, "cannot write in its directory", fill);
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error(given + ": cannot replace it: " + std::strerror(errno));
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  write_file_atomic(path, [&](std::ostream& o) { o << content; });
}

} // namespace zerosim::analysis
