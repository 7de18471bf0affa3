"""The house rules of the tree that a reviewer would otherwise check by eye (issue 27): every command of
the package answers --help, no module patches sys.path or reaches into the test trees, no hardware block
imports the tops that wire blocks, the reference models stay apart from host code, and a source file
over 800 lines says at its top why it is one file."""
import ast
import re
import subprocess
import tomllib

import pytest

from nanobpf import ROOT, command

PACKAGE = ROOT / "sw/python/nanobpf"
SCRIPTS = sorted(tomllib.loads((ROOT / "sw/python/pyproject.toml").read_text())["project"]["scripts"])
SOURCE_SUFFIXES = {".py", ".c", ".h", ".cpp", ".scala", ".sv", ".sh", ".S", ".lua", ".tcl"}
LONG_FILE = 800
REASON = "One file on purpose"


def tracked_sources():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / f for f in files if (ROOT / f).suffix in SOURCE_SUFFIXES and (ROOT / f).is_file()]


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_command_has_help(name):
    p = subprocess.run([command(name), "--help"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "usage" in p.stdout.lower(), (name, p.stdout[-300:], p.stderr[-300:])


def _imports(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            yield "." * node.level + (node.module or "")


def test_package_does_not_patch_sys_path_or_import_tests():
    """The package is installed; it finds its modules by import. nanobpf.blocksim alone hands the test
    benches' folder to the simulator's Python (cocotb passes sys.path on), and says so."""
    problems = []
    for f in sorted(PACKAGE.rglob("*.py")):
        text = f.read_text()
        if re.search(r"sys\.path\s*(\.(insert|append)|\[|=)", text) and f.name != "blocksim.py":
            problems.append(f"{f.relative_to(ROOT)}: changes sys.path")
        for mod in _imports(f):
            if mod.split(".")[0] in {"tests", "sim", "conftest", "cocotb_runner", "busport", "pisa_common",
                                     "dispatch_common", "ctrl_device", "linux_compat", "quic_device"}:
                problems.append(f"{f.relative_to(ROOT)}: imports {mod} from a test tree")
    assert not problems, "\n".join(problems)


def test_reference_models_import_only_definitions():
    """nanobpf.models are the scoreboards of the hardware tests: of the project they may use the
    generated definitions only, nothing of the host code they check."""
    definitions = {"nanobpf.soc", "nanobpf_soc", "nanobpf_ebpf_defs", "nanobpf_ctrl_defs"}
    problems = []
    for f in sorted((PACKAGE / "models").glob("*.py")):
        for mod in _imports(f):
            ours = mod.startswith((".", "nanobpf"))
            if ours and mod not in definitions and not mod.startswith(("nanobpf.models", ".")) or mod.startswith(".."):
                problems.append(f"{f.name}: imports {mod}")
    assert not problems, "\n".join(problems)


def test_blocks_do_not_import_the_tops():
    """hw/: the blocks and common share types through nanobpf.common; only soc and board (the tops that
    wire blocks) may be imported by nothing."""
    scala = ROOT / "hw/src/main/scala/nanobpf"
    problems = []
    for f in sorted(scala.rglob("*.scala")):
        pkg = f.relative_to(scala).parts[0]
        if pkg in ("soc", "board"):
            continue
        for line in f.read_text().splitlines():
            m = re.match(r"\s*import nanobpf\.(soc|board)\b", line)
            if m:
                problems.append(f"{f.relative_to(ROOT)}: {line.strip()}")
    assert not problems, "\n".join(problems)


def test_long_files_say_why():
    problems = []
    for f in tracked_sources():
        lines = f.read_text(errors="replace").splitlines()
        if len(lines) > LONG_FILE and not any(REASON in line for line in lines[:20]):
            problems.append(f"{f.relative_to(ROOT)}: {len(lines)} lines and no '{REASON}: ...' reason at its top")
    assert not problems, "\n".join(problems)
