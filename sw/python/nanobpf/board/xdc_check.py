"""Check a Xilinx XDC file against the ANSI port list of a SystemVerilog top module, bit by bit.

Every port bit of the top needs exactly one PACKAGE_PIN and an IOSTANDARD; every port the XDC names
(in any command: set_property, create_clock, set_input_delay, ...) must exist in the top, with its index
in range; no package pin may be used twice; a differential IOSTANDARD (LVDS, TMDS_33, DIFF_*, ...) needs
an _p/_n pair of ports that both carry it. Commented lines are ignored.

The XDC is read with a small Tcl tokenizer (commands, braces, quotes, [command substitution],
backslash-newline); get_ports patterns may use * and ? (and -regexp/-nocase). The top is read with a hand
parser for ANSI headers: parameters (their defaults size the ports), `input logic [7:0] a, b`,
inherited declarations, comments. Standard library only.

`--board NAME` takes the XDC, the top's file and its module from boards/NAME/board.toml
(nanobpf.board.facts), as `make board-check` does.

Exit status: 0 no problems, 1 problems (one `FILE:LINE: message` line each), 2 bad usage, an
unreadable file or a top that cannot be parsed.
"""
import argparse
import ast
import os
import re
import sys
from pathlib import Path

PROG = "nanobpf-xdc-check"

PIN_PROPS = {"PACKAGE_PIN", "LOC"}
DIFF_STANDARDS = re.compile(r"^(LVDS(_25)?|BLVDS_25|MINI_LVDS_25|RSDS_25|PPDS_25|TMDS_33|DIFF_\w+|SUB_LVDS|SLVS_400_\w+)$")
GET_PORTS_FLAGS = {"-quiet", "-verbose", "-regexp", "-nocase", "-scoped_to_current_instance",
                   "-prop_thru_buffers"}
GET_PORTS_VALUE_OPTS = {"-filter", "-of_objects", "-match_style"}


class ParseError(Exception):
    """The top module cannot be read: exit 2."""


# --------------------------------------------------------------------------------------------------
# SystemVerilog top: ANSI port list

class Port:
    def __init__(self, name, direction, msb, lsb, line):
        self.name, self.direction, self.msb, self.lsb, self.line = name, direction, msb, lsb, line

    @property
    def is_bus(self):
        return self.msb is not None

    def indices(self):
        if not self.is_bus:
            return []
        lo, hi = sorted((self.msb, self.lsb))
        return list(range(lo, hi + 1))

    def bits(self):
        """Bit names as Vivado shows them after synthesis: `led[3]`, or the bare name for a scalar."""
        return [f"{self.name}[{i}]" for i in self.indices()] if self.is_bus else [self.name]

    def range_text(self):
        return f"{self.name}[{self.msb}:{self.lsb}]" if self.is_bus else self.name


def strip_sv_comments(text):
    """Blank out // and /* */ comments (and keep strings), preserving line numbers."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise ParseError("unterminated /* comment")
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j + 2]))
            i = j + 2
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def balanced(text, i, open_ch, close_ch):
    """Index just past the bracket group that starts at text[i] == open_ch."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_ch:
            depth += 1
        elif text[j] == close_ch:
            depth -= 1
            if depth == 0:
                return j + 1
    raise ParseError(f"unbalanced {open_ch}{close_ch}")


def split_top_level(text, start):
    """Split on commas outside (), [], {}; yields (offset, piece)."""
    depth, last, pieces = 0, 0, []
    for j, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            pieces.append((start + last, text[last:j]))
            last = j + 1
    pieces.append((start + last, text[last:]))
    return [(off, p) for off, p in pieces if p.strip()]


def eval_int(expr, params):
    """Evaluate a constant integer expression (numbers, parameters, + - * / % << >> ** and parens)."""
    e = expr.strip()
    e = re.sub(r"(\d*)'[sS]?([dDhHbBoO])([0-9a-fA-F_xXzZ]+)",
               lambda m: str(int(m.group(3).replace("_", ""), {"d": 10, "h": 16, "b": 2, "o": 8}[m.group(2).lower()])), e)
    e = re.sub(r"\$clog2\s*\(", "clog2(", e)
    try:
        tree = ast.parse(e, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"cannot evaluate '{expr.strip()}'") from exc

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in params and params[node.id] is not None:
                return params[node.id]
            raise ValueError(f"unknown parameter '{node.id}'")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.FloorDiv: lambda: a // b, ast.Div: lambda: a // b, ast.Mod: lambda: a % b,
                   ast.LShift: lambda: a << b, ast.RShift: lambda: a >> b, ast.Pow: lambda: a ** b}
            if type(node.op) in ops:
                return ops[type(node.op)]()
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "clog2"
                and len(node.args) == 1):
            v = ev(node.args[0])
            return max(0, (v - 1).bit_length())
        raise ValueError(f"cannot evaluate '{expr.strip()}'")

    return ev(tree)


