#include "analysis/atomic_file.hpp"

#include "sim/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace zerosim::analysis {

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& fill) {
  const std::string tmp = path + ".tmp";
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out)
        throw Error(path + ": cannot open '" + tmp + "' for writing: " + std::strerror(errno));
      fill(out);
      out.flush();
      if (!out)
        throw Error(path + ": write failed");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error(path + ": cannot rename '" + tmp + "': " + std::strerror(errno));
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  write_file_atomic(path, [&](std::ostream& o) { o << content; });
}

} // namespace zerosim::analysis
