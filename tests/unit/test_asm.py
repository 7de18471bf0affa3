"""The test assembler (nanobpf.ebpf.asm): encodings checked against bytes derived by hand from RFC 9669
section 3 (opcode, dst/src nibbles, little-endian off and imm), labels, map references and errors."""
import pytest

from nanobpf.ebpf.asm import AsmError, assemble, parse_test


def h(s):
    return bytes.fromhex(s.replace(" ", ""))


# (source, expected bytes). Opcode = operation | source | class; byte 1 = src << 4 | dst.
ENCODINGS = [
    ("mov r0, 1", "b7 00 0000 01000000"),                 # ALU64 0x07 | MOV 0xb0 | K
    ("mov r1, -1", "b7 01 0000 ffffffff"),
    ("mov r0, 0x80000000", "b7 00 0000 00000080"),        # 0x80000000 wraps to imm -2^31
    ("mov r9, r10", "bf a9 0000 00000000"),               # X: 0x08; src 10, dst 9
    ("add32 r1, r2", "0c 21 0000 00000000"),              # ALU 0x04 | X | ADD 0x00
    ("sub r3, 7", "17 03 0000 07000000"),
    ("mul32 r4, r5", "2c 54 0000 00000000"),
    ("div r0, 3", "37 00 0000 03000000"),
    ("sdiv r0, r1", "3f 10 0100 00000000"),               # signed: off = 1
    ("mod32 r2, r3", "9c 32 0000 00000000"),
    ("smod32 r0, 3", "94 00 0100 03000000"),
    ("or r1, 0xff", "47 01 0000 ff000000"),
    ("and32 r1, r2", "5c 21 0000 00000000"),
    ("lsh r1, 63", "67 01 0000 3f000000"),
    ("rsh32 r1, r2", "7c 21 0000 00000000"),
    ("arsh r1, 1", "c7 01 0000 01000000"),
    ("xor r1, r2", "af 21 0000 00000000"),
    ("neg r0", "87 00 0000 00000000"),
    ("neg32 r2", "84 02 0000 00000000"),
    ("movsx8 r0, r1", "bf 10 0800 00000000"),             # MOVSX: off = 8/16/32
    ("movsx32 r0, r1", "bf 10 2000 00000000"),
    ("movsx16_32 r2, r3", "bc 32 1000 00000000"),
    ("le16 r0", "d4 00 0000 10000000"),                   # ALU | END 0xd0 | TO_LE (0x00), imm = width
    ("be32 r3", "dc 03 0000 20000000"),                   # TO_BE sets the source bit
    ("bswap64 r0", "d7 00 0000 40000000"),                # ALU64 | END: unconditional swap
    ("ldxw r0, [r1+2]", "61 10 0200 00000000"),           # LDX 0x01 | MEM 0x60 | W 0x00
    ("ldxb r0, [r1]", "71 10 0000 00000000"),
    ("ldxh r0, [r1+0x10]", "69 10 1000 00000000"),
    ("ldxdw r5, [r10-16]", "79 a5 f0ff 00000000"),
    ("ldxsh r2, [r3-2]", "89 32 feff 00000000"),          # MEMSX 0x80 | H 0x08
    ("ldxsb r2, [r3]", "91 32 0000 00000000"),
    ("ldxsw r2, [r3]", "81 32 0000 00000000"),
    ("stxdw [r10-8], r1", "7b 1a f8ff 00000000"),         # STX 0x03 | MEM | DW 0x18
    ("stxb [r1+1], r2", "73 21 0100 00000000"),
    ("stb [r1+4], 7", "72 01 0400 07000000"),             # ST 0x02
    ("sth [r1+4], -2", "6a 01 0400 feffffff"),
    ("stw [r1+0], 1", "62 01 0000 01000000"),
    ("stdw [r10-8], 0", "7a 0a f8ff 00000000"),
    ("jeq r1, 5, +2", "15 01 0200 05000000"),             # JMP 0x05 | JEQ 0x10 | K
    ("jne r1, r2, -1", "5d 21 ffff 00000000"),
    ("jsgt32 r1, r2, +1", "6e 21 0100 00000000"),         # JMP32 0x06 | JSGT 0x60 | X
    ("jset32 r1, 8, 0", "46 01 0000 08000000"),
    ("jlt r3, -1, 3", "a5 03 0300 ffffffff"),
    ("jsle32 r0, 0, 1", "d6 00 0100 00000000"),
    ("ja +3", "05 00 0300 00000000"),
    ("ja32 +70000", "06 00 0000 70110100"),               # gotol: offset in imm
    ("call 1", "85 00 0000 01000000"),
    ("exit", "95 00 0000 00000000"),
    ("lock add [r1+0], r2", "db 21 0000 00000000"),       # STX | ATOMIC 0xc0 | DW, imm = operation
    ("lock fetch_add32 [r1+4], r2", "c3 21 0400 01000000"),
    ("lock or [r1], r2", "db 21 0000 40000000"),
    ("lock fetch_and [r1], r2", "db 21 0000 51000000"),
    ("lock fetch_xor32 [r1], r2", "c3 21 0000 a1000000"),
    ("lock xchg [r10-8], r3", "db 3a f8ff e1000000"),
    ("lock cmpxchg32 [r1+8], r4", "c3 41 0800 f1000000"),
]


