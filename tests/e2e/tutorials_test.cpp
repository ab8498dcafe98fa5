// Executable documentation: every command in docs/tutorials/*.md, docs/zero-stages.md and docs/sweeps-and-planning.md
// is run, and every quoted output is compared with what the command prints now, so the tutorials cannot go stale.
//
// Conventions (stated at the top of each tutorial, docs/tutorials/README.md):
//  - A command is a line of a ```sh block that starts with `zerosim ` (zerosim = ./build/apps/zerosim, run from the
//    repository root). A line `<!-- picture: SRC docs/images/NAME.png -->` outside the blocks (invisible on the
//    rendered page) is a copy of a picture that `zerosim plot` drew, made by the test, never by a reader: a reader
//    who runs the page from a checkout keeps the repository's pictures. Every picture a page of docs/ or README.md
//    shows (`![...](.../images/NAME.png)`) must be the copy of such a line in one of the tested pages, and every file
//    in docs/images/ must be shown, so no picture is drawn by hand or left stale. In docs/tutorials/
//    every other non-comment line of a ```sh block is an error; docs/zero-stages.md may also hold shell loops, which
//    are skipped (the loop runs the same scenarios as its `zerosim` lines; tests/e2e/teaching_test.cpp runs them).
//  - A trailing `# exits N` comment states the expected exit status (default 0).
//  - A ```text block is a quoted output of the last command above it, compared with that command's stdout; when the
//    line before the block (blank lines skipped) is `<!-- file: PATH -->` it is compared with that file instead
//    (PATH relative to the working directory, e.g. a result.json the command wrote). A line `...` elides output:
//    the pieces between elisions must appear in the output in this order, each as whole consecutive lines (trailing
//    blanks ignored).
//  - Commands run in a fresh temporary working directory that holds a `scenarios` link to the repository's
//    scenarios/ and an empty docs/images/, so `out/...` and copied pictures never touch the source tree.
//  - A ```yaml block whose first line is `# NAME.yaml` (a bare file name) is a scenario file the reader saves: it is
//    written as NAME.yaml into the working directory before the commands run (docs/sweeps-and-planning.md).
//
// ZEROSIM_UPDATE_DOCS=1 (scripts/update-docs.sh) turns the comparison into a rewrite: each piece of each quoted
// block is replaced by as many output lines, starting at the output line equal to the piece's first line (so every
// piece must start with a line that does not change, e.g. a table header), the markdown file is written back, and
// the pictures the `<!-- picture: -->` lines produced are copied into the repository's docs/images/.
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRepo = ZEROSIM_DATA_DIR;

/// One command line of a ```sh block.
struct Command {
  std::size_t line = 0; ///< 1-based line in the markdown file
  std::vector<std::string> argv; ///< words after quote removal, argv[0] = "zerosim", or "cp" for a picture line
  int expected_status = 0; ///< from a trailing `# exits N`
  std::string text; ///< the line as written
};

/// One ```text block and the command it quotes.
struct Quote {
  std::size_t first_line = 0; ///< 1-based line of the first quoted line (after the fence)
  std::size_t n_lines = 0;
  int command = -1; ///< index into Doc::commands
  std::string file; ///< "" = the command's stdout, else a file relative to the working directory
};

struct Doc {
  std::vector<std::string> lines;
  std::vector<Command> commands;
  std::vector<Quote> quotes;
  std::vector<std::pair<std::string, std::string>> files; ///< ```yaml blocks headed `# NAME.yaml`: name, text
  int skipped = 0; ///< lenient mode: sh lines that are not commands
};

std::string rtrim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.pop_back();
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  return b == std::string::npos ? std::string() : rtrim(s.substr(b));
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string l;
  while (std::getline(ss, l))
    out.push_back(rtrim(l));
  return out;
}

