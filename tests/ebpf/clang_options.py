"""The clang options a test program asks for besides the usual `-O2 -g -target bpf`: a line
`/* clang: OPTIONS */` in its source, e.g. `-mcpu=v3` for the 32-bit ALU instructions and jumps that
clang then emits for int and __u32 values (tests/ebpf/verifier/)."""
import re


def clang_options(src):
    m = re.search(r"^/\* clang: (.*) \*/$", src.read_text(), re.M)
    return m.group(1).split() if m else []
