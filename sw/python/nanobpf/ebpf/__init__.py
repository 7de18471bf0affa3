"""NanoBPF eBPF host tools: the loader (clang BPF object -> device load image) and the test assembler.

    from nanobpf.ebpf import load, parse_image, LoadError
    image = load("prog.o")              # or load("prog.o", program="name")
    Path("prog.nbpf").write_bytes(image.to_bytes())

The image layout, map types and helper ids come from hw/defs/ebpf.toml (generated module
nanobpf_ebpf_defs, build/generated/python); see docs/ebpf.md.
"""
from .loader import Image, Insn, LoadError, Map, Program, load, parse_image, programs

__all__ = ["Image", "Insn", "LoadError", "Map", "Program", "load", "parse_image", "programs"]