@pytest.mark.parametrize("src,want", ENCODINGS, ids=[e[0] for e in ENCODINGS])
def test_encoding(src, want):
    assert assemble(src, helpers={}) == h(want)


def test_lddw_takes_two_slots():
    assert assemble("lddw r0, 0x1122334455667788", helpers={}) == h("18 00 0000 88776655  00 00 0000 44332211")
    # the low half is stored as is: 0x80000000 does not leak into the high slot
    assert assemble("lddw r3, 0x80000000", helpers={}) == h("18 03 0000 00000080  00 00 0000 00000000")
    assert assemble("lddw r1, -1", helpers={}) == h("18 01 0000 ffffffff  00 00 0000 ffffffff")


def test_map_references():
    # src 5 (map by index) and 6 (map value by index, offset in the second slot's imm), RFC 9669 5.4
    assert assemble("lddw r1, map:3", helpers={}) == h("18 51 0000 03000000  00 00 0000 00000000")
    assert assemble("lddw r2, mapval:2+8", helpers={}) == h("18 62 0000 02000000  00 00 0000 08000000")
    assert assemble("lddw r2, mapval:0", helpers={}) == h("18 62 0000 00000000  00 00 0000 00000000")


def test_backward_jump_to_label():
    code = assemble("""
        mov r0, 0
    loop:
        add r0, 1
        jne r0, 10, loop    # insn 2 -> insn 1: off = 1 - 2 - 1 = -2
        exit
    """, helpers={})
    assert code[16:24] == h("55 00 feff 0a000000")
    assert len(code) == 4 * 8


def test_forward_jump_counts_lddw_as_two_slots():
    code = assemble("ja end\nlddw r0, 1\nend: exit", helpers={})
    assert code[:8] == h("05 00 0200 00000000")       # end is slot 3: 3 - 0 - 1
    assert len(code) == 4 * 8


def test_label_on_its_own_line_and_several_labels():
    code = assemble("a:\nb: c: ja a\nja32 c", helpers={})
    assert code == h("05 00 ffff 00000000  06 00 0000 feffffff")


def test_local_call_offset():
    code = assemble("call @f\nexit\nf:\nmov r0, 1\nexit", helpers={})
    assert code[:8] == h("85 10 0000 01000000")       # src 1 (pseudo call), imm = 2 - 0 - 1
    code = assemble("ja main\nf: exit\nmain: call @f\nexit", helpers={})
    assert code[16:24] == h("85 10 0000 feffffff")    # 1 - 2 - 1 = -2


def test_call_helper_by_name():
    assert assemble("call map_lookup_elem", helpers={"map_lookup_elem": 1}) == h("85 00 0000 01000000")
    # default helper table: the ABI definition's ids
    import nanobpf_ebpf_defs
    hid = nanobpf_ebpf_defs.HELPER_IDS["map_update_elem"]
    assert assemble("call map_update_elem") == h("85 00 0000") + hid.to_bytes(4, "little")


def test_comments():
    code = assemble("mov r0, 1 # a\nmov r0, 2 ; b\nmov r0, 3 // c\n# only a comment\n\nexit", helpers={})
    assert len(code) == 4 * 8


@pytest.mark.parametrize("src,line,what", [
    ("exit\nfrob r0, 1", 2, "unknown instruction"),
    ("mov r11, 1", 1, "not a register"),
    ("exit\nexit\nadd rx, 1", 3, "not a register"),
    ("ldxw r0, [r12+0]", 1, "not a register"),
    ("ja nowhere", 1, "unknown label"),
    ("mov r0, 1\njeq r0, 1, missing\nexit", 2, "unknown label"),
    ("ja +32768", 1, "does not fit"),
    ("jeq r0, 0, -32769", 1, "does not fit"),
    ("mov r0, 1\nmov r0, 1x", 2, "not a number"),
    ("a: exit\na: exit", 2, "defined twice"),
    ("mov r0", 1, "operand"),
    ("exit r0", 1, "operand"),
    ("ldxsdw r0, [r1+0]", 1, "sign-extending 8-byte"),
    ("movsx32_32 r0, r1", 1, "does not exist"),
    ("ldxw r0, r1", 1, "memory operand"),
    ("lock nand [r1+0], r2", 1, "atomic"),
])
def test_errors_name_the_line(src, line, what):
    with pytest.raises(AsmError, match=rf"line {line}\b.*{what}"):
        assemble(src, helpers={})


def test_label_jump_out_of_16_bit_range():
    body = "ja far\n" + "mov r0, 0\n" * 32768 + "far: exit\n"   # off = 32768: one too far for JA
    with pytest.raises(AsmError, match=r"line 1\b.*does not fit"):
        assemble(body, helpers={})
    code = assemble(body.replace("ja far", "ja32 far"), helpers={})    # gotol reaches it
    assert code[:8] == h("06 00 0000 00800000")


def test_parse_test_sections():
    t = parse_test("""# comment before any section
-- asm
mov r0, 1
exit
-- mem
00 01  # comment
ff
-- result
0x10
""")
    assert t["asm"] == "mov r0, 1\nexit\n"
    assert t["mem"] == b"\x00\x01\xff"
    assert t["result"] == 16
    t = parse_test("-- raw\n95 00 00 00\n00 00 00 00\n-- error\nout of bounds\n")
    assert t["raw"] == h("95 00 0000 00000000")
    assert t["error"].strip() == "out of bounds"
    assert "asm" not in t and "result" not in t
