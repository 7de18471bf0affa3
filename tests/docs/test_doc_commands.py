"""Every shell command shown in README.md and docs/*.md names things that exist (issue 27).

What counts as a command:
- the lines of fenced code blocks marked sh/bash/shell/console, and of unmarked blocks whose first
  line starts like a command (make, a nanobpf tool, a path to a program, or one of EXTERNAL_COMMANDS;
  diagrams and sample output are left alone); where a block has `$ ` prompts, only those lines
  (the rest is output); `\\` and indented lines continue the command above;
- inline `code` spans that start with `make `, with a nanobpf tool (`nanobpf-load ...`,
  `nanobpfctl ...`, `build/host/nanobpfctl ...`) or with a path to a program followed by arguments.
Doc notation is understood: `[...]` marks optional arguments, `<name>`, `N`, `...` are placeholders.

What is checked:
- `make TARGET [VAR=value ...]`: TARGET is listed by `make help`; VAR is a variable the top-level
  Makefile uses; FIRMWARE, BLOCK, BOARD and CORES values name a firmware program, a cocotb folder, a
  board and a number; no `|` pipes a make command into a word that is not a program (write
  alternatives as separate commands);
- `nanobpf-*`/`nanobpfctl*`: a console script of sw/python/pyproject.toml's [project.scripts] (the
  Python tools), or one of BUILT_TOOLS (programs built from C/C++ or Rust by a Makefile), at a path where
  that Makefile puts it when the doc gives one;
- every path in the command that starts with one of REPO_DIRS exists;
- docs/build.md's table of tools lists every console script and built tool, and nothing else.

Run from the repository root: build/venv/bin/python -m pytest tests/docs
"""
import fnmatch
import functools
import glob
import re
import shlex
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# README.md, docs/ and the READMEs of the folders (boards, constraints, eBPF examples)
DOC_FILES = (["README.md"] + sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))
             + sorted(str(p.relative_to(ROOT)) for d in ("boards", "constraints", "sw")
                      for p in (ROOT / d).rglob("README.md")))

# Directories of the repository: a command's argument starting with one of them must exist.
REPO_DIRS = ("sw/", "hw/", "firmware/", "sim/", "tests/", "boards/", "constraints/", "docs/")

# Programs built from C/C++ or Rust sources, not Python console scripts: name -> (the Makefile that builds
# it, the folders it is built into, as globs).
BUILT_TOOLS = {
    "nanobpf-run": ("sw/tools/Makefile (make ebpf-tools, make firmware)", ["build/ebpf/host", "build/ebpf/rv64"]),
    "nanobpf-fuzz": ("sw/tools/Makefile (make ebpf-tools)", ["build/ebpf/rv64"]),
    "nanobpfctl": ("sw/tools/Makefile (make host-tools)", ["build/host"]),
    "nanobpfctl-static": ("sw/tools/Makefile (make host-tools)", ["build/host"]),
    "nanobpfctl-mock": ("sw/tools/Makefile (make host-tools)", ["build/host"]),
    "nanobpf-sim": ("the top-level Makefile (make sim: Verilator, sim/verilator/main.cpp)", ["build/sim/soc-*"]),
    "nanobpf-board-sim": ("the top-level Makefile (make board-sim-model: Verilator, sim/verilator/board_main.cpp)",
                          ["build/sim/board-*"]),
    "nanobpf-quinn": ("the top-level Makefile (make quinn: cargo, sw/quic-offload)", ["build/rust/*/release"]),
}
# Where a Python console script may be called from by path (the venv's bin).
SCRIPT_DIRS = ["build/venv/bin"]

# Commands outside the project that start a command block (an unmarked block starting with anything
# else is taken for a diagram or output).
EXTERNAL_COMMANDS = {"clang", "tshark", "python", "python3", "pytest", "sudo", "cd", "bash", "sh",
                     "ip", "iperf3", "openFPGALoader", "vivado", "git", "qemu-system-x86_64", "modprobe",
                     "insmod", "rmmod", "gtkwave", "wireshark"}
