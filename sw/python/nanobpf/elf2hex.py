"""Convert a firmware ELF into the main-memory image the SoC loads ($readmemh, 64-bit words).

Every PT_LOAD segment must lie inside main memory (hw/defs/soc.toml); anything outside is an error,
not silently dropped. Output lines: `@<word index>` then one 16-digit hex word per line.
Standard library only.
"""
import argparse
import struct
import sys
from pathlib import Path



def load_segments(path):
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a little-endian ELF64 file")
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    segs = []
    for i in range(phnum):
        p_type, _flags, off, _vaddr, paddr, filesz, memsz, _align = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and memsz:  # PT_LOAD
            segs.append((paddr, data[off:off + filesz], memsz))
    if not segs:
        raise ValueError(f"{path}: no loadable segments")
    return segs


def to_hex(segs, base, size):
    words = {}
    for paddr, blob, memsz in segs:
        if paddr < base or paddr + memsz > base + size:
            raise ValueError(f"segment 0x{paddr:x}+0x{memsz:x} lies outside main memory "
                             f"0x{base:x}..0x{base + size:x}")
        for i, b in enumerate(blob):
            a = paddr - base + i
            w = words.setdefault(a // 8, bytearray(8))
            w[a % 8] = b
    out, prev = [], None
    for idx in sorted(words):
        if prev is None or idx != prev + 1:
            out.append(f"@{idx:x}")
        out.append(int.from_bytes(words[idx], "little").to_bytes(8, "big").hex())
        prev = idx
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("elf", help="firmware ELF (riscv64)")
    ap.add_argument("hex", help="output $readmemh file")
    a = ap.parse_args(argv)
    try:
        import nanobpf_soc
    except ImportError:
        print("nanobpf-elf2hex: error: build/generated/python/nanobpf_soc.py missing: run `make defs`", file=sys.stderr)
        return 2
    mem = nanobpf_soc.REGIONS["main_mem"]
    try:
        text = to_hex(load_segments(a.elf), mem.base, mem.size)
    except (OSError, ValueError) as e:
        print(f"nanobpf-elf2hex: error: {e}", file=sys.stderr)
        return 1
    Path(a.hex).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
