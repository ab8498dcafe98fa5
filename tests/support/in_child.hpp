// Test support: run a function in a forked child process and get back the double it returns. SimGrid allows one
// simulation per process (simgrid_notes.md), so a test case that compares two simulations runs each in a child.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

namespace zerosim::test {

/// Runs `f` (returning double) in a forked child and returns its value; -1 if `f` threw or the child died before
/// reporting. Throws std::runtime_error if the pipe or the fork cannot be created.
template <class F>
double in_child(F f) {
  int fd[2];
  if (pipe(fd) != 0)
    throw std::runtime_error("in_child: pipe failed");
  const pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error("in_child: fork failed");
  if (pid == 0) {
    close(fd[0]);
    double v = -1;
    try {
      v = f();
    } catch (...) {
      v = -1;
    }
    const ssize_t w = write(fd[1], &v, sizeof v);
    _exit(w == static_cast<ssize_t>(sizeof v) ? 0 : 1);
  }
  close(fd[1]);
  double v = -1;
  const ssize_t got = read(fd[0], &v, sizeof v);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got == static_cast<ssize_t>(sizeof v) ? v : -1;
}

} // namespace zerosim::test
