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
//  - A number in the prose or a hand table followed by `<!-- value: EXPR -->` must read as EXPR does, evaluated on the
//    files the page's commands wrote and printed with the number's decimals (evaluate(), format_like()). A line
//    `<!-- run: zerosim ... -->` is a command the numbers need that the page does not show (it never heads a ```text
//    block), and `<!-- value-dir NAME = PATH -->` names a run directory for the expressions. The convention for
//    contributors is in docs/tutorials/README.md.
//
// ZEROSIM_UPDATE_DOCS=1 (scripts/update-docs.sh) turns the comparison into a rewrite: each piece of each quoted
// block is replaced by as many output lines, starting at the output line equal to the piece's first line (so every
// piece must start with a line that does not change, e.g. a table header), the markdown file is written back, and
// the pictures the `<!-- picture: -->` lines produced are copied into the repository's docs/images/; each marked
// number is rewritten from its expression at its printed precision (the sentence around it is left to the reviewer).
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
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
  bool hidden = false; ///< a `<!-- run: -->` line: never the command a ```text block quotes
  std::string text; ///< the line as written
};

/// One ```text block and the command it quotes.
struct Quote {
  std::size_t first_line = 0; ///< 1-based line of the first quoted line (after the fence)
  std::size_t n_lines = 0;
  int command = -1; ///< index into Doc::commands
  std::string file; ///< "" = the command's stdout, else a file relative to the working directory
};

/// One `NUMBER<!-- value: EXPR -->` marker in the prose: the number it follows and the expression it must equal.
struct Value {
  std::size_t line = 0; ///< 1-based line in the markdown file
  std::size_t number_at = 0; ///< 0-based column of the number (of its sign '-', '+' or '−', if it has one)
  std::size_t number_len = 0;
  std::string number; ///< as printed, e.g. "8,965", "0.1851" or "+7.6"
  std::string expr; ///< the expression, e.g. "out/teaching/stages-one-gpu/stage-2:summary.step_time_s"
};