SV_TYPES_1BIT = {"logic", "wire", "reg", "bit", "tri", "wand", "wor", "uwire", "var", "tri0", "tri1",
                 "supply0", "supply1", "trireg", "triand", "trior"}
SV_TYPES_INT = {"byte": 8, "shortint": 16, "int": 32, "integer": 32, "longint": 64, "time": 64}
IDENT = r"[A-Za-z_][A-Za-z0-9_$]*"


def parse_params(text, params):
    for _off, item in split_top_level(text, 0):
        m = re.match(rf"\s*(?:parameter|localparam)?\s*(?:type\s+)?(?:[\w:$]+\s+)*?(?:\[[^\]]*\]\s*)*({IDENT})\s*=\s*(.*)$",
                     item, re.S)
        if not m:
            continue
        name, value = m.group(1), m.group(2)
        try:
            params[name] = eval_int(value, params)
        except ValueError:
            params[name] = None  # not an integer constant (a type, a string): unusable in a width


def parse_top(path, text, module=None):
    """Return (module name, [Port]) from the module's ANSI header."""
    src = strip_sv_comments(text)
    mods = list(re.finditer(rf"\b(?:module|macromodule)\s+(?:(?:static|automatic)\s+)?({IDENT})", src))
    if not mods:
        raise ParseError("no module declaration")
    if module is None:
        m = mods[0]
    else:
        m = next((x for x in mods if x.group(1) == module), None)
        if m is None:
            raise ParseError(f"no module '{module}' (found: {', '.join(x.group(1) for x in mods)})")
    name = m.group(1)
    i = m.end()
    params = {}

    def skip_ws(k):
        while k < len(src) and src[k].isspace():
            k += 1
        return k

    i = skip_ws(i)
    while re.match(r"import\b", src[i:]):
        i = skip_ws(src.index(";", i) + 1)
    if src.startswith("#", i):
        i = skip_ws(i + 1)
        if not src.startswith("(", i):
            raise ParseError(f"module {name}: '#' not followed by a parameter list")
        end = balanced(src, i, "(", ")")
        parse_params(src[i + 1:end - 1], params)
        i = skip_ws(end)
    if src.startswith(";", i):
        return name, []
    if not src.startswith("(", i):
        raise ParseError(f"module {name}: no port list")
    end = balanced(src, i, "(", ")")
    body_start = i + 1
    ports = []
    prev = None  # (direction, msb, lsb) of the previous declaration, inherited by bare names
    for off, item in split_top_level(src[body_start:end - 1], body_start):
        line = src.count("\n", 0, off + len(item) - len(item.lstrip())) + 1
        toks = re.findall(rf"\[[^\]]*\]|{IDENT}(?:::{IDENT})?|\.|=|\S", item.split("=", 1)[0])
        if not toks:
            continue
        direction = None
        if toks[0] in ("input", "output", "inout", "ref"):
            direction = toks.pop(0)
        if direction == "ref":
            raise ParseError(f"{path}:{line}: ref ports are not supported")
        names = [t for t in toks if re.fullmatch(IDENT, t)]
        if not names:
            raise ParseError(f"{path}:{line}: cannot read port declaration '{item.strip()}'")
        pname = names[-1]
        ni = len(toks) - 1 - toks[::-1].index(pname)
        head, tail = toks[:ni], toks[ni + 1:]
        if tail:
            raise ParseError(f"{path}:{line}: port {pname}: unpacked dimensions are not supported")
        if "." in toks:
            raise ParseError(f"{path}:{line}: port {pname}: interface ports are not supported")
        dims = [t for t in head if t.startswith("[")]
        words = [t for t in head if not t.startswith("[")]
        words = [w for w in words if w not in ("signed", "unsigned")]
        if direction is None and not head:
            if prev is None:
                raise ParseError(f"{path}:{line}: port {pname} has no direction (only ANSI port lists are supported)")
            direction, msb, lsb = prev
        else:
            if direction is None:
                if prev is None:
                    raise ParseError(f"{path}:{line}: port {pname} has no direction")
                direction = prev[0]
            msb = lsb = None
            for w in words:
                if w in SV_TYPES_INT:
                    msb, lsb = SV_TYPES_INT[w] - 1, 0
                elif w not in SV_TYPES_1BIT:
                    raise ParseError(f"{path}:{line}: port {pname}: type '{w}' has an unknown width")
            if len(dims) > 1:
                raise ParseError(f"{path}:{line}: port {pname}: multi-dimensional ports are not supported")
            if dims:
                rng = dims[0][1:-1]
                if ":" not in rng:
                    raise ParseError(f"{path}:{line}: port {pname}: cannot read range [{rng}]")
                a, b = rng.split(":", 1)
                try:
                    msb, lsb = eval_int(a, params), eval_int(b, params)
                except ValueError as exc:
                    raise ParseError(f"{path}:{line}: port {pname}: {exc}") from None
        prev = (direction, msb, lsb)
        if any(p.name == pname for p in ports):
            raise ParseError(f"{path}:{line}: port {pname} declared twice")
        ports.append(Port(pname, direction, msb, lsb, line))
    return name, ports


