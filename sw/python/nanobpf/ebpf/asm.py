"""A small eBPF assembler for tests (syntax close to uBPF's, see docs/ebpf.md).

    mov r0, 1            ALU64; add sub mul div sdiv mod smod or and lsh rsh arsh xor mov neg
    add32 r0, r1         ALU (32-bit): the same names with a 32 suffix
    movsx8 r0, r1        sign-extending moves: movsx8/16/32 (ALU64), movsx8_32/movsx16_32 (ALU)
    le16 r0 / be32 r0    byte order (ALU END); bswap16/32/64 (ALU64 END)
    ldxw r0, [r1+2]      loads ldxb/h/w/dw, sign-extending ldxsb/sh/sw; stores stb.. [r1-4], 7; stxdw [r10-8], r1
    lddw r0, 0x1122334455667788   64-bit immediate; lddw r1, map:0 (map by index); lddw r1, mapval:0+8
    ja +2 / ja label / ja32 label (32-bit offset)
    jeq r1, 5, label     jeq jne jgt jge jlt jle jset jsgt jsge jslt jsle, 32 suffix for JMP32
    call 1 / call map_lookup_elem / call @label (bpf-to-bpf)    exit
    lock add [r1+0], r2  atomics: add or and xor, fetch_add .., xchg, cmpxchg; 32 suffix for 32-bit
Comments start with '#', ';' or '//'. Labels end with ':'.
"""
import re
import struct

ALU = {"add": 0x00, "sub": 0x10, "mul": 0x20, "div": 0x30, "or": 0x40, "and": 0x50, "lsh": 0x60,
       "rsh": 0x70, "neg": 0x80, "mod": 0x90, "xor": 0xa0, "mov": 0xb0, "arsh": 0xc0,
       "sdiv": 0x30, "smod": 0x90}
JMP = {"jeq": 0x10, "jgt": 0x20, "jge": 0x30, "jset": 0x40, "jne": 0x50, "jsgt": 0x60, "jsge": 0x70,
       "jlt": 0xa0, "jle": 0xb0, "jslt": 0xc0, "jsle": 0xd0}
SIZES = {"b": 0x10, "h": 0x08, "w": 0x00, "dw": 0x18}
ATOMIC = {"add": 0x00, "or": 0x40, "and": 0x50, "xor": 0xa0, "xchg": 0xe1, "cmpxchg": 0xf1}
CLS_LD, CLS_LDX, CLS_ST, CLS_STX, CLS_ALU, CLS_JMP, CLS_JMP32, CLS_ALU64 = range(8)


class AsmError(Exception):
    pass


def insn(code, dst=0, src=0, off=0, imm=0):
    return struct.pack("<BBhi", code, (src << 4) | dst, off, _s32(imm))


def _s32(v):
    v &= 0xffffffff
    return v - (1 << 32) if v & 0x80000000 else v


def _int(tok, line):
    try:
        return int(tok, 0)
    except ValueError:
        raise AsmError(f"line {line}: '{tok}' is not a number")


def _reg(tok, line):
    m = re.fullmatch(r"r(\d+)", tok)
    if not m or int(m.group(1)) > 10:
        raise AsmError(f"line {line}: '{tok}' is not a register r0..r10")
    return int(m.group(1))


def _mem(tok, line):
    m = re.fullmatch(r"\[\s*(r\d+)\s*(?:([+-])\s*(\w+))?\s*\]", tok)
    if not m:
        raise AsmError(f"line {line}: '{tok}' is not a memory operand [rN+off]")
    off = _int(m.group(3), line) if m.group(3) else 0
    return _reg(m.group(1), line), -off if m.group(2) == "-" else off