struct Doc {
  std::vector<std::string> lines;
  std::vector<Command> commands;
  std::vector<Quote> quotes;
  std::vector<Value> values;
  std::map<std::string, std::string> value_dirs; ///< `<!-- value-dir NAME = PATH -->`: NAME stands for PATH
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

/// U+2212 MINUS SIGN in UTF-8, which some pages print instead of '-'.
const std::string kMinusSign = "\xE2\x88\x92";

/// The `NUMBER<!-- value: EXPR -->` markers of one line: each takes the last number before it on the line (after the
/// previous marker), so a unit may stand between them ("0.1851 s<!-- value: ... -->"). Throws on a marker with no
/// number before it or no closing "-->".
std::vector<Value> find_values(const std::string& line, std::size_t lineno) {
  static const std::string kOpen = "<!-- value:";
  static const std::regex kNumber(R"((?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?)");
  std::vector<Value> out;
  std::size_t from = 0;
  for (std::size_t at = line.find(kOpen); at != std::string::npos; at = line.find(kOpen, from)) {
    const std::size_t close = line.find("-->", at);
    if (close == std::string::npos)
      throw std::runtime_error("a <!-- value: --> marker without its closing -->");
    Value v;
    v.line = lineno;
    v.expr = trim(line.substr(at + kOpen.size(), close - at - kOpen.size()));
    const std::string before = line.substr(from, at - from);
    std::smatch last;
    for (auto it = std::sregex_iterator(before.begin(), before.end(), kNumber); it != std::sregex_iterator(); ++it)
      last = *it;
    if (last.empty())
      throw std::runtime_error("no number before the marker <!-- value: " + v.expr + " -->");
    v.number_at = from + static_cast<std::size_t>(last.position(0));
    v.number_len = static_cast<std::size_t>(last.length(0));
    // A sign ('-', '+' or U+2212 '−') right before the digits, itself after a blank, '(' or the line's start, is
    // part of the number, so that a rewrite replaces it (a value turning negative reads "-7.6", not "+-7.6").
    for (const std::string& sign : {std::string("-"), std::string("+"), kMinusSign}) {
      const std::size_t n = sign.size();
      if (v.number_at >= n && line.compare(v.number_at - n, n, sign) == 0 &&
          (v.number_at == n || line[v.number_at - n - 1] == ' ' || line[v.number_at - n - 1] == '(')) {
        v.number_at -= n;
        v.number_len += n;
        break;
      }
    }
    v.number = line.substr(v.number_at, v.number_len);
    out.push_back(v);
    from = close + 3;
  }
  return out;
}

/// The value of a marker's expression, evaluated against the files the page's commands wrote under `work`: blank-
/// separated tokens (operators and parentheses are tokens of their own), + - * / and ( ), decimal constants, the
/// units GiB MiB KiB (2^30, 2^20, 2^10) and GB MB (1e9, 1e6), and references PATH:FIELD, where PATH is a file
/// relative to `work` (a directory means its result.json; a first component that `dirs` names stands for its path)
/// and FIELD a dotted path into its JSON (`name[2]` indexes a list), e.g.
/// `out/teaching/stages-one-gpu/stage-2:summary.breakdown.backward_s * 1000`. Throws on anything else, a missing file
/// or field, a malformed index, or a field that is not a number.
double evaluate(const std::string& expr, const fs::path& work, const std::map<std::string, std::string>& dirs = {}) {
  std::vector<std::string> tok;
  {
    std::stringstream ss(expr);
    for (std::string w; ss >> w;)
      tok.push_back(w);
  }
  std::size_t k = 0;
  const auto fail = [&](const std::string& why) -> double {
    throw std::runtime_error("value expression '" + expr + "': " + why);
  };
  const auto reference = [&](const std::string& ref) -> double {
    const auto colon = ref.find(':');
    std::string rel = ref.substr(0, colon);
    const auto slash = rel.find('/');
    if (const auto d = dirs.find(rel.substr(0, slash)); d != dirs.end())
      rel = d->second + (slash == std::string::npos ? std::string() : rel.substr(slash));
    fs::path file = work / rel;
    if (fs::is_directory(file))
      file /= "result.json";
    if (!fs::is_regular_file(file))
      return fail("no file " + file.lexically_relative(work).generic_string() + " (did a command above write it?)");
    nlohmann::json j = nlohmann::json::parse(zerosim::test::slurp(file));
    std::stringstream path(ref.substr(colon + 1));
    for (std::string part; std::getline(path, part, '.');) {
      const auto bracket = part.find('[');
      const std::string key = part.substr(0, bracket);
      if (!key.empty()) {
        if (!j.is_object() || !j.contains(key))
          return fail("no field '" + key + "' in " + ref);
        j = j.at(key);
      }
      for (std::size_t b = bracket; b != std::string::npos;) {
        // "[DIGITS]", then the next '[' or the part's end: "name[x]", "name[2" or "name[2]x" is an error.
        const std::size_t close = part.find(']', b);
        const std::string digits = close == std::string::npos ? std::string() : part.substr(b + 1, close - b - 1);
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
            (close + 1 < part.size() && part[close + 1] != '['))
          return fail("bad index '" + part.substr(b) + "' in " + ref + " (expected [N], N a whole number)");
        const std::size_t n = std::stoul(digits);
        b = close + 1 < part.size() ? close + 1 : std::string::npos;
        if (!j.is_array() || n >= j.size())
          return fail("no element [" + std::to_string(n) + "] in " + ref);
        j = j.at(n);
      }
    }
    if (j.is_boolean())
      return j.get<bool>() ? 1.0 : 0.0;
    if (!j.is_number())
      return fail(ref + " is not a number: " + j.dump());
    return j.get<double>();
  };
  std::function<double()> sum;
  const std::function<double()> factor = [&]() -> double {
    if (k >= tok.size())
      return fail("ends too early");
    const std::string t = tok[k++];
    static const std::map<std::string, double> kUnits{{"GiB", 1073741824.0},
                                                      {"MiB", 1048576.0},
                                                      {"KiB", 1024.0},
                                                      {"GB", 1e9},
                                                      {"MB", 1e6}};
    if (t == "(") {
      const double v = sum();
      if (k >= tok.size() || tok[k] != ")")
        return fail("missing ')'");
      ++k;
      return v;
    }
    if (t == "-")
      return -factor();
    if (kUnits.count(t) != 0)
      return kUnits.at(t);
    if (t.find(':') != std::string::npos)
      return reference(t);
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (end == t.c_str() || *end != '\0')
      return fail("unknown token '" + t + "'");
    return v;
  };
  const auto product = [&]() -> double {
    double v = factor();
    while (k < tok.size() && (tok[k] == "*" || tok[k] == "/")) {
      const bool mul = tok[k++] == "*";
      const double r = factor();
      v = mul ? v * r : v / r;
    }
    return v;
  };
  sum = [&]() -> double {
    double v = product();
    while (k < tok.size() && (tok[k] == "+" || tok[k] == "-")) {
      const bool add = tok[k++] == "+";
      const double r = product();
      v = add ? v + r : v - r;
    }
    return v;
  };
  const double v = sum();
  if (k != tok.size())
    return fail("unexpected token '" + tok[k] + "'");
  return v;
}