# --------------------------------------------------------------------------------------------------
# XDC: a small Tcl reader

def tcl_commands(text):
    """Yield (line, offset, command text, (open braces, open brackets, open quote)) for every command;
    comments are dropped. A non-zero state at the end means the file is unbalanced."""
    i, n, line = 0, len(text), 1
    while i < n:
        # skip separators and blank space between commands
        while i < n and text[i] in " \t\r\n;":
            if text[i] == "\n":
                line += 1
            i += 1
        if i >= n:
            break
        if text.startswith("\\\n", i):
            i += 2
            line += 1
            continue
        if text[i] == "#":
            while i < n and text[i] != "\n":
                if text.startswith("\\\n", i):
                    i += 1
                    line += 1
                i += 1
            continue
        start, start_line = i, line
        depth_brace = depth_bracket = 0
        in_quote = False
        while i < n:
            c = text[i]
            if c == "\\":
                if i + 1 < n and text[i + 1] == "\n":
                    line += 1
                i += 2
                continue
            if c == "\n":
                if depth_brace == 0 and depth_bracket == 0 and not in_quote:
                    break
                line += 1
            elif c == ";" and depth_brace == 0 and depth_bracket == 0 and not in_quote:
                break
            elif c == "{" and not in_quote:
                depth_brace += 1
            elif c == "}" and not in_quote and depth_brace:
                depth_brace -= 1
            elif c == "[" and depth_brace == 0:
                depth_bracket += 1
            elif c == "]" and depth_brace == 0 and depth_bracket:
                depth_bracket -= 1
            elif c == '"' and depth_brace == 0:
                in_quote = not in_quote
            i += 1
        yield start_line, start, text[start:i], (depth_brace, depth_bracket, in_quote)


def tcl_words(cmd):
    """Split one command into words: (kind, text, offset); kind is 'brace', 'quote' or 'bare'."""
    words, i, n = [], 0, len(cmd)
    while i < n:
        while i < n and cmd[i] in " \t\r\n":
            i += 1
        if cmd.startswith("\\\n", i):
            i += 2
            continue
        if i >= n:
            break
        start = i
        if cmd[i] == "{":
            depth = 0
            while i < n:
                if cmd[i] == "\\":
                    i += 2
                    continue
                if cmd[i] == "{":
                    depth += 1
                elif cmd[i] == "}":
                    depth -= 1
                    if depth == 0:
                        i += 1
                        break
                i += 1
            words.append(("brace", cmd[start + 1:i - 1], start))
        elif cmd[i] == '"':
            i += 1
            depth = 0
            while i < n and not (cmd[i] == '"' and depth == 0):
                if cmd[i] == "\\":
                    i += 1
                elif cmd[i] == "[":
                    depth += 1
                elif cmd[i] == "]" and depth:
                    depth -= 1
                i += 1
            words.append(("quote", cmd[start + 1:i], start))
            i += 1
        else:
            depth = 0
            while i < n and not (cmd[i] in " \t\r\n" and depth == 0):
                if cmd[i] == "\\":
                    i += 1
                elif cmd[i] == "[":
                    depth += 1
                elif cmd[i] == "]" and depth:
                    depth -= 1
                i += 1
            words.append(("bare", cmd[start:i], start))
    return words


