"""The board's boot path in simulation (`make board-boot-sim`, marked long: a Verilator model of its own).

A 1-core SoC built with the board's boot ROM (firmware/bootrom with NANOBPF_BOOT_COPY_IMAGE) and the
board firmware (board-sim.hex) in its fw_image ROM; main memory is the behavioural RAM, loaded with
hello.hex. The board firmware's console lines prove that hart 0 copied the image over main memory and
ran it (fence.i included); hello's would mean it did not.
"""
import subprocess

import pytest

from nanobpf import ROOT


@pytest.mark.long
def test_boot_rom_copies_the_firmware_image_into_main_memory():
    r = subprocess.run(["make", "-s", "board-boot-sim"], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert "NanoBPF 1 core(s), console on the UART" in out and "board firmware done" in out, out[-3000:]
    assert "hello from hart 0" not in out, out[-3000:]
    assert "PASS: exit code 0" in out and " 0 bus error(s)" in out, out[-3000:]
