"""nanobpf-elf2hex: the image holds exactly the ELF's bytes; images outside main memory are refused."""
import subprocess

import pytest

from nanobpf import BUILD, command
from nanobpf import soc

ELF2HEX = command("nanobpf-elf2hex")
CC = "riscv64-unknown-elf-gcc"


def elf2hex(elf, hexfile):
    return subprocess.run([ELF2HEX, str(elf), str(hexfile)], capture_output=True, text=True)


def read_hex(path):
    """Byte address (from main memory base) -> byte."""
    mem, word = {}, 0
    for line in path.read_text().split():
        if line.startswith("@"):
            word = int(line[1:], 16)
            continue
        for i, b in enumerate(int(line, 16).to_bytes(8, "little")):
            mem[word * 8 + i] = b
        word += 1
    return mem


def test_image_matches_objcopy(tmp_path):
    elf = BUILD / "firmware/hello.elf"
    if not elf.exists():
        pytest.skip("run `make firmware` first")  # make test builds it
    assert elf2hex(elf, tmp_path / "h.hex").returncode == 0
    subprocess.run(["riscv64-unknown-elf-objcopy", "-O", "binary", str(elf), str(tmp_path / "h.bin")], check=True)
    binary = (tmp_path / "h.bin").read_bytes()  # starts at the lowest load address = main memory base
    mem = read_hex(tmp_path / "h.hex")
    assert bytes(mem.get(i, 0) for i in range(len(binary))) == binary
    assert max(mem) < len(binary) + 8


def tiny_elf(tmp_path, text_addr):
    src = tmp_path / "t.S"
    src.write_text(".globl _start\n_start: j _start\n")
    elf = tmp_path / "t.elf"
    subprocess.run([CC, "-nostdlib", f"-Wl,-Ttext=0x{text_addr:x}", str(src), "-o", str(elf)], check=True)
    return elf


def test_segment_outside_main_memory_is_refused(tmp_path):
    mem = soc.REGIONS["main_mem"]
    p = elf2hex(tiny_elf(tmp_path, mem.base + mem.size), tmp_path / "t.hex")
    assert p.returncode == 1
    assert "outside main memory" in p.stderr
    assert not (tmp_path / "t.hex").exists()


def test_not_an_elf_is_refused(tmp_path):
    f = tmp_path / "x.elf"
    f.write_bytes(b"hello")
    p = elf2hex(f, tmp_path / "x.hex")
    assert p.returncode == 1 and "not a little-endian ELF64" in p.stderr
