"""nanobpf.bootcfg: the data-plane firmware's boot configuration (map entries and device settings)
round-trips, refuses what the firmware could not take, and builds the @sched setting from the
pkt.sched register's definition in hw/defs/soc.toml."""
import struct

import pytest

import nanobpf_soc as soc
from nanobpf import bootcfg


def test_round_trip():
    entries = [("quic_ports", struct.pack("<H", 443), struct.pack("<I", 1)), ("quic_config", b"\0" * 4, b"\x07" * 16),
               bootcfg.sched("sjbsq")]
    blob = bootcfg.pack(entries)
    assert blob[:4] == b"NBCF" and bootcfg.parse(blob) == entries


@pytest.mark.parametrize("blob,why", [(b"XXXX\0\0\0\0", "magic"), (b"NBCF\x01\0\0\0\x03ab", "entry 0"),
                                      (bootcfg.pack([("m", b"k", b"v")]) + b"!", "after the last entry")])
def test_damaged_blobs_are_refused(blob, why):
    with pytest.raises(ValueError, match=why):
        bootcfg.parse(blob)


def test_names_and_sizes_that_cannot_be_packed():
    with pytest.raises(ValueError):
        bootcfg.pack([("", b"", b"")])
    with pytest.raises(ValueError):
        bootcfg.pack([("m", bytes(0x10000), b"")])


def test_sched_setting_follows_the_register_definition():
    reg = soc.REGS[("pkt", "sched")]
    (pshift, pwidth), (bshift, bwidth) = reg.fields["policy"], reg.fields["bound"]
    for policy, value in soc.ENUMS["pkt_policy"].items():
        name, key, v = bootcfg.sched(policy, bound=3)
        word = struct.unpack("<I", v)[0]
        assert name == "@sched" and key == b""
        assert (word >> pshift) & ((1 << pwidth) - 1) == value and (word >> bshift) & ((1 << bwidth) - 1) == 3
    default_bound = (reg.reset >> bshift) & ((1 << bwidth) - 1)
    assert (struct.unpack("<I", bootcfg.sched("jbsq")[2])[0] >> bshift) & ((1 << bwidth) - 1) == default_bound


@pytest.mark.parametrize("policy,bound", [("fifo", None), ("jbsq", 0), ("jbsq", 1 << 6)])
def test_bad_sched_settings_are_refused(policy, bound):
    with pytest.raises(ValueError):
        bootcfg.sched(policy, bound)


def test_table_setting_is_a_table_set_body():
    """@table carries the control protocol's table_msg, the word packed from the soc.toml register's
    fields (the firmware checks it as TABLE_SET's)."""
    import nanobpf_ctrl_defs as D
    name, key, v = bootcfg.table("profile", 2, valid=1, lport=1, udp_port=443, short_cid_len=8)
    assert name == "@table" and key == b"" and len(v) == D.TABLE_MSG_SIZE
    table, reserved, index, word = struct.unpack(">BBHI", v)
    assert (table, reserved, index) == (D.NANOBPF_CTRL_TABLE_PROFILE, 0, 2)
    assert word == soc.pack("pisa", "profile_entry", valid=1, lport=1, udp_port=443, short_cid_len=8)
    assert soc.unpack("pisa", "profile_entry", word)["short_cid_len"] == 8
    with pytest.raises(ValueError, match="unknown PISA table"):
        bootcfg.table("cid", 0)