SHELL_LANGS = {"sh", "bash", "shell", "console", "zsh", ""}
TOOL_RE = re.compile(r"^nanobpf(-[a-z0-9][a-z0-9-]*|ctl[a-z0-9-]*)$")
PLACEHOLDER_RE = re.compile(r"^(<[^>]*>|\.\.\.|[A-Z][A-Z0-9_-]*)$")  # <app>, ..., N, FILE


@dataclass
class Command:
    file: str
    line: int
    text: str
    where: str  # "block" or "inline"

    def at(self):
        return f"{self.file}:{self.line}: `{self.text}`"


# ------------------------------------------------------------------ extraction

def _words(text):
    """The command's words, comments dropped (shlex; a plain split where quoting does not parse)."""
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split("#", 1)[0].split()


def _head(words):
    """The words from the command word on: past `$`, sudo, env and VAR=value assignments."""
    i = 0
    while i < len(words) and (words[i] in ("$", "sudo", "env") or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i])):
        i += 1
    return words[i:]


def _is_program_path(word):
    return word.startswith(("./", "build/") + REPO_DIRS) and not word.endswith("/")


def _starts_command(text):
    """Does this line start like a command (for unmarked blocks and inline spans)?"""
    words = _head(_words(text.lstrip("$ ").strip()))
    if not words:
        return False
    w = words[0]
    if w.endswith(":"):  # `nanobpf-sim: PASS ...`: output
        return False
    return (w == "make" or TOOL_RE.match(Path(w).name) is not None or _is_program_path(w)
            or w in EXTERNAL_COMMANDS)


def _block_commands(file, first_line, lines, lang):
    """Commands of one fenced block: `lines` are its content lines, the first at `first_line`."""
    body = [(first_line + i, ln) for i, ln in enumerate(lines)]
    nonblank = [(n, ln) for n, ln in body if ln.strip() and not ln.lstrip().startswith("#")]
    if not nonblank:
        return []
    if lang == "" and not _starts_command(nonblank[0][1]):
        return []  # a diagram or output
    prompts = [(n, ln) for n, ln in body if ln.lstrip().startswith("$ ")]
    if prompts or lang == "console":
        return [Command(file, n, ln.lstrip()[2:].strip(), "block") for n, ln in prompts]
    cmds = []
    base_indent = len(nonblank[0][1]) - len(nonblank[0][1].lstrip())
    continued = False
    for n, ln in body:
        stripped = ln.strip()
        if not stripped or stripped.startswith("#"):
            continued = False
            continue
        indent = len(ln) - len(ln.lstrip())
        if cmds and (continued or indent > base_indent):
            cmds[-1].text += " " + stripped.rstrip("\\").strip()
        else:
            cmds.append(Command(file, n, stripped.rstrip("\\").strip(), "block"))
        continued = stripped.endswith("\\")
    return cmds


def _inline_is_command(span):
    words = _words(span)
    if not words or words[0].endswith(":"):
        return False
    w = words[0]
    if w == "make":
        return True
    if TOOL_RE.match(Path(w).name):
        return True
    return _is_program_path(w) and len(words) > 1  # a path followed by arguments


def extract(file, text):
    """Every command in a Markdown text (`file` names it in messages)."""
    lines = text.splitlines()
    cmds = []
    prose = []  # the lines outside fenced blocks (blanked inside them, to keep line numbers)
    fence = None
    for i, ln in enumerate(lines):
        m = re.match(r"^\s*(```+|~~~+)\s*([^\s`]*)", ln)
        if fence is None and m:
            fence, lang, start, content = m.group(1), m.group(2).lower(), i + 2, []
            prose.append("")
            continue
        if fence is not None:
            if ln.strip().startswith(fence) and ln.strip().strip(fence[0]) == "":
                if lang in SHELL_LANGS:
                    cmds += _block_commands(file, start, content, lang)
                fence = None
            else:
                content.append(ln)
            prose.append("")
            continue
        prose.append(ln)
    joined = "\n".join(prose)
    for m in re.finditer(r"(?<!`)(`+)(?!`)((?:(?!\n\s*\n).)+?)(?<!`)\1(?!`)", joined, re.S):
        span = m.group(2).replace("\n", " ").strip().replace("\\|", "|")  # `\|` in a table cell
        if _inline_is_command(span):
            cmds.append(Command(file, joined.count("\n", 0, m.start()) + 1, span, "inline"))
    return sorted(cmds, key=lambda c: c.line)