/// `value` printed as `like` is: the same number of decimals, thousands separated by ',' when `like` has one, a '+'
/// before a value >= 0 when `like` starts with '+', and a negative value's sign as `like`'s ('−' or '-').
std::string format_like(double value, const std::string& like) {
  const auto dot = like.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(like.size() - dot - 1);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string s = buf;
  if (s == "-0" || (s.rfind("-0.", 0) == 0 && s.find_first_not_of("-0.") == std::string::npos))
    s.erase(0, 1); // no "-0.00"
  if (like.find(',') != std::string::npos) {
    const std::size_t sign = s[0] == '-' ? 1 : 0;
    std::size_t int_end = s.find('.');
    if (int_end == std::string::npos)
      int_end = s.size();
    for (std::size_t p = int_end; p > sign + 3; p -= 3)
      s.insert(p - 3, ",");
  }
  if (s[0] == '-' && like.rfind(kMinusSign, 0) == 0)
    s.replace(0, 1, kMinusSign);
  else if (s[0] != '-' && like[0] == '+')
    s.insert(0, "+");
  return s;
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
          while (q.command >= 0 && d.commands[static_cast<std::size_t>(q.command)].hidden)
            --q.command;
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
    if (fence.empty() && t.rfind("<!-- value-dir ", 0) == 0) {
      // `<!-- value-dir NAME = PATH -->`: a short name for a run directory in the page's value expressions.
      std::stringstream ss(t.substr(15));
      std::string name, eq, dir, close;
      ss >> name >> eq >> dir >> close;
      INFO(path.string() << ":" << i + 1 << ": expected <!-- value-dir NAME = PATH -->");
      REQUIRE(eq == "=");
      REQUIRE(close == "-->");
      REQUIRE(d.value_dirs.count(name) == 0);
      d.value_dirs[name] = dir;
      continue;
    }
    if (fence.empty() && t.rfind("<!-- run:", 0) == 0) {
      // A command the page's marked values need but does not show in a ```sh block (it runs in order, as one).
      Command c;
      c.line = i + 1;
      c.text = t;
      std::string comment;
      INFO(path.string() << ":" << i + 1 << ": expected <!-- run: zerosim ... -->");
      REQUIRE(t.size() >= 12);
      REQUIRE(t.compare(t.size() - 3, 3, "-->") == 0);
      try {
        c.argv = split_words(trim(t.substr(9, t.size() - 9 - 3)), comment);
      } catch (const std::exception& e) {
        FAIL(path.string() << ":" << i + 1 << ": " << e.what() << ": " << t);
      }
      REQUIRE_FALSE(c.argv.empty());
      REQUIRE(c.argv.front() == "zerosim");
      c.expected_status = expected_status(comment);
      c.hidden = true;
      d.commands.push_back(c);
      continue;
    }
    if (fence.empty()) {
      try {
        for (Value& v : find_values(d.lines[i], i + 1))
          d.values.push_back(std::move(v));
      } catch (const std::exception& e) {
        FAIL(path.string() << ":" << i + 1 << ": " << e.what());
      }
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

/// Checks every marked value of `d` against the files its commands wrote under `work`: the expression, printed with
/// the number's decimals, must read as the number does. In update mode the number is rewritten instead (in
/// d.lines); returns whether a line changed.
bool check_values(const std::string& rel, Doc& d, const fs::path& work) {
  bool changed = false;
  // Right to left, so that a rewrite does not move the columns of the markers still to do on its line.
  for (auto it = d.values.rbegin(); it != d.values.rend(); ++it) {
    const Value& v = *it;
    INFO(rel << ":" << v.line << ": " << v.number << " <!-- value: " << v.expr << " -->");
    double x = 0;
    try {
      x = evaluate(v.expr, work, d.value_dirs);
    } catch (const std::exception& e) {
      FAIL(e.what());
    }
    const std::string now = format_like(x, v.number);
    INFO("the page says " << v.number << ", the expression gives " << x << " (" << now
                          << " as printed); ./scripts/update-docs.sh rewrites it: review the sentence around it");
    if (update_mode()) {
      std::string& line = d.lines[v.line - 1];
      REQUIRE(line.compare(v.number_at, v.number_len, v.number) == 0);
      if (now != v.number) {
        line.replace(v.number_at, v.number_len, now);
        changed = true;
      }
    } else {
      CHECK(now == v.number);
    }
  }
  return changed;
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
  changed = check_values(rel, d, work) || changed;
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

TEST_CASE("tutorials: a marked prose number is read, evaluated and compared at its printed precision", "[e2e]") {
  const auto v = find_values("step 0.1851 s<!-- value: a:x -->, 8,965 tokens/s (-7.5 %<!-- value: a:y * 100 -->)", 3);
  REQUIRE(v.size() == 2);
  CHECK(v[0].number == "0.1851");
  CHECK(v[0].expr == "a:x");
  CHECK(v[1].number == "-7.5"); // the last number before the marker, after the previous marker
  CHECK(v[1].line == 3);
  CHECK_THROWS_WITH(find_values("no number <!-- value: a:x -->", 1), Catch::Contains("no number"));
  CHECK_THROWS_WITH(find_values("1.0 <!-- value: a:x", 1), Catch::Contains("closing"));
  // A '+' or '−' sign is part of the number too (after a blank or '('), so that a rewrite replaces it.
  const auto s =
      find_values("(+7.6<!-- value: a:x --> %), " + kMinusSign + "0.63 %<!-- value: a:y -->, a+2<!-- value: a:z -->",
                  1);
  REQUIRE(s.size() == 3);
  CHECK(s[0].number == "+7.6");
  CHECK(s[0].number_at == 1);
  CHECK(s[1].number == kMinusSign + "0.63");
  CHECK(s[2].number == "2"); // not a sign: the '+' follows a letter

  const zerosim::test::TempDir tmp("tutorial-values");
  fs::create_directories(tmp.path() / "out" / "v");
  std::ofstream(tmp.path() / "out" / "v" / "result.json")
      << R"({"summary": {"t": 0.25, "b": 3221225472, "l": [1, 4], "ok": true, "s": "x"}})";
  // Hand values: (0.25 + 4) * 1000 = 4250; 3221225472 B / 2^30 = 3 GiB.
  CHECK(evaluate("( out/v:summary.t + out/v:summary.l[1] ) * 1000", tmp.path()) == Approx(4250));
  CHECK(evaluate("out/v/result.json:summary.b / GiB", tmp.path()) == Approx(3));
  CHECK(evaluate("- out/v:summary.ok - 2", tmp.path()) == Approx(-3));
  CHECK(evaluate("V:summary.t + W/result.json:summary.t", tmp.path(), {{"V", "out/v"}, {"W", "out/v"}}) == Approx(0.5));
  CHECK_THROWS_WITH(evaluate("out/v:summary.s", tmp.path()), Catch::Contains("not a number"));
  CHECK_THROWS_WITH(evaluate("out/v:summary.missing", tmp.path()), Catch::Contains("no field 'missing'"));
  CHECK_THROWS_WITH(evaluate("out/w:summary.t", tmp.path()), Catch::Contains("no file out/w ("));
  CHECK_THROWS_WITH(evaluate("out/v:summary.t 2", tmp.path()), Catch::Contains("unexpected token '2'"));
  // A malformed index is an error, not element 0.
  CHECK_THROWS_WITH(evaluate("out/v:summary.l[x]", tmp.path()), Catch::Contains("bad index '[x]'"));
  CHECK_THROWS_WITH(evaluate("out/v:summary.l[1", tmp.path()), Catch::Contains("bad index '[1'"));
  CHECK_THROWS_WITH(evaluate("out/v:summary.l[]", tmp.path()), Catch::Contains("bad index"));
  CHECK_THROWS_WITH(evaluate("out/v:summary.l[-1]", tmp.path()), Catch::Contains("bad index"));
  CHECK_THROWS_WITH(evaluate("out/v:summary.l[1]x", tmp.path()), Catch::Contains("bad index"));
  CHECK_THROWS_WITH(evaluate("out/v:summary.l[2]", tmp.path()), Catch::Contains("no element [2]"));

  CHECK(format_like(0.18509, "0.1851") == "0.1851");
  CHECK(format_like(0.03662, "0.0318") == "0.0366"); // a stale number reads differently
  CHECK(format_like(8964.6, "8,965") == "8,965");
  CHECK(format_like(1234567.0, "1,000") == "1,234,567");
  CHECK(format_like(-0.004, "0.00") == "0.00");
  CHECK(format_like(5.5, "6") == "6");
  // Signs: an explicit '+' stays on a value >= 0 and gives way to '-' when the value turns negative; '−' stays '−'.
  CHECK(format_like(7.64, "+7.6") == "+7.6");
  CHECK(format_like(-7.64, "+7.6") == "-7.6");
  CHECK(format_like(0.0, "+7.6") == "+0.0");
  CHECK(format_like(-0.632, kMinusSign + "0.63") == kMinusSign + "0.63");
  CHECK(format_like(0.632, kMinusSign + "0.63") == "0.63");
  CHECK(format_like(-1234.0, "-1,000") == "-1,234");
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