def _split(rest):
    """Operands separated by commas, keeping [..] together."""
    out, depth, cur = [], 0, ""
    for ch in rest:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def assemble(text, helpers=None):
    """Assemble text into little-endian instruction bytes. helpers maps names to ids for `call name`."""
    if helpers is None:
        try:
            import nanobpf_ebpf_defs
            helpers = nanobpf_ebpf_defs.HELPER_IDS
        except ImportError:
            helpers = {}
    lines = []
    for n, raw in enumerate(text.splitlines(), 1):
        s = re.split(r"#|;|//", raw, maxsplit=1)[0].strip()
        while (m := re.match(r"^([A-Za-z_.][\w.]*):\s*", s)):
            lines.append((n, "label", m.group(1)))
            s = s[m.end():]
        if s:
            lines.append((n, "insn", s))
    # First pass: slot index of every label (lddw takes two slots).
    labels, pc = {}, 0
    for n, kind, s in lines:
        if kind == "label":
            if s in labels:
                raise AsmError(f"line {n}: label '{s}' defined twice")
            labels[s] = pc
        else:
            pc += 2 if s.split()[0] == "lddw" else 1
    out, pc = [], 0
    for n, kind, s in lines:
        if kind == "insn":
            b = _one(s, n, pc, labels, helpers)
            out.append(b)
            pc += len(b) // 8
    return b"".join(out)


def _target(tok, line, pc, labels, bits=16):
    if tok in labels:
        off = labels[tok] - pc - 1
    elif re.fullmatch(r"[+-]?(0x[0-9a-fA-F]+|\d+)", tok):
        off = _int(tok, line)
    else:
        raise AsmError(f"line {line}: unknown label '{tok}'")
    if not -(1 << (bits - 1)) <= off < (1 << (bits - 1)):
        raise AsmError(f"line {line}: jump offset {off} does not fit {bits} bits")
    return off