/// Splits a command line into words: blanks separate, '...' and "..." quote, an unquoted # starts a comment
/// (returned in `comment`). Throws on an unterminated quote or shell syntax the test does not run ($, `, |, ;, &, <,
/// >, \).
std::vector<std::string> split_words(const std::string& line, std::string& comment) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\'' || c == '"') {
      const auto end = line.find(c, i + 1);
      if (end == std::string::npos)
        throw std::runtime_error("unterminated quote");
      cur += line.substr(i + 1, end - i - 1);
      in_word = true;
      i = end;
    } else if (c == ' ' || c == '\t') {
      if (in_word)
        words.push_back(cur);
      cur.clear();
      in_word = false;
    } else if (c == '#' && !in_word) {
      comment = line.substr(i + 1);
      break;
    } else if (std::string("$`|;&<>\\").find(c) != std::string::npos) {
      throw std::runtime_error(std::string("shell syntax '") + c + "' is not supported in a tutorial command");
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word)
    words.push_back(cur);
  return words;
}

/// The status a trailing comment states ("exits N"), else 0.
int expected_status(const std::string& comment) {
  const auto p = comment.find("exits ");
  if (p == std::string::npos)
    return 0;
  return std::atoi(comment.c_str() + p + 6);
}

/// Parses a tutorial. `strict`: every non-comment line of a ```sh block must be a command.
Doc parse_doc(const fs::path& path, bool strict) {
  Doc d;
  d.lines = split_lines(zerosim::test::slurp(path));
  REQUIRE_FALSE(d.lines.empty());
  std::string fence; // info string of the open block, "" when outside
  std::size_t block_start = 0;
  for (std::size_t i = 0; i < d.lines.size(); ++i) {
    const std::string t = trim(d.lines[i]);
    if (t.rfind("```", 0) == 0) {
      if (fence.empty()) {
        fence = t.size() > 3 ? t.substr(3) : std::string("plain");
        block_start = i + 1;
      } else {
        if (fence == "text") {
          Quote q;
          q.first_line = block_start + 1;
          q.n_lines = i - block_start;
          q.command = static_cast<int>(d.commands.size()) - 1;
          std::size_t k = block_start - 1; // the fence line
          while (k > 0 && trim(d.lines[k - 1]).empty())
            --k;
          const std::string marker = k > 0 ? trim(d.lines[k - 1]) : std::string();
          if (marker.rfind("<!-- file:", 0) == 0 && marker.size() > 14)
            q.file = trim(marker.substr(10, marker.size() - 10 - 3));
          INFO(path.string() << ":" << block_start << ": a ```text block must follow a command");
          REQUIRE(q.command >= 0);
          d.quotes.push_back(q);
        } else if (fence == "yaml" && i > block_start) {
          const std::string head = trim(d.lines[block_start]);
          const std::string name = head.size() > 2 ? trim(head.substr(1)) : std::string();
          if (head.rfind("# ", 0) == 0 && name.size() > 5 && name.compare(name.size() - 5, 5, ".yaml") == 0 &&
              name.find_first_of("/\\ \t") == std::string::npos) {
            std::string text;
            for (std::size_t k = block_start; k < i; ++k)
              text += d.lines[k] + "\n";
            d.files.emplace_back(name, text);
          }
        }
        fence.clear();
      }
      continue;
    }
    if (fence.empty() && t.rfind("<!-- picture:", 0) == 0) {
      // A picture the page shows, as a copy the update run makes (not a command the reader runs).
      Command c;
      c.line = i + 1;
      c.text = t;
      std::string comment;
      const std::string inner = t.substr(13, t.size() >= 16 ? t.size() - 13 - 3 : 0);
      c.argv = split_words("cp " + trim(inner), comment);
      INFO(path.string() << ":" << i + 1 << ": expected <!-- picture: out/.../NAME.png docs/images/NAME.png -->");
      REQUIRE(t.size() >= 16);
      REQUIRE(t.compare(t.size() - 3, 3, "-->") == 0);
      REQUIRE(c.argv.size() == 3);
      REQUIRE(c.argv[2].rfind("docs/images/", 0) == 0);
      d.commands.push_back(c);
      continue;
    }
    if (fence != "sh" || t.empty() || t[0] == '#')
      continue;
    const bool is_cmd = t.rfind("zerosim ", 0) == 0;
    if (!is_cmd) {
      INFO(path.string() << ":" << i + 1 << ": a ```sh line that is not a `zerosim` command: " << t);
      CHECK_FALSE(strict);
      ++d.skipped;
      continue;
    }
    Command c;
    c.line = i + 1;
    c.text = t;
    std::string comment;
    try {
      c.argv = split_words(t, comment);
    } catch (const std::exception& e) {
      FAIL(path.string() << ":" << i + 1 << ": " << e.what() << ": " << t);
    }
    c.expected_status = expected_status(comment);
    d.commands.push_back(c);
  }
  INFO(path.string() << ": unterminated ``` block");
  CHECK(fence.empty());
  return d;
}

