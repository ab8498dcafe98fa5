#include "analysis/atomic_file.hpp"

#include "sim/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace zerosim::analysis {

namespace fs = std::filesystem;

namespace {

/// Opens `target` for writing (truncating), runs `fill`, flushes; errors name `given` (what the user typed).
/// `cannot_open` says what an open failure means for this kind of target.
void write_to(const std::string& target, const std::string& given, const std::string& cannot_open,
              const std::function<void(std::ostream&)>& fill) {
  std::ofstream out(target, std::ios::binary | std::ios::trunc);
  if (!out)
    throw Error(given + ": " + cannot_open + ": " + std::strerror(errno));
  fill(out);
  out.flush();
  if (!out)
    throw Error(given + ": write failed");
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