def _one(s, line, pc, labels, helpers):
    parts = s.split(None, 1)
    op, ops = parts[0].lower(), _split(parts[1]) if len(parts) > 1 else []

    def need(k):
        if len(ops) != k:
            raise AsmError(f"line {line}: '{op}' takes {k} operand(s), got {len(ops)}")

    if op == "exit":
        need(0)
        return insn(CLS_JMP | 0x90)
    if op == "call":
        need(1)
        t = ops[0]
        if t.startswith("@"):
            return insn(CLS_JMP | 0x80, src=1, imm=_target(t[1:], line, pc, labels, 32))
        if t in helpers:
            return insn(CLS_JMP | 0x80, imm=helpers[t])
        return insn(CLS_JMP | 0x80, imm=_int(t, line))
    if op in ("ja", "ja32"):
        need(1)
        if op == "ja32":
            return insn(CLS_JMP32, imm=_target(ops[0], line, pc, labels, 32))
        return insn(CLS_JMP, off=_target(ops[0], line, pc, labels))
    m = re.fullmatch(r"(j[a-z]+?)(32)?", op)
    if m and m.group(1) in JMP:
        need(3)
        cls = CLS_JMP32 if m.group(2) else CLS_JMP
        dst, off = _reg(ops[0], line), _target(ops[2], line, pc, labels)
        if ops[1].startswith("r"):
            return insn(cls | JMP[m.group(1)] | 0x08, dst, _reg(ops[1], line), off)
        return insn(cls | JMP[m.group(1)], dst, off=off, imm=_int(ops[1], line))
    if op == "lddw":
        need(2)
        dst, v = _reg(ops[0], line), ops[1]
        mm = re.fullmatch(r"(map|mapval):(\d+)(?:\+(\w+))?", v)
        if mm:
            src = 5 if mm.group(1) == "map" else 6
            off = _int(mm.group(3), line) if mm.group(3) else 0
            return insn(CLS_LD | 0x18, dst, src, imm=int(mm.group(2))) + insn(0, imm=off)
        val = _int(v, line) & 0xffffffffffffffff
        return insn(CLS_LD | 0x18, dst, imm=val & 0xffffffff) + insn(0, imm=val >> 32)
    m = re.fullmatch(r"ldx(s?)(b|h|w|dw)", op)
    if m:
        need(2)
        src, off = _mem(ops[1], line)
        if m.group(1) and m.group(2) == "dw":
            raise AsmError(f"line {line}: there is no sign-extending 8-byte load")
        return insn(CLS_LDX | (0x80 if m.group(1) else 0x60) | SIZES[m.group(2)], _reg(ops[0], line), src, off)
    m = re.fullmatch(r"(stx?)(b|h|w|dw)", op)
    if m:
        need(2)
        dst, off = _mem(ops[0], line)
        if m.group(1) == "stx":
            return insn(CLS_STX | 0x60 | SIZES[m.group(2)], dst, _reg(ops[1], line), off)
        return insn(CLS_ST | 0x60 | SIZES[m.group(2)], dst, off=off, imm=_int(ops[1], line))
    if op == "lock":
        sub = ops[0].split(None, 1) if ops else []
        if len(sub) != 2 or len(ops) != 2:
            raise AsmError(f"line {line}: lock takes 'OP [rN+off], rM'")
        mm = re.fullmatch(r"(fetch_)?(add|or|and|xor|xchg|cmpxchg)(32)?", sub[0])
        if not mm:
            raise AsmError(f"line {line}: unknown atomic operation '{sub[0]}'")
        dst, off = _mem(sub[1], line)
        imm = ATOMIC[mm.group(2)] | (1 if mm.group(1) else 0)
        return insn(CLS_STX | 0xc0 | (SIZES["w"] if mm.group(3) else SIZES["dw"]), dst, _reg(ops[1], line), off, imm)
    m = re.fullmatch(r"(le|be|bswap)(16|32|64)", op)
    if m:
        need(1)
        kind = m.group(1)
        cls = CLS_ALU64 if kind == "bswap" else CLS_ALU
        return insn(cls | 0xd0 | (0x08 if kind == "be" else 0), _reg(ops[0], line), imm=int(m.group(2)))
    m = re.fullmatch(r"movsx(8|16|32)(_32)?", op)
    if m:
        need(2)
        if m.group(2) and m.group(1) == "32":
            raise AsmError(f"line {line}: movsx32_32 does not exist")
        cls = CLS_ALU if m.group(2) else CLS_ALU64
        return insn(cls | 0xb0 | 0x08, _reg(ops[0], line), _reg(ops[1], line), int(m.group(1)))
    m = re.fullmatch(r"([a-z]+?)(32)?", op)
    if m and m.group(1) in ALU:
        cls = CLS_ALU if m.group(2) else CLS_ALU64
        code = cls | ALU[m.group(1)]
        off = 1 if m.group(1) in ("sdiv", "smod") else 0
        if m.group(1) == "neg":
            need(1)
            return insn(code, _reg(ops[0], line))
        need(2)
        dst = _reg(ops[0], line)
        if ops[1].startswith("r"):
            return insn(code | 0x08, dst, _reg(ops[1], line), off)
        return insn(code, dst, off=off, imm=_int(ops[1], line))
    raise AsmError(f"line {line}: unknown instruction '{op}'")


def parse_test(text):
    """Split a program test file into its sections: {'asm': str, 'mem': bytes, 'result': int, ...}."""
    sections, cur = {}, None
    for raw in text.splitlines():
        m = re.match(r"^--\s*(\w+)\s*$", raw)
        if m:
            cur = m.group(1)
            sections[cur] = ""
        elif cur:
            sections[cur] += raw + "\n"
    out = dict(sections)
    if "mem" in sections:
        out["mem"] = bytes.fromhex(re.sub(r"#.*", "", sections["mem"]).replace("\n", " "))
    if "result" in sections:
        out["result"] = int(sections["result"].strip(), 0)
    if "raw" in sections:
        out["raw"] = bytes.fromhex(re.sub(r"#.*", "", sections["raw"]).replace("\n", " "))
    return out