/// The pieces of a quoted block, split at `...` lines.
std::vector<std::vector<std::string>> pieces(const Doc& d, const Quote& q) {
  std::vector<std::vector<std::string>> out(1);
  for (std::size_t k = 0; k < q.n_lines; ++k) {
    const std::string& l = d.lines[q.first_line - 1 + k];
    if (trim(l) == "...")
      out.emplace_back();
    else
      out.back().push_back(l);
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const auto& p) { return p.empty(); }), out.end());
  return out;
}

/// Index in `hay` at or after `from` where the lines of `piece` appear consecutively, or npos.
std::size_t find_piece(const std::vector<std::string>& hay, const std::vector<std::string>& piece, std::size_t from) {
  for (std::size_t i = from; i + piece.size() <= hay.size(); ++i)
    if (std::equal(piece.begin(), piece.end(), hay.begin() + static_cast<std::ptrdiff_t>(i)))
      return i;
  return std::string::npos;
}

/// A line with every decimal number (digits '.' digits) replaced by '#' and blank runs collapsed: the anchor of a
/// quoted piece in update mode, so that "zero.stage=2   0.2367 s" still finds its row when the time moves.
std::string shape(const std::string& line) {
  std::string out;
  for (std::size_t i = 0; i < line.size();) {
    if (std::isdigit(static_cast<unsigned char>(line[i]))) {
      std::size_t j = i;
      while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j])))
        ++j;
      if (j + 1 < line.size() && line[j] == '.' && std::isdigit(static_cast<unsigned char>(line[j + 1]))) {
        ++j;
        while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j])))
          ++j;
        out += '#';
      } else {
        out.append(line, i, j - i);
      }
      i = j;
    } else if (line[i] == ' ' || line[i] == '\t') {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
        ++i;
      out += ' ';
    } else {
      out += line[i++];
    }
  }
  return out;
}

bool update_mode() {
  const char* e = std::getenv("ZEROSIM_UPDATE_DOCS");
  return e != nullptr && std::string(e) == "1";
}

