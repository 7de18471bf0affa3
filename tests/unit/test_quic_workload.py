"""The QUIC traffic of the DPU tests, benchmark and demo (nanobpf.quic.workload, nanobpf.quic.demo):
deterministic, the first connections' keys independent of how many follow (a firmware's boot
configuration serves smaller workloads), exact frame sizes, and expectations that are the reference
protection's."""
import pytest

from nanobpf import ctrl
from nanobpf.pcap import parse_udp
from nanobpf.quic.demo import demo_traffic
from nanobpf.quic.workload import workload


def test_deterministic_and_prefix_stable():
    a, b = workload(seed=1), workload(seed=1)
    assert a.net == b.net and a.host == b.host and a.boot == b.boot
    one = workload(seed=1, connections=1, packets=9)
    assert one.keys == a.keys[:2]


@pytest.mark.parametrize("size", [80, 256, 512, 1200, 1500])
def test_frame_size(size):
    w = workload(seed=1, connections=1 if size < 128 else 6, packets=5, frame_size=size)   # IPv6 ones need 128
    assert {len(f) for f in w.net + w.expect_net} == {size}


def test_too_short_a_frame_is_refused():
    with pytest.raises(ValueError, match="too short"):
        workload(seed=1, connections=1, frame_size=70)


def test_demo_without_a_capture(tmp_path):
    d = demo_traffic(tmp_path)                    # no meta.json there: no aioquic part
    assert "aioquic" not in d.parts and d.parts["rfc9001"] == (0, 1)
    assert len(d.host) == len(d.expect_net) and len(d.net) == len(d.expect_host)
    # the RFC 9001 A.2 Initial comes out opened: the reference's plaintext with the DECRYPTED shim
    initial = ctrl.strip_shim(d.expect_host[-1])[2]
    assert parse_udp(initial).payload[0] & 0x80 and len(parse_udp(d.net[-1]).payload) == len(parse_udp(initial).payload) + 16
    # its settings are PISA's QUIC profiles of the server's port only (no core select policy): on the
    # network's logical port and, for the seal path, on the host's
    settings = [(name, value) for name, _, value in d.boot if name.startswith("@")]
    assert {name for name, _ in settings} == {"@table"} and len(settings) == 2


def test_profiles_fill_pisas_table_or_say_why():
    import nanobpf_soc as soc
    from nanobpf.quic.workload import profiles
    n = soc.REGS[("pisa", "profile_entry")].count
    assert len(profiles(range(443, 443 + n // 2), 8)) == n
    with pytest.raises(ValueError, match="profile entries"):
        profiles(range(443, 443 + n // 2 + 1), 8)
