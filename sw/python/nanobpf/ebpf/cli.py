"""Turn a clang BPF object into a NanoBPF device load image.

    nanobpf-load OBJ.o [-p PROG | -s SECTION] [--map-size NAME=N ...] -o IMAGE.nbpf
                                                   write the image of the object's XDP program
    nanobpf-load OBJ.o --info [-p PROG]            list programs, maps and instruction count
    nanobpf-load OBJ.o --json [-p PROG]            the same as JSON on standard output

A program named with -p or -s may be in any code section (libxdp loads old-style sections such as
SEC("xdp_pass") by name). --map-size sets a map's max_entries as libbpf's bpf_map__set_max_entries
does; a map declared with max_entries 0 and not named gets the default (a note on standard error).

The object is built with `clang -O2 -g -target bpf -c` (docs/ebpf.md). Exit status: 0 done, 1 the
object cannot become an image (message "nanobpf-load: error: ..." on standard error), 2 usage.
Runs with the project venv (pyelftools; libbpf.so.1 reads BTF).
"""
import argparse
import json
import os
import sys
from pathlib import Path
from nanobpf import ROOT


PROG = "nanobpf-load"


def fail(msg, code=1):
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    return code


def describe(ld, obj, program, section, sizes):
    """Programs of the object and, when one can be chosen, its image summary."""
    progs = ld.programs(obj)
    out = {"object": str(obj),
           "programs": [{"name": p.name, "section": p.section, "xdp": p.xdp, "insns": p.insns} for p in progs]}
    xdp = [p for p in progs if p.xdp]
    if program is not None or section is not None or len(xdp) == 1:
        img = ld.load(obj, program, section, sizes)
        out["image"] = img.summary()
        out["image"]["bytes"] = len(img.to_bytes())
    elif len(xdp) > 1:
        out["note"] = "several XDP programs: choose one with -p"
    return out


def print_info(d):
    print(f"object {d['object']}")
    print("programs:")
    for p in d["programs"]:
        kind = "xdp" if p["xdp"] else "not XDP"
        print(f"  {p['name']:<24} section {p['section']:<16} {p['insns']:>5} insns  ({kind})")
    if "note" in d:
        print(d["note"])
    img = d.get("image")
    if not img:
        return
    fn = ", ".join(f"{f['name']}@{f['start']}" + (f" global {f['global']}" if "global" in f else "")
                   for f in img["functions"])
    print(f"image: program {img['program']} (section {img['section']}), {img['insns']} instructions "
          f"[{fn}], {len(img['maps'])} map(s), {img['bytes']} bytes")
    if len(img["programs"]) > 1:  # bpf_tail_call's targets: what a PROG_ARRAY element holds to name one
        print("  programs for PROG_ARRAY values: " + ", ".join(f"{k} {n}" for k, n in enumerate(img["programs"])))
    if img["maps"]:
        print(f"  {'#':>2} {'name':<31} {'type':<15} {'key':>5} {'value':>6} {'entries':>8}  init  pinned")
    for m in img["maps"]:
        print(f"  {m['index']:>2} {m['name']:<31} {m['type']:<15} {m['key_size']:>5} {m['value_size']:>6} "
              f"{m['max_entries']:>8}  {m['init_size'] or '-':<4}  {'by name' if m['pinned'] else '-'}")
    for n in img["notes"]:
        print(f"note: {n}")


def map_size(text):
    """NAME=N of --map-size."""
    name, eq, n = text.partition("=")
    try:
        entries = int(n, 0)
    except ValueError:
        entries = 0
    if not eq or not name or entries <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME=N with N > 0")
    return name, entries


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0],
                                 epilog="Exit status: 0 done, 1 refused (message on stderr), 2 usage.")
    ap.add_argument("object", help="BPF object (clang -O2 -g -target bpf -c)")
    ap.add_argument("-p", "--program", metavar="PROG", help="function name of the XDP program "
                    "(needed when the object has several)")
    ap.add_argument("-s", "--section", metavar="SECTION", help="ELF section of the XDP program (as xdp-loader -s)")
    ap.add_argument("--map-size", metavar="NAME=N", type=map_size, action="append", default=[],
                    help="max_entries of map NAME (repeatable); needed or defaulted for maps declared with 0")
    ap.add_argument("-o", "--output", metavar="IMAGE", help="write the device image here (.nbpf)")
    ap.add_argument("--info", action="store_true", help="print programs, maps and instruction count")
    ap.add_argument("--json", action="store_true", help="print the same information as JSON")
    a = ap.parse_args(argv)
    if not (a.output or a.info or a.json):
        ap.error("nothing to do: give -o IMAGE, --info or --json")
    if a.info and a.json:
        ap.error("--info and --json are alternatives")
    try:
        import elftools  # noqa: F401  (pyelftools lives in the project venv)
    except ImportError:
        venv = ROOT / "build/venv/bin/python"
        if venv.exists() and Path(sys.prefix).resolve() != venv.parents[1].resolve() and argv is None:
            os.execv(str(venv), [str(venv), __file__, *sys.argv[1:]])
        return fail("pyelftools is not installed: run with the project venv (build/venv/bin/python)", 2)
    try:
        from nanobpf.ebpf import loader as ld
    except ImportError as e:
        if getattr(e, "name", "") == "nanobpf_ebpf_defs":
            return fail("build/generated/python/nanobpf_ebpf_defs.py missing: run `make defs`", 2)
        return fail(f"cannot import the loader ({e}): run with the project venv (build/venv/bin/python)", 2)
    sizes = dict(a.map_size)
    if len(sizes) != len(a.map_size):
        ap.error("--map-size names a map twice")
    try:
        if a.output:
            img = ld.load(a.object, a.program, a.section, sizes)
            for n in img.notes:
                print(f"{PROG}: note: {n}", file=sys.stderr)
            blob = img.to_bytes()
            try:
                Path(a.output).write_bytes(blob)
            except OSError as e:
                return fail(f"{a.output}: {e.strerror}")
        if a.info or a.json:
            d = describe(ld, a.object, a.program, a.section, sizes)
            if a.json:
                print(json.dumps(d, indent=2))
            else:
                print_info(d)
    except ld.LoadError as e:
        return fail(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
