// An output directory held by one zerosim process at a time (run, sweep): a second process writing into the same
// --out would interleave result files, the sweep journal and summary.json.
#pragma once

#include "sim/error.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace zerosim::cli {

/// Exit status of a run or sweep that found its output directory in use by another zerosim process: EX_TEMPFAIL of
/// <sysexits.h> ("try again later"), so a script can tell it from bad input (2) and retry.
constexpr int kExitOutputBusy = 75;

/// The output directory is held by another zerosim process (OutputLock); main exits kExitOutputBusy.
class OutputBusy : public Error {
 public:
  using Error::Error;
};

/// Exclusive advisory lock (flock(2)) on the directory itself, held for the object's lifetime. Nothing is written
/// into the directory, and the kernel drops the lock when the process ends, however it ends, so a killed run leaves
/// no stale lock. On a file system without flock support the directory is used unguarded. Throws OutputBusy
/// "<dir>: in use by another zerosim run or sweep; wait for it to finish or choose another --out" when another
/// process holds it, or zerosim::Error "<dir>: cannot lock the output directory: <reason>".
class OutputLock {
 public:
  explicit OutputLock(const std::filesystem::path& dir) {
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0)
      throw Error(dir.string() + ": cannot lock the output directory: " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK)
        throw OutputBusy(dir.string() +
                         ": in use by another zerosim run or sweep; wait for it to finish or choose "
                         "another --out");
      // A file system without flock (some network mounts: ENOLCK, EOPNOTSUPP) runs unguarded rather than not at all.
      if (err != ENOLCK && err != EOPNOTSUPP && err != EINVAL)
        throw Error(dir.string() + ": cannot lock the output directory: " + std::strerror(err));
    }
  }
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock() {
    if (fd_ >= 0)
      ::close(fd_); // closing the descriptor releases the lock
  }

 private:
  int fd_ = -1;
};

} // namespace zerosim::cli