/// Runs every command of docs/REL, checks exit statuses and quoted outputs (or rewrites them in update mode).
void check_tutorial(const std::string& rel, bool strict) {
  const fs::path md = kRepo / rel;
  Doc d = parse_doc(md, strict);
  REQUIRE_FALSE(d.commands.empty());
  const zerosim::test::TempDir tmp("tutorial");
  const fs::path work = tmp.path() / "work";
  fs::create_directories(work / "docs" / "images");
  fs::create_directory_symlink(kRepo / "scenarios", work / "scenarios");
  for (const auto& [name, text] : d.files)
    std::ofstream(work / name) << text;

  std::vector<std::string> outputs(d.commands.size());
  for (std::size_t i = 0; i < d.commands.size(); ++i) {
    const Command& c = d.commands[i];
    INFO(rel << ":" << c.line << ": " << c.text);
    if (c.argv.front() == "cp") {
      REQUIRE(c.argv.size() == 3);
      std::error_code ec;
      fs::copy_file(work / c.argv[1], work / c.argv[2], fs::copy_options::overwrite_existing, ec);
      INFO("cp failed: " << ec.message());
      CHECK_FALSE(ec);
      continue;
    }
    // Runs with `work` as the working directory; stdout/stderr are captured in work/stdout.txt, work/stderr.txt.
    const zerosim::test::Outcome r =
        zerosim::test::run_zerosim(work, std::vector<std::string>(c.argv.begin() + 1, c.argv.end()));
    INFO("stderr:\n" << r.err);
    CHECK(r.status == c.expected_status);
    outputs[i] = r.out;
  }

  bool changed = false;
  for (const Quote& q : d.quotes) {
    const Command& c = d.commands[static_cast<std::size_t>(q.command)];
    const std::string src =
        q.file.empty() ? outputs[static_cast<std::size_t>(q.command)] : zerosim::test::slurp(work / q.file);
    const std::vector<std::string> hay = split_lines(src);
    INFO(rel << ":" << q.first_line << ": the ```text block quoting the output of line " << c.line << " (" << c.text
             << ")" << (q.file.empty() ? std::string() : ", file " + q.file)
             << "\nactual output (first 6000 characters):\n"
             << src.substr(0, 6000));
    if (!update_mode()) {
      std::size_t at = 0;
      for (const auto& p : pieces(d, q)) {
        const std::size_t found = find_piece(hay, p, at);
        INFO("quoted lines not found (in order) in the output:\n"
             << [&] {
                  std::string s;
                  for (const auto& l : p)
                    s += l + "\n";
                  return s;
                }());
        CHECK(found != std::string::npos);
        if (found != std::string::npos)
          at = found + p.size();
      }
      continue;
    }
    // Update: re-anchor every piece at its first line.
    std::size_t k = q.first_line - 1, end = k + q.n_lines, at = 0;
    while (k < end) {
      if (trim(d.lines[k]) == "...") {
        ++k;
        continue;
      }
      std::size_t n = 0;
      while (k + n < end && trim(d.lines[k + n]) != "...")
        ++n;
      std::size_t a = at; // the same line, else the first line of the same shape
      while (a < hay.size() && hay[a] != d.lines[k])
        ++a;
      if (a >= hay.size()) {
        a = at;
        while (a < hay.size() && shape(hay[a]) != shape(d.lines[k]))
          ++a;
      }
      INFO("update: anchor line not found in the output: " << d.lines[k]);
      REQUIRE(a + n <= hay.size());
      for (std::size_t j = 0; j < n; ++j) {
        changed = changed || d.lines[k + j] != hay[a + j];
        d.lines[k + j] = hay[a + j];
      }
      at = a + n;
      k += n;
    }
  }
  if (update_mode()) {
    if (changed) {
      std::ofstream o(md);
      for (const auto& l : d.lines)
        o << l << "\n";
    }
    for (const auto& e : fs::directory_iterator(work / "docs" / "images"))
      fs::copy_file(e.path(), kRepo / "docs" / "images" / e.path().filename(), fs::copy_options::overwrite_existing);
  }
}

const std::vector<std::string>& tutorials() {
  static const std::vector<std::string> t{"docs/tutorials/zero-stages-at-scale.md", "docs/tutorials/overlap.md",
                                          "docs/tutorials/offload.md", "docs/tutorials/perfetto.md"};
  return t;
}

/// Every page whose commands a test below runs (and whose `<!-- picture: -->` lines it copies).
std::vector<std::string> tested_pages() {
  std::vector<std::string> p = tutorials();
  p.push_back("docs/zero-stages.md");
  p.push_back("docs/sweeps-and-planning.md");
  return p;
}

/// The pictures a markdown page shows: the targets of its `![alt](TARGET)` links that are files of the repository
/// (no URL), each as a path relative to the repository root and the 1-based line that shows it.
std::vector<std::pair<std::string, std::size_t>> shown_pictures(const fs::path& md) {
  std::vector<std::pair<std::string, std::size_t>> out;
  const std::vector<std::string> lines = split_lines(zerosim::test::slurp(md));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    for (std::size_t at = lines[i].find("!["); at != std::string::npos; at = lines[i].find("![", at + 2)) {
      const auto open = lines[i].find("](", at);
      const auto close = open == std::string::npos ? open : lines[i].find(')', open);
      if (close == std::string::npos)
        continue;
      const std::string target = lines[i].substr(open + 2, close - open - 2);
      if (target.find("://") != std::string::npos)
        continue;
      const fs::path p = (md.parent_path() / target).lexically_normal().lexically_relative(kRepo);
      out.emplace_back(p.generic_string(), i + 1);
    }
  }
  return out;
}

} // namespace

TEST_CASE("tutorials: every docs/tutorials/*.md is one of the tested tutorials", "[e2e]") {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(kRepo / "docs" / "tutorials"))
    if (e.path().extension() == ".md" && e.path().filename() != "README.md")
      found.push_back("docs/tutorials/" + e.path().filename().string());
  std::sort(found.begin(), found.end());
  std::vector<std::string> want = tutorials();
  std::sort(want.begin(), want.end());
  CHECK(found == want);
}