# ------------------------------------------------------------------ what exists

@functools.lru_cache(maxsize=None)
def make_help():
    """(targets, variables) of `make -s help` at the repository root."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, f"make -s help failed:\n{out.stdout}{out.stderr}"
    targets = set(re.findall(r"^\s*make\s+(\S+)\s", out.stdout, re.M))
    variables = set()
    for line in out.stdout.splitlines():
        if line.strip().startswith("variables:"):
            variables |= set(re.findall(r"\b([A-Z_][A-Z0-9_]*)=", line))
    assert targets, f"make -s help listed no `make TARGET` lines:\n{out.stdout}"
    return frozenset(targets), frozenset(variables)


def _variables_of(makefile):
    """Variables a Makefile sets or reads: `VAR ?=`, `VAR :=`, `$(VAR)`, `${VAR}`, `$(origin VAR)`
    (also nested: `$(or $(RUNS),5)`, `$(if $(QUIC),...)`)."""
    text = makefile.read_text()
    names = set(re.findall(r"^\s*(?:export\s+|override\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:\?|:|::|\+)?=", text, re.M))
    names |= set(re.findall(r"\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]", text))
    names |= set(re.findall(r"\$\((?:origin|flavor|value)\s+([A-Za-z_][A-Za-z0-9_]*)\)", text))
    return names


@functools.lru_cache(maxsize=None)
def makefile_variables():
    """Variables of the top-level Makefile (and those `make help` names)."""
    return frozenset(_variables_of(ROOT / "Makefile") | make_help()[1])


@functools.lru_cache(maxsize=None)
def sub_makefile(folder):
    """(targets, variables) of FOLDER/Makefile, read from its rules (for `make -C FOLDER`)."""
    text = (ROOT / folder / "Makefile").read_text()
    targets = set()
    for m in re.finditer(r"^([A-Za-z0-9_.%/$() -]+?)\s*::?(?![=])", text, re.M):
        targets |= {t for t in m.group(1).split() if "$" not in t and "%" not in t}
    return frozenset(targets), frozenset(_variables_of(ROOT / folder / "Makefile"))


@functools.lru_cache(maxsize=None)
def console_scripts():
    """[project.scripts] of sw/python/pyproject.toml: the Python tools."""
    data = tomllib.loads((ROOT / "sw/python/pyproject.toml").read_text())
    return frozenset(data["project"]["scripts"])


@functools.lru_cache(maxsize=None)
def firmware_programs():
    """Names `make run FIRMWARE=...` accepts: the APPS, VARIANTS and EBPF_APPS of firmware/Makefile,
    and the folders of firmware/apps."""
    text = (ROOT / "firmware/Makefile").read_text().replace("\\\n", " ")
    names = set()
    for m in re.finditer(r"^(APPS|VARIANTS|EBPF_APPS)\s*[:?+]?=(.*)$", text, re.M):
        names |= set(m.group(2).split())
    names |= {p.name for p in (ROOT / "firmware/apps").iterdir() if p.is_dir() and p.name != "common"}
    return frozenset(names)


# ------------------------------------------------------------------ checks

def _placeholder(value):
    return PLACEHOLDER_RE.match(value) is not None


def _expand(path):
    """Glob patterns for a path written with placeholders (`<block>`, `{a,b}`, `*`)."""
    path = re.sub(r"<[^>]*>", "*", path)
    m = re.search(r"\{([^{}]*)\}", path)
    if m:
        return [p for alt in m.group(1).split(",") for p in _expand(path[:m.start()] + alt + path[m.end():])]
    return [path]


def _path_exists(path):
    for pattern in _expand(path):
        if any(c in pattern for c in "*?["):
            if glob.glob(str(ROOT / pattern)):
                return True
        elif (ROOT / pattern).exists():
            return True
    return False


def _paths(words):
    """The words that name repository files: `-Isw/x`, `--opt=sw/x`, `VAR=sw/x` included."""
    for w in words:
        w = w.strip("[](),;:'\"`")
        w = re.sub(r"^(-[IL]|--?[A-Za-z][\w-]*=|[A-Za-z_][A-Za-z0-9_]*=)", "", w)
        if w.startswith(REPO_DIRS):
            yield w


def check_paths(cmd, words):
    problems = []
    for p in _paths(words):
        if not _path_exists(p):
            problems.append(f"{cmd.at()}: {p} does not exist")
    return problems


def check_tool(cmd, word):
    name = Path(word).name
    folder = str(Path(word).parent) if "/" in word else None
    if name in BUILT_TOOLS:
        makefile, dirs = BUILT_TOOLS[name]
        if folder and not any(fnmatch.fnmatch(folder, d) for d in dirs):
            return [f"{cmd.at()}: {name} is built into {', '.join(dirs)} by {makefile}, not {folder}"]
        return []
    if name not in console_scripts():
        return [f"{cmd.at()}: {name} is neither a console script of sw/python/pyproject.toml [project.scripts] "
                f"nor a built tool ({', '.join(sorted(BUILT_TOOLS))})"]
    if folder and folder not in SCRIPT_DIRS:
        return [f"{cmd.at()}: {name} is a Python console script: call it as {name} (in {', '.join(SCRIPT_DIRS)}), "
                f"not from {folder}"]
    return []


def check_make(cmd, words):
    targets, _ = make_help()
    variables = makefile_variables()
    problems = []
    rest = [w.strip("[]") for w in words[1:]]
    top = True  # the top-level Makefile (not make -C FOLDER)
    if rest[:1] == ["-C"] or rest[:1] and rest[0].startswith("-C") and len(rest[0]) > 2:
        folder = rest[1] if rest[0] == "-C" else rest[0][2:]
        rest = rest[2:] if rest[0] == "-C" else rest[1:]
        if not (ROOT / folder / "Makefile").is_file():
            return [f"{cmd.at()}: make -C {folder}: no {folder}/Makefile"]
        targets, variables = sub_makefile(folder)
        top = False
    i = 0
    while i < len(rest):
        w = rest[i]
        i += 1
        if not w or w == "...":
            continue
        if w in ("|", "||"):
            after = rest[i] if i < len(rest) else ""
            if not (shutil.which(after) or after in EXTERNAL_COMMANDS or _starts_command(after)):
                problems.append(f"{cmd.at()}: `|` pipes make into `{after}`, which is not a program "
                                "(write alternatives as separate commands)")
            break
        if w in ("&&", ";"):
            break
        if w.startswith("-"):
            if w.startswith(("-C", "-f")):
                return [f"{cmd.at()}: `make {w}` after other arguments is not understood by this test: "
                        "write `make -C FOLDER ...` first"]
            continue
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", w)
        if m:
            var, value = m.groups()
            if var not in variables:
                problems.append(f"{cmd.at()}: {var}= is not a variable of the top-level Makefile")
            elif top and value and not _placeholder(value):
                if var == "FIRMWARE" and value not in firmware_programs():
                    problems.append(f"{cmd.at()}: FIRMWARE={value}: no such firmware program "
                                    "(firmware/Makefile APPS, VARIANTS, EBPF_APPS)")
                elif var == "BLOCK" and not glob.glob(str(ROOT / "sim/cocotb" / value / "test_*.py")):
                    problems.append(f"{cmd.at()}: BLOCK={value}: no cocotb folder sim/cocotb/{value}/test_*.py")
                elif var == "BOARD" and not (ROOT / "boards" / value).is_dir():
                    problems.append(f"{cmd.at()}: BOARD={value}: no folder boards/{value}")
                elif var in ("CORES", "BOARD_CORES") and not value.isdigit():
                    problems.append(f"{cmd.at()}: {var}={value} is not a number")
            continue
        if _placeholder(w):
            continue
        if w not in targets:
            problems.append(f"{cmd.at()}: `{w}` is not a target listed by `make help`")
    return problems


def check(cmd):
    """The problems of one command (an empty list when it is fine)."""
    words = [w for w in _words(cmd.text) if w]
    head = _head(words)
    if not head:
        return []
    problems = check_paths(cmd, words)
    first = head[0]
    if first == "make":
        problems += check_make(cmd, head)
    elif TOOL_RE.match(Path(first).name):
        problems += check_tool(cmd, first)
    return problems


def doc_commands(file):
    return extract(file, (ROOT / file).read_text())


# ------------------------------------------------------------------ tests

@pytest.mark.parametrize("doc", DOC_FILES)
def test_doc_commands(doc):
    problems = [p for cmd in doc_commands(doc) for p in check(cmd)]
    assert not problems, f"{len(problems)} command(s) in {doc} name something that does not exist:\n" + "\n".join(problems)


def test_commands_found():
    """The extraction sees the commands (a change of doc style must not silently check nothing)."""
    cmds = [c for doc in DOC_FILES for c in doc_commands(doc)]
    makes = [c for c in cmds if _head(_words(c.text))[:1] == ["make"]]
    blocks = [c for c in cmds if c.where == "block"]
    assert len(makes) >= 30 and len(blocks) >= 5, (len(makes), len(blocks))
    assert any(c.file == "README.md" and c.text.startswith("make demo") and c.where == "block" for c in cmds)


BAD_DOC = """\
# A doc with wrong commands

