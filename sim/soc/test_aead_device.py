"""The AES-128-GCM engine in the SoC, driven by CVA6 cores (firmware/apps/aead): every core seals and
opens the NIST GCM test case 4 at the same time through its own request registers and sees a forgery
refused; core 0 seals and opens RFC 9001's client and server Initial packets to the RFC's bytes and
checks a header protection mask. The firmware compares every byte and the engine's counters."""
import re

import pytest

from nanobpf import sim


@pytest.mark.parametrize("cores", [1, 4])
def test_aead_engine_from_the_cores(cores):
    r = sim.run(cores, "aead", max_cycles=3_000_000)
    assert r.returncode == 0, r.output
    assert r.verdict == "PASS" and r.bus_errors == 0
    for h in range(cores):
        assert any(line.startswith("NIST GCM case 4 sealed, opened, forgery refused") for line in r.lines(h)), r.lines(h)
    lines = r.lines(0)
    assert any(re.match(r"RFC 9001 A.2 client Initial: 1162-byte payload sealed in \d+ engine cycles", x) for x in lines)
    assert any(re.match(r"RFC 9001 A.3 server Initial: 99-byte payload sealed", x) for x in lines)
    assert f"engine counters: {3 * cores + 6} requests, {2 * cores + 6} ok, {cores} tag mismatches" in lines
    assert lines[-1] == f"PASS: AEAD engine on {cores} core(s)"