TEST_CASE("tutorials: every picture the docs show is drawn by a picture line of a tested page", "[e2e]") {
  // The copies the update run makes (scripts/update-docs.sh): DST of every `<!-- picture: SRC DST -->` line.
  std::vector<std::string> drawn;
  for (const auto& page : tested_pages())
    for (const Command& c : parse_doc(kRepo / page, false).commands)
      if (c.argv.front() == "cp")
        drawn.push_back(c.argv[2]);
  std::sort(drawn.begin(), drawn.end());
  INFO("a picture drawn by two picture lines");
  CHECK(std::adjacent_find(drawn.begin(), drawn.end()) == drawn.end());

  std::vector<fs::path> pages{kRepo / "README.md"};
  for (const auto& e : fs::recursive_directory_iterator(kRepo / "docs"))
    if (e.path().extension() == ".md")
      pages.push_back(e.path());
  std::vector<std::string> shown;
  for (const auto& md : pages) {
    for (const auto& [pic, line] : shown_pictures(md)) {
      INFO(md.lexically_relative(kRepo).generic_string()
           << ":" << line << ": shows " << pic << ", which no `<!-- picture: SRC " << pic
           << " -->` line of a tested page draws (add one after the `zerosim plot` that draws it)");
      CHECK(std::binary_search(drawn.begin(), drawn.end(), pic));
      shown.push_back(pic);
    }
  }
  std::sort(shown.begin(), shown.end());
  for (const auto& e : fs::directory_iterator(kRepo / "docs" / "images")) {
    const std::string rel = "docs/images/" + e.path().filename().string();
    INFO(rel << " is shown by no page of docs/ or README.md (remove it)");
    CHECK(std::binary_search(shown.begin(), shown.end(), rel));
  }
  for (const auto& pic : drawn) {
    INFO(pic << " is drawn by a picture line but shown by no page");
    CHECK(std::binary_search(shown.begin(), shown.end(), pic));
  }
}

TEST_CASE("tutorials: the quote checker finds ordered pieces and rejects a stale line", "[e2e]") {
  const std::vector<std::string> out{"head", "a 1", "b 2", "c 3", "tail"};
  CHECK(find_piece(out, {"a 1", "b 2"}, 0) == 1);
  CHECK(find_piece(out, {"a 1", "c 3"}, 0) == std::string::npos); // not consecutive
  CHECK(find_piece(out, {"a 1"}, 2) == std::string::npos); // before the previous piece
  CHECK(find_piece(out, {"b 2 "}, 0) == std::string::npos); // whole lines only (callers rtrim both sides)
  std::string comment;
  CHECK(split_words("zerosim run a.yaml --set 'x=1 2'   # exits 1", comment) ==
        std::vector<std::string>{"zerosim", "run", "a.yaml", "--set", "x=1 2"});
  CHECK(expected_status(comment) == 1);
  CHECK_THROWS_WITH(split_words("zerosim run $f", comment), Catch::Contains("shell syntax"));
  CHECK(shape("zero.stage=2       0.2367   12.5 GiB") == shape("zero.stage=2      10.2400   12.6 GiB"));
  CHECK(shape("zero.stage=2   0.2367") != shape("zero.stage=3   0.2367"));
}

TEST_CASE("tutorials: zero-stages-at-scale.md runs as written", "[e2e]") {
  check_tutorial("docs/tutorials/zero-stages-at-scale.md", true);
}

TEST_CASE("tutorials: overlap.md runs as written", "[e2e]") { check_tutorial("docs/tutorials/overlap.md", true); }

TEST_CASE("tutorials: offload.md runs as written", "[e2e]") { check_tutorial("docs/tutorials/offload.md", true); }

TEST_CASE("tutorials: perfetto.md runs as written", "[e2e]") { check_tutorial("docs/tutorials/perfetto.md", true); }

TEST_CASE("tutorials: zero-stages.md runs as written", "[e2e]") { check_tutorial("docs/zero-stages.md", false); }

TEST_CASE("tutorials: sweeps-and-planning.md runs as written", "[e2e]") {
  check_tutorial("docs/sweeps-and-planning.md", true);
}