Run `make no-such-target CORES=1` or `make run FIRMWARE=no_such_app NO_SUCH_VAR=1`, and
`make test-block BLOCK=pisa_parser | pisa_deparser`.

```
make help
nanobpf-no-such-tool --x sw/no/such/file.c
build/host/nanobpf-run --jit
sw/tools/nanobpf-gone
```

```
core0 -> make believe (a diagram)
```

```console
$ nanobpfctl dev show
nanobpf-missing: output, not a command
```
"""


def test_checks_fail_on_wrong_commands():
    """The checks report what is wrong, with file:line and the command."""
    cmds = extract("bad.md", BAD_DOC)
    assert [c.text.split()[0] for c in cmds] == ["make", "make", "make", "make", "nanobpf-no-such-tool",
                                                 "build/host/nanobpf-run", "sw/tools/nanobpf-gone",
                                                 "nanobpfctl"]
    problems = "\n".join(p for c in cmds for p in check(c))
    assert "bad.md:3: `make no-such-target CORES=1`: `no-such-target` is not a target" in problems
    assert "FIRMWARE=no_such_app: no such firmware program" in problems
    assert "NO_SUCH_VAR= is not a variable of the top-level Makefile" in problems
    assert "`|` pipes make into `pisa_deparser`" in problems
    assert "bad.md:8: `nanobpf-no-such-tool --x sw/no/such/file.c`: nanobpf-no-such-tool is neither" in problems
    assert "sw/no/such/file.c does not exist" in problems
    assert "bad.md:10: `sw/tools/nanobpf-gone`: sw/tools/nanobpf-gone does not exist" in problems
    assert "nanobpf-run is built into build/ebpf/host, build/ebpf/rv64" in problems
    assert "bad.md:7" not in problems and "nanobpfctl dev show" not in problems


def test_tools_table_lists_every_tool():
    """docs/build.md's table of tools names every command of the package and every built tool, and
    only those (a tool added or removed without its doc fails here)."""
    text = (ROOT / "docs/build.md").read_text()
    section = text[text.index("## Tools"):]
    section = section[:section.index("\n## ", 1)]
    listed = set(re.findall(r"^\| `(nanobpf[a-z0-9-]*)`", section, re.M))
    expected = set(console_scripts()) | (set(BUILT_TOOLS) - {"nanobpfctl-static", "nanobpfctl-mock"})
    assert listed == expected, (f"missing from docs/build.md: {sorted(expected - listed)}; "
                                f"listed but not a tool: {sorted(listed - expected)}")