def tcl_list(text):
    """Elements of a Tcl list (braced elements keep their inner text)."""
    return [w[1] for w in tcl_words(text)]


def substitutions(word_text, base):
    """Top-level [command substitutions] inside a bare or quoted word: (offset, inner text)."""
    subs, i, n = [], 0, len(word_text)
    while i < n:
        c = word_text[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            depth, j = 0, i
            while j < n:
                if word_text[j] == "\\":
                    j += 2
                    continue
                if word_text[j] == "[":
                    depth += 1
                elif word_text[j] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                elif word_text[j] == "{":
                    # braces inside a substitution quote their content
                    k, d = j, 0
                    while k < n:
                        if word_text[k] == "{":
                            d += 1
                        elif word_text[k] == "}":
                            d -= 1
                            if d == 0:
                                break
                        k += 1
                    j = k
                j += 1
            subs.append((base + i + 1, word_text[i + 1:j]))
            i = j + 1
            continue
        i += 1
    return subs


class Checker:
    def __init__(self, xdc_path, top_path, module_name, ports):
        self.xdc_path, self.top_path, self.module = xdc_path, top_path, module_name
        self.ports = {p.name: p for p in ports}
        self.order = ports
        self.bit_port = {b: p for p in ports for b in p.bits()}
        self.problems = []  # (file index, line, message)
        self.pins = {}      # bit -> (pin, line)
        self.iostd = {}     # bit -> (standard, line)
        self.pin_owner = {}  # pin -> (bit, line)

    def problem(self, line, msg, in_top=False):
        self.problems.append((1 if in_top else 0, line, msg))

    # ---- get_ports
    def resolve_pattern(self, pat, line, regexp, nocase):
        flags = re.I if nocase else 0
        if regexp:
            try:
                rx = re.compile(pat, flags)
            except re.error as exc:
                self.problem(line, f"get_ports -regexp {{{pat}}}: bad regular expression ({exc})")
                return []
        else:
            rx = re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pat), flags)
        hits = []
        for p in self.order:
            if rx.fullmatch(p.name):
                hits.extend(p.bits())
            else:
                hits.extend(b for b in p.bits() if rx.fullmatch(b))
        if hits:
            return list(dict.fromkeys(hits))
        m = re.fullmatch(r"(.+)\[(\d+)\]", pat)
        if m and not regexp and m.group(1) in self.ports:
            p = self.ports[m.group(1)]
            if not p.is_bus:
                self.problem(line, f"get_ports {{{pat}}}: {p.name} is a single bit in module {self.module}, not a bus")
            else:
                self.problem(line, f"get_ports {{{pat}}}: index {m.group(2)} is out of range of {p.range_text()}")
        else:
            self.problem(line, f"get_ports {{{pat}}}: no such port in module {self.module}")
        return []

    def get_ports(self, inner, line):
        """Bits named by the arguments of one get_ports command."""
        words = tcl_words(inner)[1:]
        regexp = nocase = False
        patterns = []
        k = 0
        while k < len(words):
            kind, text, _ = words[k]
            if kind == "bare" and text in GET_PORTS_FLAGS:
                regexp |= text == "-regexp"
                nocase |= text == "-nocase"
            elif kind == "bare" and text in GET_PORTS_VALUE_OPTS:
                if text != "-match_style":
                    self.problem(line, f"get_ports {text}: cannot be checked statically, name the ports instead")
                    return []
                k += 1
            elif kind == "bare" and text.startswith("-"):
                self.problem(line, f"get_ports: unknown option {text}")
            elif kind != "brace" and ("$" in text or "[" in text):
                names = text.split()
                if all(re.fullmatch(r"[\w*?]+(\[[\d*?]+\])?", x) for x in names):
                    shown = text if kind == "bare" else f'"{text}"'
                    self.problem(line, f"get_ports {shown}: brace the name ({{{text}}}), Tcl substitutes [...] "
                                       "as a command")
                    patterns.extend(names)
                else:
                    self.problem(line, f"get_ports {text}: substitutions cannot be checked statically")
            elif kind == "brace":
                patterns.extend(tcl_list(text))
            else:
                patterns.extend(text.split())
            k += 1
        if not patterns:
            self.problem(line, "get_ports without a port name")
        bits = []
        for pat in patterns:
            bits.extend(self.resolve_pattern(pat, line, regexp, nocase))
        return list(dict.fromkeys(bits))

    def ports_in_word(self, kind, text, offset, cmd, cmd_line):
        """Check every get_ports inside one word (recursively); return the bits of a word that is
        exactly one [get_ports ...] substitution, else None."""
        if kind == "brace":
            return None
        result = None
        for off, inner in substitutions(text, offset + (1 if kind == "quote" else 0)):
            line = cmd_line + cmd.count("\n", 0, off)
            sub_words = tcl_words(inner)
            for sk, st, so in sub_words[1:]:
                self.ports_in_word(sk, st, off + so, cmd, cmd_line)
            if sub_words and sub_words[0][1] == "get_ports":
                bits = self.get_ports(inner, line)
                if kind == "bare" and text.strip() == f"[{inner}]":
                    result = bits
        return result

    # ---- commands
    def command(self, cmd_line, cmd):
        words = tcl_words(cmd)
        if not words:
            return
        objects = [self.ports_in_word(k, t, o, cmd, cmd_line) for k, t, o in words]
        if words[0][1] != "set_property":
            return
        props, k, positional = [], 1, []
        while k < len(words):
            kind, text, _ = words[k]
            if kind == "bare" and text == "-dict":
                if k + 1 >= len(words):
                    self.problem(cmd_line, "set_property -dict without a value")
                    return
                items = tcl_list(words[k + 1][1])
                if len(items) % 2:
                    self.problem(cmd_line, f"set_property -dict has an odd number of items: {{{words[k + 1][1].strip()}}}")
                props.extend(zip(items[::2], items[1::2]))
                k += 2
                continue
            if kind == "bare" and text in ("-quiet", "-verbose"):
                k += 1
                continue
            positional.append(k)
            k += 1
        if props:
            obj_idx = positional[0] if positional else None
        elif len(positional) >= 3:
            props.append((words[positional[0]][1], words[positional[1]][1]))
            obj_idx = positional[2]
        else:
            self.problem(cmd_line, "set_property needs a property, a value and objects")
            return
        bits = objects[obj_idx] if obj_idx is not None else None
        if not bits:
            return  # not ports (current_design, cells, ...), or already reported
        line = cmd_line + cmd.count("\n", 0, words[obj_idx][2])
        for key, value in props:
            key_u, value_u = key.upper(), value.strip().upper()
            if key_u in PIN_PROPS:
                for b in bits:
                    if b in self.pins:
                        old, old_line = self.pins[b]
                        self.problem(line, f"{b} gets a second {key_u} {value_u} (it has {old} from line {old_line})")
                        continue
                    self.pins[b] = (value_u, line)
                    if value_u in self.pin_owner:
                        ob, oline = self.pin_owner[value_u]
                        self.problem(line, f"package pin {value_u} of {b} is already used by {ob} (line {oline})")
                    else:
                        self.pin_owner[value_u] = (b, line)
            elif key_u == "IOSTANDARD":
                for b in bits:
                    if b in self.iostd and self.iostd[b][0] != value_u:
                        old, old_line = self.iostd[b]
                        self.problem(line, f"{b} gets IOSTANDARD {value_u} but has {old} from line {old_line}")
                        continue
                    self.iostd.setdefault(b, (value_u, line))

    def finish(self):
        unconstrained = 0
        for p in self.order:
            for b in p.bits():
                missing = [what for what, table in (("PACKAGE_PIN", self.pins), ("IOSTANDARD", self.iostd))
                           if b not in table]
                if missing:
                    unconstrained += 1
                    self.problem(p.line, f"port bit {b} ({p.direction}) has no {' and no '.join(missing)} "
                                 f"in {self.xdc_path}", in_top=True)
        for p in self.order:
            for idx, b in enumerate(p.bits()):
                std = self.iostd.get(b)
                if not std or not DIFF_STANDARDS.match(std[0]):
                    continue
                m = re.fullmatch(r"(.*)_([pPnN])", p.name)
                if not m:
                    self.problem(std[1], f"{b} has the differential IOSTANDARD {std[0]} but is not named *_p/*_n")
                    continue
                other = m.group(1) + "_" + {"p": "n", "n": "p", "P": "N", "N": "P"}[m.group(2)]
                q = self.ports.get(other)
                if q is None:
                    self.problem(std[1], f"{b} has the differential IOSTANDARD {std[0]} but its partner {other} "
                                 f"is not a port of module {self.module}")
                    continue
                qb = q.bits()
                if len(qb) != len(p.bits()):
                    self.problem(std[1], f"{p.range_text()} and its partner {q.range_text()} differ in width")
                    break
                qstd = self.iostd.get(qb[idx])
                if qstd is None or not DIFF_STANDARDS.match(qstd[0]):
                    what = "no IOSTANDARD" if qstd is None else f"IOSTANDARD {qstd[0]}"
                    self.problem(std[1], f"{b} has the differential IOSTANDARD {std[0]} but its partner {qb[idx]} "
                                 f"has {what}")
                elif qstd[0] != std[0] and m.group(2) in "pP":
                    self.problem(std[1], f"{b} is {std[0]} but its partner {qb[idx]} is {qstd[0]}")
        return unconstrained


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Check that an XDC file constrains exactly the ports of a SystemVerilog top module: "
                    "one PACKAGE_PIN and an IOSTANDARD for every port bit, no unknown ports or indices, "
                    "no package pin used twice, differential standards only on complete _p/_n pairs.",
        epilog="Exit status: 0 no problems, 1 problems found, 2 bad usage or unreadable input.")
    ap.add_argument("--board", help="take the XDC, the top's file and its module from boards/BOARD/board.toml "
                                    "([design] xdc, rtl/<top>.sv, top); --xdc, --top and --module override them")
    ap.add_argument("--xdc", help="the XDC constraints file (required without --board)")
    ap.add_argument("--top", help="the SystemVerilog file with the top module (ANSI port list; required without --board)")
    ap.add_argument("--module", help="the top module's name (default: the board's top with --board, else the first "
                                     "module in --top)")
    args = ap.parse_args(argv)
    if args.board:
        from nanobpf.board import facts
        try:
            board = facts.load(args.board)
        except facts.BoardFactsError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 2
        args.xdc = args.xdc or os.path.relpath(board.design.xdc)  # named relative to here in the messages
        args.top = args.top or os.path.relpath(board.design.rtl / f"{board.design.top}.sv")
        args.module = args.module or board.design.top
    elif not (args.xdc and args.top):
        ap.error("--xdc and --top are required without --board")

    texts = []
    for path in (args.xdc, args.top):
        try:
            texts.append(Path(path).read_text())
        except OSError as exc:
            print(f"{PROG}: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        except UnicodeDecodeError:
            print(f"{PROG}: {path}: not a text file", file=sys.stderr)
            return 2
    xdc_text, top_text = texts
    try:
        module, ports = parse_top(args.top, top_text, args.module)
    except ParseError as exc:
        msg = str(exc)
        print(f"{PROG}: {msg if msg.startswith(args.top + ':') else args.top + ': ' + msg}", file=sys.stderr)
        return 2
    if not ports:
        print(f"{PROG}: {args.top}: module {module} has no ports", file=sys.stderr)
        return 2

    chk = Checker(args.xdc, args.top, module, ports)
    for line, _off, cmd, (brace, bracket, quote) in tcl_commands(xdc_text):
        if brace or bracket or quote:
            what = "{" if brace else "[" if bracket else '"'
            chk.problem(line, f"unbalanced {what} (the rest of the file is one command)")
            continue
        chk.command(line, cmd)
    unconstrained = chk.finish()

    files = (args.xdc, args.top)
    for fi, line, msg in sorted(chk.problems, key=lambda p: (p[0], p[1])):
        print(f"{files[fi]}:{line}: {msg}")
    nbits = sum(len(p.bits()) for p in ports)
    state = "all constrained" if unconstrained == 0 else f"{unconstrained} unconstrained"
    n = len(chk.problems)
    print(f"{PROG}: {nbits} port bits, {state}, {n} problem{'' if n == 1 else 's'}")
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
