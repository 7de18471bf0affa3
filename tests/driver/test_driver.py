"""nanobpf.ko in QEMU against the reference device model (docs/control.md, section "nanobpf.ko").

One file on purpose (about 1,200 lines): every test shares one booted guest and its fixtures (the
initramfs, the TAP, the model); pytest fixtures do not cross files without a conftest.

Debian's kernel (/boot/vmlinuz-<ver>, the version of the installed linux-headers-*-amd64) boots in
QEMU (TCG) from a busybox initramfs built here: the virtio-net modules of that kernel, nanobpf.ko
(build/driver), nanobpfctl-static (build/host) and nbtest (tests/driver/guest/nbtest.c, built static
here: raw generic netlink, bulk key operations, UDP with SO_MARK/SO_RCVMARK). The guest NIC is a TAP
this test creates; the reference device model (nanobpf.devmodel) answers on it through AF_PACKET, with
a second TAP as its network port. The guest runs one shell command per line read from a second serial
port (a UNIX socket here) and answers with its output and exit status; the kernel console (first
serial port) is logged and must show no BUG/WARNING/Oops/Call Trace.

Two boots, each a test (they run in parallel under pytest-xdist):
  test_control_path        (a) attach, key add/update/del/list checked against the model's table
                           (entries of both directions, zero-length CIDs by peer address);
                           (b) a real program image (xdp_quic), prog show, map update/lookup/dump;
                           (c) device and driver counters (netlink, debugfs); (d) control-frame loss,
                           duplication and reordering during many key operations: device table ==
                           host table, no request applied twice; (e) device resets in the middle of
                           a sequence and while idle (keepalive): the driver replays and converges;
                           DEV_RESET; detach/attach keeps the host table.
  test_netlink_and_data    (f) malformed and fuzzed netlink messages all get errors, device refusals
                           roll back and show in DEV_GET; (g) the data path: SO_MARK = encrypt mark
                           base | CID length -> sealed by the model's QUIC program with the seal entry
                           (also a zero-length CID by address), a length above 20 dropped and counted,
                           a seal request without keys never on the network; protected packets from
                           the network -> delivered with the decrypt mark (SO_RCVMARK), other frames
                           unmarked; the encrypt_mark parameter refuses a base with a low byte;
                           lower device unregistered under the driver, module unloaded while a
                           request is in flight.
Both run against the model in make test and against the RTL DPU in make test-long (parameter "rtl",
marker long): RtlRig puts nanobpf.faults.Relay between the guest's TAP and the simulation's host TAP
(faults, resets as another host would send them, the device's answers recorded) and RtlView reads the
device's state through the driver; the data path there runs xdp_quic_hw on the AEAD engine.
test_rtl_smoke (make test) is a short boot against the RTL DPU. test_one_arm_host (make test) is the host
side of the board's one-arm mode: the driver on a VLAN sub-interface (eth0.10) against the model on
that VLAN of the guest's link. test_device_key (make test) is the device key against the model: a wrong
key's attach times out naming the key, forged and replayed answers are counted and not believed.
Skipped only when qemu-system-x86_64 or the kernel image is absent.
"""
import json
import os
import platform
import re
import shutil
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi
from nanobpf import BUILD, ROOT
from nanobpf import ctrl, ctrlkey
from nanobpf.ctrl import OPEN, SEAL, KeyId, PacketPort, TapPort, addr_id, key_id
from nanobpf.devmodel import HOST_PORT, NET_PORT, DeviceModel


def _kernel_version():
    """The newest installed linux-headers-*-amd64 (what sw/driver/Makefile builds against)."""
    vers = [p.name[len("linux-headers-"):] for p in Path("/usr/src").glob("linux-headers-*-amd64")]
    if not vers:
        return None
    key = lambda v: [int(x) if x.isdigit() else x for x in re.split(r"[.-]", v)]
    return sorted(vers, key=key)[-1]


KVER = _kernel_version()
KERNEL = Path(f"/boot/vmlinuz-{KVER}") if KVER else None
MODDIR = Path(f"/lib/modules/{KVER}") if KVER else None
QEMU = shutil.which("qemu-system-x86_64")
DRIVER = BUILD / "driver/nanobpf.ko"
CTL = BUILD / "host/nanobpfctl-static"
QUIC_HW_IMAGE = BUILD / "firmware/bpf/xdp_quic_hw.nbpf"
GUEST_MAC = "52:54:00:4e:42:10"
PEER_MAC = "02:4e:42:00:00:99"       # the network-side peer of the guest (static neighbour entry)
GUEST_IP, PEER_IP = "10.0.0.2", "10.0.0.1"
BOOT_TIMEOUT = 120
LOG_BAD = re.compile(r"BUG[: ]|WARNING:|Oops|Call Trace|general protection|Kernel panic|kernel BUG|RIP: ")

pytestmark = pytest.mark.skipif(not QEMU or not KERNEL or not KERNEL.exists(),
                                reason=f"needs qemu-system-x86_64 ({QEMU or 'absent'}) and "
                                       f"{KERNEL or '/boot/vmlinuz-<linux-headers version>'}")

# virtio-net on q35: PCI transport, the NIC and its failover dependency; 802.1Q for the one-arm host;
# the control channel's crypto (modules in Debian's 6.1): gcm(aes) is built from the gcm template with
# ctr(aes) and ghash, cmac(aes) from the cmac template (aes itself is built in). Loaded before
# nanobpf.ko: the guest has no modprobe to load them on demand.
GUEST_MODULES = ["virtio_pci", "virtio_net", "8021q", "gcm", "ghash_generic", "ctr", "cmac"]

# The device key (docs/control.md "The device key"): the model's (ctrlkey.default(), the key the RTL
# DPU's image is built with) in the guest as /ctrl.key; every attach names it. /wrong.key is another.
KEY_FILE, WRONG_KEY_FILE = "/ctrl.key", "/wrong.key"
KEY = f"key {KEY_FILE}"
WRONG_KEY = bytes(range(0xa0, 0xb0))
NO_ANSWER = "no answer from the device: check the device key"


# ---------------------------------------------------------------- initramfs
def _module_order(names):
    """Module files (relative to MODDIR) in load order, dependencies first (modules.dep)."""
    deps = {}
    for line in (MODDIR / "modules.dep").read_text().splitlines():
        mod, _, rest = line.partition(":")
        deps[mod] = rest.split()
    by_name = {re.sub(r"\.ko(\.xz|\.zst|\.gz)?$", "", Path(m).name).replace("-", "_"): m for m in deps}
    order = []

    def visit(m):
        if m in order:
            return
        for d in deps[m]:
            visit(d)
        order.append(m)

    for n in names:
        if n not in by_name:
            raise FileNotFoundError(f"module {n} not in {MODDIR}/modules.dep")
        visit(by_name[n])
    return order


def _module_bytes(rel):
    data = (MODDIR / rel).read_bytes()
    if rel.endswith(".xz"):
        import lzma
        data = lzma.decompress(data)
    elif rel.endswith(".gz"):
        import gzip
        data = gzip.decompress(data)
    elif rel.endswith(".zst"):
        data = subprocess.run(["zstd", "-dc", str(MODDIR / rel)], check=True, capture_output=True).stdout
    return data


def _cpio(entries):
    """A newc cpio archive of (name, mode, data, rdev) entries."""
    out = bytearray()

    def pad():
        out.extend(b"\0" * (-len(out) % 4))

    for ino, (name, mode, data, rdev) in enumerate(entries + [("TRAILER!!!", 0, b"", (0, 0))], 1):
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name) + 1, 0)
        out += b"070701" + "".join(f"{v:08x}" for v in fields).encode() + name.encode() + b"\0"
        pad()
        out += data
        pad()
    return bytes(out)


INIT = r"""#!/bin/sh
export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6
echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6
while read -r m; do insmod "/lib/modules/$m" || echo "nbpf-init: insmod $m failed"; done < /modules.order
n=0; while [ ! -d /sys/class/net/eth0 ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done
ip link set lo up
ip link set eth0 up
insmod /nanobpf.ko || echo "nbpf-init: insmod nanobpf.ko failed"
stty -F /dev/ttyS1 raw -echo
# The command loop is not PID 1: background commands that outlive their shell become children of
# PID 1, and their SIGCHLD interrupting busybox's `read` would lose the part of a line already read.
sh /cmdloop
echo nbpf-init: powering off
poweroff -f
"""

CMDLOOP = r"""exec 3<>/dev/ttyS1
echo NBPF-READY >&3
while IFS= read -r line <&3; do
    [ "$line" = NBPF-POWEROFF ] && break
    sh -c "$line" > /tmp/cmd.out 2>&1 < /dev/null
    rc=$?
    cat /tmp/cmd.out >&3
    echo "NBPF-DONE $rc" >&3
done
"""


def _key_text(key):
    return f"# NanoBPF device key (test)\n{key.hex()}\n".encode()


def guest_base(init):
    """The initramfs entries every guest here has: directories, busybox, the kernel modules of
    GUEST_MODULES in load order, nanobpf.ko, nanobpfctl, the model's device key as KEY_FILE, `init`
    (the text given) and the command loop. Callers add their own files."""
    entries = [(p, 0o40755, b"", (0, 0)) for p in
               ("bin", "dev", "proc", "sys", "tmp", "lib", "lib/modules", "etc")]
    entries.append(("dev/console", 0o20600, b"", (5, 1)))
    entries.append(("bin/busybox", 0o100755, Path("/bin/busybox").read_bytes(), (0, 0)))
    entries.append(("bin/sh", 0o120777, b"busybox", (0, 0)))
    names = []
    for rel in _module_order(GUEST_MODULES):
        name = re.sub(r"\.(xz|zst|gz)$", "", Path(rel).name)
        entries.append((f"lib/modules/{name}", 0o100644, _module_bytes(rel), (0, 0)))
        names.append(name)
    entries.append(("modules.order", 0o100644, ("\n".join(names) + "\n").encode(), (0, 0)))
    entries.append(("nanobpf.ko", 0o100644, DRIVER.read_bytes(), (0, 0)))
    entries.append(("bin/nanobpfctl", 0o100755, CTL.read_bytes(), (0, 0)))
    entries.append((KEY_FILE[1:], 0o100600, _key_text(ctrlkey.default().key), (0, 0)))
    entries.append(("init", 0o100755, init.encode(), (0, 0)))
    entries.append(("cmdloop", 0o100644, CMDLOOP.encode(), (0, 0)))
    return entries


@pytest.fixture(scope="module")
def initramfs(tmp_path_factory, quic_image, stand_in_image, events_image):
    for f, how in ((DRIVER, "make driver"), (CTL, "make host-tools")):
        if not f.exists():
            pytest.fail(f"{f} is missing ({how})")
    d = tmp_path_factory.mktemp("initramfs")
    nbtest = d / "nbtest"
    subprocess.run(["gcc", "-static", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{BUILD}/generated/include",
                    "-o", str(nbtest), str(ROOT / "tests/driver/guest/nbtest.c")], check=True)
    entries = guest_base(INIT)
    entries.append(("bin/nbtest", 0o100755, nbtest.read_bytes(), (0, 0)))
    entries.append(("xdp_quic.nbpf", 0o100644, quic_image.read_bytes(), (0, 0)))
    entries.append(("xdp_ctrl_test.nbpf", 0o100644, stand_in_image.read_bytes(), (0, 0)))
    entries.append(("xdp_events_test.nbpf", 0o100644, events_image.read_bytes(), (0, 0)))
    if QUIC_HW_IMAGE.exists():        # for the RTL DPU (its AEAD engine), built by make firmware
        entries.append(("xdp_quic_hw.nbpf", 0o100644, QUIC_HW_IMAGE.read_bytes(), (0, 0)))
    entries.append((WRONG_KEY_FILE[1:], 0o100600, _key_text(WRONG_KEY), (0, 0)))
    path = d / "initramfs.cpio"
    path.write_bytes(_cpio(entries))
    return path


@pytest.fixture(scope="module")
def quic_image(tmp_path_factory):
    """xdp_quic.c as a device load image (clang, then nanobpf-load)."""
    d = tmp_path_factory.mktemp("bpf")
    obj, img = d / "xdp_quic.o", d / "xdp_quic.nbpf"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror",
                    f"-I/usr/include/{platform.machine()}-linux-gnu", f"-I{ROOT}/sw/ebpf/include",
                    f"-I{BUILD}/generated/include", "-c", str(ROOT / "sw/ebpf/quic/xdp_quic.c"), "-o", str(obj)],
                   check=True)
    subprocess.run([str(BUILD / "venv/bin/python"), "-m", "nanobpf.ebpf.cli", str(obj), "-o", str(img)],
                   check=True)
    return img


def _sim_ctrl_image(tmp_path_factory, name):
    d = tmp_path_factory.mktemp(f"bpf-{name}")
    obj, img = d / f"{name}.o", d / f"{name}.nbpf"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-Wall", "-Werror",
                    f"-I/usr/include/{platform.machine()}-linux-gnu", f"-I{BUILD}/generated/include",
                    "-c", str(ROOT / f"tests/ctrl/{name}.c"), "-o", str(obj)], check=True)
    subprocess.run([str(BUILD / "venv/bin/python"), "-m", "nanobpf.ebpf.cli", str(obj), "-o", str(img)],
                   check=True)
    return img


@pytest.fixture(scope="module")
def stand_in_image(tmp_path_factory):
    """tests/ctrl/xdp_ctrl_test.c (the QUIC maps, no crypto, behaviour by test_mode[0]) as an image: small
    enough to be verified on the simulated DPU's core 0 in seconds."""
    return _sim_ctrl_image(tmp_path_factory, "xdp_ctrl_test")


@pytest.fixture(scope="module")
def events_image(tmp_path_factory):
    """tests/ctrl/xdp_events_test.c (per frame a perf event and a ring buffer record) as an image."""
    return _sim_ctrl_image(tmp_path_factory, "xdp_events_test")


# ---------------------------------------------------------------- the guest
class Guest:
    """QEMU with the test initramfs: run(cmd) executes one shell command in the guest."""

    def __init__(self, workdir, initrd, tap):
        self.workdir = workdir
        self.sock_path = workdir / "cmd.sock"
        self.console_path = workdir / "console.log"
        self.console = bytearray()
        self.buf = b""
        args = [QEMU, "-machine", "q35,accel=tcg", "-m", "512", "-smp", "1", "-nographic", "-no-reboot",
                "-kernel", str(KERNEL), "-initrd", str(initrd), "-append", "console=ttyS0 panic=-1",
                "-netdev", f"tap,id=n0,ifname={tap},script=no,downscript=no",
                "-device", f"virtio-net-pci,netdev=n0,mac={GUEST_MAC}",
                "-chardev", f"socket,id=cmd,path={self.sock_path},server=on,wait=on",
                "-serial", "mon:stdio", "-serial", "chardev:cmd"]      # ttyS0 console, ttyS1 commands
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self._pump_thread = threading.Thread(target=self._pump, daemon=True)
        self._pump_thread.start()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        end = time.monotonic() + 30
        while True:
            try:
                self.sock.connect(str(self.sock_path))
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > end or self.proc.poll() is not None:
                    raise RuntimeError(f"QEMU did not open its command socket:\n{self.console_text()[-3000:]}")
                time.sleep(0.05)
        self._read_until(rb"NBPF-READY\n", BOOT_TIMEOUT)
        self.boot_seconds = time.monotonic() - self.t0

    def _pump(self):
        with open(self.console_path, "wb") as log:
            while True:
                chunk = self.proc.stdout.read1(4096)
                if not chunk:
                    break
                self.console += chunk
                log.write(chunk)
                log.flush()

    def console_text(self):
        return bytes(self.console).decode(errors="replace")

    def _read_until(self, pattern, timeout):
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        while True:
            m = rx.search(self.buf)
            if m:
                before, self.buf = self.buf[:m.start()], self.buf[m.end():]
                return before, m
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"guest: no {pattern!r} within {timeout} s; got {self.buf[-2000:]!r}\n"
                                   f"console:\n{self.console_text()[-3000:]}")
            self.sock.settimeout(min(left, 1.0))
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"QEMU exited ({self.proc.returncode}):\n{self.console_text()[-4000:]}")
                continue
            if not data:
                raise RuntimeError(f"guest command channel closed:\n{self.console_text()[-4000:]}")
            self.buf += data

    def send(self, cmd):
        assert "\n" not in cmd
        self.sock.sendall(cmd.encode() + b"\n")

    def wait(self, timeout=120):
        out, m = self._read_until(rb"NBPF-DONE (\d+)\n", timeout)
        return int(m.group(1)), out.decode(errors="replace")

    def run(self, cmd, timeout=120, check=True):
        self.send(cmd)
        rc, out = self.wait(timeout)
        if check and rc:
            raise AssertionError(f"guest: `{cmd}` exited {rc}:\n{out}")
        return out if check else (rc, out)

    def ctl(self, args, check=True, timeout=120):
        """nanobpfctl --json ARGS: the parsed JSON (with check=False: (exit status, JSON))."""
        rc, out = self.run(f"nanobpfctl --json {args}", check=False, timeout=timeout)
        try:
            doc = json.loads(out) if out.strip() else None
        except json.JSONDecodeError:
            raise AssertionError(f"nanobpfctl {args}: not JSON (exit {rc}):\n{out}")
        if check:
            assert rc == 0, f"nanobpfctl {args}: exit {rc}: {doc}"
            return doc
        return rc, doc

    def host_keys(self):
        """The driver's key table: {KeyId: (phase, slot, synced)} (KEY_GET dump)."""
        keys = {}
        for line in self.run("nbtest keys").splitlines():
            f = line.split()
            if f and f[0] == "KEY":
                keys[KeyId(int(f[1]), int(f[2]), bytes.fromhex(f[3]))] = tuple(int(x) for x in f[4:7])
        return keys

    def dev_get(self):
        line = next(l for l in self.run("nbtest dev").splitlines() if l.startswith("DEV"))
        head, sep, errmsg = line.partition(" errmsg=")       # the device's text comes last
        d = dict(kv.split("=", 1) for kv in head.split()[1:])
        if sep:
            d["errmsg"] = errmsg
        return d

    def close(self):
        try:
            if self.proc.poll() is None:
                self.send("NBPF-POWEROFF")
                self.proc.wait(timeout=30)
        except Exception:
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.sock.close()
            self._pump_thread.join(timeout=5)

    def assert_log_clean(self):
        dmesg = self.run("dmesg")
        text = self.console_text() + "\n" + dmesg
        bad = [l for l in text.splitlines() if LOG_BAD.search(l)]
        assert not bad, "guest kernel log:\n" + "\n".join(bad) + f"\n(console log: {self.console_path})"


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


class Rig:
    """TAP + reference device model + booted guest."""
    kind = "model"
    insmod_args = ""

    def __init__(self, workdir, initrd, seed, key_slots=abi.NANOBPF_KEYTABLE_ENTRIES):
        tag = f"{os.getpid() % 10000}{seed}"
        self.tap, self.nettap = f"nbq{tag}", f"nbn{tag}"
        _ip("tuntap", "add", "dev", self.tap, "mode", "tap")
        self.dev = self.guest = self.net = self.net_model_port = self.host_port = None
        try:
            Path(f"/proc/sys/net/ipv6/conf/{self.tap}/disable_ipv6").write_text("1")
            _ip("link", "set", self.tap, "up")
            self.guest = Guest(workdir, initrd, self.tap)
            # the model binds to the TAP once QEMU has it (a packet socket on a TAP nobody holds
            # sees it go down when QEMU attaches)
            self.host_port = PacketPort(self.tap)
            self.net_model_port = TapPort(self.nettap)
            self.net = PacketPort(self.nettap)              # the test's end of the network port
            self.dev = DeviceModel(host=self.host_port, net=self.net_model_port, seed=seed,
                                   key_slots=key_slots).start()
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.guest:
            self.guest.close()
        if self.dev:
            self.dev.stop()
        for p in (self.net, self.net_model_port, self.host_port):
            if p:
                p.close()
        subprocess.run(["ip", "link", "del", self.tap], capture_output=True)


# The simulated DPU answers some 500 times slower than the board: a key request in about 0.1 s, the
# stand-in program's commit in tens of seconds (answered from the replay cache after retransmissions).
RTL_RETRY = "retry_ms=1000 retry_max_ms=24000"
# xdp_quic_hw's commit (verification on core 0) takes minutes of simulation
RTL_RETRY_QUIC = "retry_ms=10000 retry_max_ms=240000"


def set_retry(g, params):
    g.run("; ".join(f"echo {v} > /sys/module/nanobpf/parameters/{k}"
                    for k, v in (kv.split("=") for kv in params.split())))


class RtlRig:
    """The guest's TAP relayed (nanobpf.faults.Relay: faults on control frames, the device's answers
    recorded) to the host port of the RTL DPU (nanobpf.rtldev: nanobpf-sim with the dpu-ctrl firmware on
    TAPs); the DPU's network TAP is the test's network end. .dev is an RtlView."""
    kind = "rtl"
    insmod_args = RTL_RETRY

    def __init__(self, workdir, initrd, seed):
        from nanobpf.faults import Relay
        from nanobpf.rtldev import RtlDevice
        tag = f"{os.getpid() % 10000}{seed}"
        self.tap = f"nbq{tag}"
        self.rtl = self.guest = self.net = self.relay = self.host_port = None
        self.rc = None
        try:
            self.rtl = RtlDevice(cores=1).start()
            _ip("tuntap", "add", "dev", self.tap, "mode", "tap")
            Path(f"/proc/sys/net/ipv6/conf/{self.tap}/disable_ipv6").write_text("1")
            _ip("link", "set", self.tap, "up")
            self.guest = Guest(workdir, initrd, self.tap)
            self.host_port = PacketPort(self.tap)       # bound once QEMU holds the TAP (see Rig)
            self.relay = Relay(self.host_port, self.rtl.host, seed=seed).start()
            self.net = self.rtl.net
            set_retry(self.guest, RTL_RETRY)
            # a program load blocks nanobpfctl for minutes of simulation (a second on the board): not a
            # hung task (the kernel's warning would print a call trace, which the log check refuses)
            self.guest.run("echo 0 > /proc/sys/kernel/hung_task_timeout_secs")
            self.dev = RtlView(self.guest, self.relay)
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.guest:
            self.guest.close()
        if self.relay:
            self.relay.stop()
        if self.host_port:
            self.host_port.close()
        subprocess.run(["ip", "link", "del", self.tap], capture_output=True)
        if self.rtl:
            self.rc = self.rtl.stop()


class RtlView:
    """The RTL DPU as the tests ask about a device (the model's methods), from what a host can see: its
    state through the driver (nanobpfctl: STATS, PROG_INFO, MAP_* of the program's key table), its
    answers and epoch on the relay, faults and resets there too. What the wire does not show: PISA
    table words (tables() is None) and the slot numbers behind the host's (the slots are the ones the
    device answered, as the driver keeps them)."""

    def __init__(self, guest, relay):
        self.g, self.relay = guest, relay

    @property
    def epoch(self):
        return self.relay.epoch

    @property
    def applied(self):
        return list(self.relay.applied)

    def set_faults(self, loss=0.0, dup=0.0, reorder=0.0):
        self.relay.set_faults(loss, dup, reorder)

    def reset(self):
        self.relay.reset()

    def tables(self):
        return None

    def stats(self):
        return self.g.ctl("stats")["device"]

    def program(self):
        rc, doc = self.g.ctl("prog show", check=False)
        return doc if rc == 0 and doc and doc.get("crc32") is not None else None

    def map_lookup(self, name, key):
        rc, doc = self.g.ctl(f"map lookup {name} key {key.hex()}", check=False)
        if rc:
            assert ctl_errno(doc) == 2, doc                       # ENOENT; anything else is a failure
            return None
        return bytes.fromhex(doc["value"].replace(":", ""))

    def keys(self):
        """{KeyId: (slot, keys)}: the keys from the program's key table map, the slots from the driver."""
        if self.program() is None:       # the map is the program's: without one, only the count shows
            assert self.stats()["keys"] == 0, "the device holds keys but no program shows them"
            return {}
        slots = {kid: v[1] for kid, v in self.g.host_keys().items()}
        return {(kid := KeyId.unpack(bytes.fromhex(e["key"].replace(":", "")))):
                (slots.get(kid), bytes.fromhex(e["value"].replace(":", "")))
                for e in self.g.ctl(f"map dump {abi.KEYTABLE_MAP_NAME}")}

    def open_cid_lens(self):
        return struct.unpack("<4I", self.map_lookup("quic_config", bytes(4)))[2]


@pytest.fixture
def make_rig(request, initramfs, tmp_path):
    """make_rig(**model options) -> a booted Rig, shut down after the test."""
    rigs = []

    def make(kind="model", **kw):
        seed = len(request.node.name) % 10
        if kind == "rtl":
            from nanobpf.rtldev import RtlDeviceError
            try:
                rigs.append(RtlRig(tmp_path, initramfs, seed))
            except (FileNotFoundError, RtlDeviceError) as e:
                pytest.fail(f"the RTL DPU did not start: {e}")
        else:
            rigs.append(Rig(tmp_path, initramfs, seed=seed, **kw))
        return rigs[-1]
    yield make
    for r in rigs:
        r.close()
    for r in rigs:
        if r.kind == "rtl":
            assert r.rc == 0, "\n".join(r.rtl.lines[-30:])


from nanobpf.rtldev import available as rtl_available  # noqa: E402 (beside its use)
RTL_OK, RTL_WHY = rtl_available()
# the full tests against the model in make test, against the RTL DPU (minutes of simulation) in make test-long
DEVICES = ["model", pytest.param("rtl", marks=[pytest.mark.long, pytest.mark.skipif(not RTL_OK, reason=RTL_WHY)])]


# ---------------------------------------------------------------- helpers
def keys80(kid, phase=0, fill=1, next_keys=False, prev_keys=False):
    """A struct nanobpf_quic_keys for the entry kid (a KeyId; bytes distinct per fill; second-slot keys
    zero unless next_keys or prev_keys, as nanobpfctl writes them)."""
    b = bytes((fill * 7 + i) & 0xFF for i in range(72))
    key, iv = b[:32], b[32:56]
    if not (next_keys or prev_keys):
        key, iv = key[:16] + bytes(16), iv[:12] + bytes(12)
    flags = abi.NANOBPF_QUIC_KEY_NEXT if next_keys else abi.NANOBPF_QUIC_KEY_PREV if prev_keys else 0
    return struct.pack(abi.STRUCTS["quic_keys"].fmt, phase, flags, kid.cid_len, 0, key, iv, b[56:72], bytes(4))


def ctl_entry(kid):
    """nanobpfctl's words for an entry: cid HEX, or peer ADDR:PORT local-port N; and its direction."""
    d = "seal" if kid.dir == SEAL else "open"
    if kid.cid_len:
        return f"cid {kid.cid.hex()} dir {d}"
    import ipaddress
    ip = ipaddress.IPv6Address(kid.id[:16])
    host = str(ip.ipv4_mapped) if ip.ipv4_mapped else f"[{ip}]"
    pport, lport = struct.unpack(">HH", kid.id[16:20])
    return f"peer {host}:{pport} local-port {lport} dir {d}"


def ctl_key_args(kid, k):
    key, iv, hp = k[4:36], k[36:60], k[60:76]
    a = f"{ctl_entry(kid)} key {key[:16].hex()} iv {iv[:12].hex()} hp {hp.hex()} phase {k[0]}"
    if k[1] & abi.NANOBPF_QUIC_KEY_NEXT:
        a += f" next-key {key[16:].hex()} next-iv {iv[12:].hex()}"
    if k[1] & abi.NANOBPF_QUIC_KEY_PREV:
        a += f" prev-key {key[16:].hex()} prev-iv {iv[12:].hex()}"
    return a


def wait_for(cond, timeout, what):
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"timed out ({timeout} s) waiting for {what}")
        time.sleep(0.1)


def device_keys(dev):
    return {cid: keys for cid, (_, keys) in dev.keys().items()}


def parse_bulk(out):
    expect = {}
    fails = []
    summary = None
    for line in out.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "EXPECT":
            expect[KeyId(int(f[1]), int(f[2]), bytes.fromhex(f[3]))] = bytes.fromhex(f[4])
        elif f[0] == "FAIL":
            fails.append(line)
        elif f[0] == "BULK":
            summary = dict(kv.split("=") for kv in f[1:])
    assert summary is not None, f"nbtest bulk did not finish:\n{out}"
    return expect, fails, summary


def assert_no_double_apply(applied):
    seen = set()
    for e in applied:
        k = (e[0], e[1])
        assert k not in seen, f"request epoch {e[0]:#x} seq {e[1]} applied twice"
        seen.add(k)


def drv_stats(guest):
    """The driver counters from debugfs (name value lines)."""
    vdev = guest.dev_get()["vdev"]
    out = guest.run(f"cat /sys/kernel/debug/nanobpf/{vdev}/stats")
    return {l.split()[0]: int(l.split()[1]) for l in out.splitlines() if len(l.split()) == 2}


def ctl_errno(doc):
    return abs(doc["error"]["errno"])


def sync_and_compare(g, dev, expected):
    """After a request (STATS: replays first if the link is out of sync), the driver's table, the
    device's table and the expected one agree, every entry acknowledged."""
    g.ctl("stats")
    host = g.host_keys()
    assert set(host) == set(expected), f"host table differs: extra {set(host) - set(expected)}, " \
                                       f"missing {set(expected) - set(host)}"
    assert all(v[2] == 1 for v in host.values()), "host entries not synced"
    wait_for(lambda: device_keys(dev) == expected, 10 if isinstance(dev, DeviceModel) else 60,
             "the device key table to equal the host's")
    slots = {kid: slot for kid, (slot, _) in dev.keys().items()}
    assert {kid: v[1] for kid, v in host.items()} == slots


# ---------------------------------------------------------------- boot 1: control path
@pytest.mark.parametrize("device", DEVICES)
def test_control_path(make_rig, quic_image, stand_in_image, device):
    rig = make_rig(device)
    g, dev = rig.guest, rig.dev
    model = rig.kind == "model"
    # the RTL DPU verifies every program on its core 0, again at each replay: the stand-in (QUIC maps,
    # no crypto) takes seconds of simulation there, xdp_quic minutes
    image_path, image = ("/xdp_quic.nbpf", quic_image.read_bytes()) if model else \
        ("/xdp_ctrl_test.nbpf", stand_in_image.read_bytes())
    tables = (lambda want: dev.tables() == want) if model else (lambda want: True)   # not readable

    # (a) attach, then keys add/update/del/list, the model's table checked after each step
    g.ctl(f"dev attach eth0 {KEY}")
    info = g.ctl("dev show")
    assert (info["link_state"], info["ifname"], info["vdev"], info["epoch"], info["version"]) == \
        ("in_sync", "eth0", "nbpf0", dev.epoch, D.VERSION)
    assert "nbpf0" in g.run("ls /sys/class/net").split()
    rc, doc = g.ctl(f"dev attach eth0 {KEY}", check=False)
    assert rc == 1 and ctl_errno(doc) == 16, doc                                  # EBUSY
    expected = {}
    if not model:        # the key table is read through the program's map: a program first
        g.ctl(f"prog load {image_path}")
    # entries of both directions (the same CID names two), and peers with zero-length CIDs by address
    cids = [key_id(b"\x11"), key_id(b"\x22" * 4, SEAL), key_id(b"\x33" * 8), key_id(b"\x33" * 8, SEAL),
            key_id(b"\x44" * 13), key_id(b"\x55" * 20, SEAL), key_id(b"", OPEN, addr_id("192.0.2.5", 4433, 443)),
            key_id(b"", SEAL, addr_id("192.0.2.5", 4433, 443)), key_id(b"", SEAL, addr_id("2001:db8::5", 1, 2))]
    for i, kid in enumerate(cids):
        k = keys80(kid, phase=i & 1, fill=i + 1, next_keys=bool(i & 1))
        g.ctl("key add " + ctl_key_args(kid, k))
        expected[kid] = k
        assert device_keys(dev) == expected, f"after key add {kid}"
    listing = g.ctl("key list")
    entry = lambda e: KeyId({"open": OPEN, "seal": SEAL}[e["dir"]], e["cid_len"],
                            bytes.fromhex(e["cid"] or e["addr_id"]).ljust(20, b"\0"))
    assert {entry(e): (e["key_phase"], e["slot"], e["synced"]) for e in listing} == \
        {kid: (k[0], dev.keys()[kid][0], True) for kid, k in expected.items()}
    assert {e["peer"] for e in listing if e["cid_len"] == 0} == {"192.0.2.5:4433", "[2001:db8::5]:1"}
    for kid, flags in ((cids[2], dict(next_keys=True)), (cids[6], dict(prev_keys=True))):
        k = keys80(kid, phase=1, fill=40, **flags)
        slot = dev.keys()[kid][0]
        g.ctl("key update " + ctl_key_args(kid, k))
        expected[kid] = k
        assert device_keys(dev) == expected and dev.keys()[kid][0] == slot
    for kid in (cids[0], cids[3], cids[7]):
        g.ctl(f"key del {ctl_entry(kid)}")
        del expected[kid]
        assert device_keys(dev) == expected
    assert dev.open_cid_lens() == (1 << 0) | (1 << 8) | (1 << 13)
    for args, errno in ((f"key add {ctl_key_args(cids[1], expected[cids[1]])}", 17),     # EEXIST
                        (f"key del {ctl_entry(cids[0])}", 2),                              # ENOENT
                        (f"key del {ctl_entry(key_id(cids[1].cid, OPEN))}", 2),          # the other direction
                        (f"key update {ctl_key_args(cids[0], keys80(cids[0]))}", 2)):
        rc, doc = g.ctl(args, check=False)
        assert rc == 1 and ctl_errno(doc) == errno, (args, doc)
    rc, doc = g.ctl(f"key update {ctl_key_args(cids[1], keys80(cids[1], prev_keys=True))}", check=False)
    assert rc == 2 and "open entries only" in doc["error"]["message"], doc         # nanobpfctl refuses it
    assert device_keys(dev) == expected
    sync_and_compare(g, dev, expected)

    # (b) a real program image, prog show, maps; the key table survives the load
    g.ctl(f"prog load {image_path}")
    p = dev.program()
    assert p and (p["image_len"], p["crc32"]) == (len(image), ctrl.crc32(image))
    show = g.ctl("prog show")
    assert (show["name"], show["insns"], show["crc32"], show["image_len"]) == \
        (p["name"], p["insns"], p["crc32"], p["image_len"]), show
    for kid, k in expected.items():
        assert dev.map_lookup(abi.KEYTABLE_MAP_NAME, kid.pack()) == k
    cfg = struct.pack(abi.STRUCTS["quic_config"].fmt, HOST_PORT, NET_PORT, 0xFFFF, 0)
    g.ctl(f"map update quic_config key 00000000 value {cfg.hex()}")
    # open_cid_lens is the device's (the open entries' CID lengths), the other fields the user's
    assert dev.map_lookup("quic_config", bytes(4)) == \
        struct.pack(abi.STRUCTS["quic_config"].fmt, HOST_PORT, NET_PORT, (1 << 0) | (1 << 8) | (1 << 13), 0)
    for port in (443, 4433):
        g.ctl(f"map update quic_ports key {struct.pack('<H', port).hex()} value 01000000 noexist")
    assert dev.map_lookup("quic_ports", struct.pack("<H", 443)) == struct.pack("<I", 1)
    got = g.ctl(f"map lookup quic_ports key {struct.pack('<H', 4433).hex()}")
    assert bytes.fromhex(got["value"].replace(":", "")) == struct.pack("<I", 1), got
    dump = {bytes.fromhex(e["key"].replace(":", "")): bytes.fromhex(e["value"].replace(":", ""))
            for e in g.ctl("map dump quic_ports")}
    assert dump == {struct.pack("<H", 443): struct.pack("<I", 1), struct.pack("<H", 4433): struct.pack("<I", 1)}
    g.ctl(f"map delete quic_ports key {struct.pack('<H', 4433).hex()}")
    assert dev.map_lookup("quic_ports", struct.pack("<H", 4433)) is None
    for args, errno in ((f"map lookup quic_ports key {struct.pack('<H', 4433).hex()}", 2),          # ENOENT
                        (f"map update quic_ports key {struct.pack('<H', 443).hex()} value 02000000 noexist", 17),
                        ("map lookup no_such_map key 00000000", 6),                                  # ENXIO
                        (f"map delete {abi.KEYTABLE_MAP_NAME} key {cids[1].pack().hex()}", 22)):    # EINVAL
        rc, doc = g.ctl(args, check=False)
        assert rc == 1 and ctl_errno(doc) == errno, (args, doc)
    # PISA table words (replayed after resets too)
    rc, doc = g.ctl("table del port 0", check=False)                            # the host's own entry: kept
    assert rc == 1 and ctl_errno(doc) == 22 and "control link" in doc["error"]["message"], doc
    g.ctl("table add port 2 0x10003")
    g.ctl("table add profile 1 0x08bb0103")
    g.ctl("table add lport_cfg 3 0x5")
    g.ctl("table del lport_cfg 3")
    assert tables({(0, 2): 0x10003, (1, 1): 0x08bb0103})
    rc, doc = g.ctl("table add port 1 0xffffffff", check=False)                 # bits that are no field
    assert rc == 1 and ctl_errno(doc) == 22 and tables({(0, 2): 0x10003, (1, 1): 0x08bb0103})
    # a refused program leaves the attached one; the device's reason shows in dev show
    g.run(f"cp {image_path} /tmp/bad.nbpf && dd if=/dev/zero of=/tmp/bad.nbpf bs=1 seek=200 "
          f"count={4000 if model else 400} conv=notrunc")
    rc, doc = g.ctl("prog load /tmp/bad.nbpf name bad", check=False)
    assert rc == 1 and ctl_errno(doc) == 13, doc                                 # EACCES (VERIFIER)
    err = g.ctl("dev show")["last_error"]     # before anything else asks the device (RtlView does)
    assert err and err["status"] == "verifier" and err["message"], err
    assert dev.program()["crc32"] == ctrl.crc32(image)

    # (c) counters: the device's (STATS) and the driver's (netlink and debugfs)
    st = g.ctl("stats")
    ds = dev.stats()
    assert set(st["device"]) == set(D.STAT_NAMES.values()) and set(st["driver"]) == set(D.DRV_STAT_NAMES.values())
    assert st["device"]["keys"] == ds["keys"] == len(expected) and st["device"]["epoch"] == dev.epoch
    assert 0 < st["device"]["ctrl_applied"] <= ds["ctrl_applied"]
    drv = st["driver"]
    assert drv["ctrl_tx"] >= drv["ctrl_rx"] > 0 and drv["resyncs"] == 1 and drv["ctrl_timeouts"] == 0
    dbg = drv_stats(g)
    assert set(dbg) == set(D.DRV_STAT_NAMES.values())
    # debugfs is read after STATS_GET: the same counters or later ones. A keepalive may run in between
    # (a slow guest), so a response counted since then needs a request counted since then.
    assert all(dbg[n] >= drv[n] for n in dbg) and dbg["ctrl_timeouts"] == 0, (dbg, drv)
    assert dbg["ctrl_rx"] - drv["ctrl_rx"] <= dbg["ctrl_tx"] - drv["ctrl_tx"], (dbg, drv)
    session = g.run("cat /sys/kernel/debug/nanobpf/nbpf0/session")
    assert "state 2" in session and f"epoch {dev.epoch}" in session

    # (d) control-frame loss, duplication and reordering while adding, updating and deleting keys
    dev.set_faults(loss=0.2, dup=0.1, reorder=0.1)
    t = time.monotonic()
    expect, fails, summary = parse_bulk(g.run("nbtest bulk 3 150 208", timeout=600))
    dev.set_faults()
    print(f"(d) {summary} in {time.monotonic() - t:.1f} s; failures: {fails}")
    assert all(" ETIMEDOUT " in f for f in fails), fails           # only lost causes; rolled back
    assert int(summary["ok"]) >= 135
    expected.update(expect)
    sync_and_compare(g, dev, expected)
    assert_no_double_apply(dev.applied)
    dbg = drv_stats(g)
    assert dbg["ctrl_retransmits"] > 0 and dbg["ctrl_unmatched"] > 0, dbg
    assert dev.stats()["ctrl_replayed"] > 0

    # (e) device resets: in the middle of a sequence, while idle (keepalive), and DEV_RESET
    resyncs = drv_stats(g)["resyncs"]
    n0 = len(dev.applied)
    g.send("nbtest bulk 5 120 224")
    wait_for(lambda: len(dev.applied) >= n0 + 40, 60, "40 requests applied")
    epoch = dev.epoch
    dev.reset()
    rc, out = g.wait(300)
    assert rc == 0 and dev.epoch != epoch
    expect, fails, summary = parse_bulk(out)
    assert all(" ETIMEDOUT " in f for f in fails), fails           # none, unless the host is overloaded
    expected.update(expect)
    sync_and_compare(g, dev, expected)
    assert_no_double_apply(dev.applied)
    assert dev.program()["crc32"] == ctrl.crc32(image) and tables({(0, 2): 0x10003, (1, 1): 0x08bb0103})
    assert struct.unpack("<4I", dev.map_lookup("quic_config", bytes(4)))[:2] == (0, 0)   # maps are not replayed
    assert drv_stats(g)["resyncs"] == resyncs + 1
    dev.reset()                                                 # idle: the keepalive notices
    wait_for(lambda: device_keys(dev) == expected and dev.program() is not None, 15 if model else 180,
             "the keepalive to replay the host state after an idle reset")
    assert tables({(0, 2): 0x10003, (1, 1): 0x08bb0103})
    epoch = dev.epoch
    g.ctl("dev reset")
    assert dev.epoch != epoch and g.ctl("dev show")["epoch"] == dev.epoch
    assert device_keys(dev) == expected and dev.program()["crc32"] == ctrl.crc32(image)
    assert_no_double_apply(dev.applied)

    # detach keeps the host table; attaching again (another name) replays it to a fresh device
    g.ctl("dev detach")
    assert "nbpf0" not in g.run("ls /sys/class/net").split()
    info = g.ctl("dev show")
    assert info["link_state"] == "detached" and info["key_count"] == len(expected), info
    dev.reset()
    g.ctl(f"dev attach eth0 name dpu0 {KEY}")
    assert g.ctl("dev show")["vdev"] == "dpu0" and "dpu0" in g.run("ls /sys/kernel/debug/nanobpf").split()
    sync_and_compare(g, dev, expected)
    assert dev.program()["crc32"] == ctrl.crc32(image)
    g.run("ip link set dpu0 name dpu1")                          # debugfs follows a rename
    assert g.run("ls /sys/kernel/debug/nanobpf").split() == ["dpu1"] and g.ctl("dev show")["vdev"] == "dpu1"
    assert "ctrl_tx" in g.run("cat /sys/kernel/debug/nanobpf/dpu1/stats")

    # (c) events: xdp_events_test's ring buffer and perf event array read with nanobpfctl events: in
    # frame order, what the full ring dropped counted once, --follow as JSON lines until count
    from nanobpf.pcap import udp_frame
    g.ctl("prog load /xdp_events_test.nbpf")
    fs = [udp_frame(bytes((i + k) & 0xFF for k in range(n - 42)), "192.0.2.1", "192.0.2.2", 4433, 443)
          for i, n in enumerate([64, 90] + [300] * 16)]
    drops = lambda: g.ctl("stats")["device"]["xdp_drop"]
    before = drops()
    for f in fs:
        rig.net.send(f)
    wait_for(lambda: drops() >= before + len(fs), 30 if model else 300, "the frames through the program")
    fit = (4096 - 2 * 24) // (8 + 256)       # two 16-byte records, then 256-byte ones (with 8-byte headers)
    assert g.ctl("events rb") == {"records": [{"index": 0, "data": f[:16].hex()} for f in fs[:2]] +
                                  [{"index": 0, "data": f[:256].hex()} for f in fs[2:2 + fit]], "lost": 16 - fit}
    assert g.ctl("events rb") == {"records": [], "lost": 0}
    out = g.run("nanobpfctl --json --follow events events count 18 interval 10", timeout=60)
    assert [json.loads(ln) for ln in out.splitlines()] == [{"index": 0, "data": (f[:8] + f).hex()} for f in fs]
    rc, doc = g.ctl("events last_rc", check=False)
    assert rc == 1 and ctl_errno(doc) == 22 and "not an event map" in doc["error"]["message"], doc   # EINVAL
    g.assert_log_clean()


# ---------------------------------------------------------------- boot 2: netlink input, data path, teardown
MALFORMED = {   # nbtest malformed: case -> the errno the driver (or netlink core) must answer
    "unknown_cmd": "EOPNOTSUPP", "cmd_unspec": "EOPNOTSUPP", "short_genl_header": "EINVAL",
    "genl_reserved_set": "EINVAL", "attr_unknown_type": "EINVAL", "attr_truncated": "EINVAL",
    "attr_len_below_header": "EINVAL", "trailing_garbage": "EINVAL", "dump_unknown_attr": "EINVAL",
    "key_add_no_cid": "EINVAL", "key_add_cid_empty": "EINVAL", "key_add_cid_21": "ERANGE",
    "key_add_no_keys": "EINVAL", "key_add_keys_79": "ERANGE", "key_add_keys_81": "ERANGE",
    "key_add_cid_len_mismatch": "EINVAL", "key_add_phase_2": "EINVAL", "key_add_bad_flags": "EINVAL",
    "key_add_device_refuses": "EINVAL", "key_get_after_refusal": "ENOENT", "key_add_ok": "OK",
    "key_add_duplicate": "EEXIST", "key_update_ok": "OK", "key_del_ok": "OK", "key_del_missing": "ENOENT",
    "key_update_missing": "ENOENT", "key_del_u32_cid": "ENOENT",
    "key_add_duplicate_dir_open": "EEXIST", "key_add_seal_same_cid": "OK", "key_del_seal": "OK",
    "key_del_seal_missing": "ENOENT", "key_add_dir_2": "EINVAL", "key_add_dir_255": "EINVAL",
    "key_add_cid_and_addr": "EINVAL", "key_add_next_and_prev": "EINVAL", "key_add_prev_seal": "EINVAL",
    "key_add_no_cid_no_addr": "EINVAL", "key_add_addr_19": "ERANGE", "key_add_addr_21": "ERANGE",
    "key_add_addr_zero": "EINVAL", "key_add_addr_cid_len_4": "EINVAL", "key_add_addr_prev_open": "OK",
    "key_get_addr": "OK", "key_get_addr_other_dir": "ENOENT", "key_update_addr_default_dir": "OK",
    "key_del_addr": "OK", "key_del_addr_missing": "ENOENT",
    "attach_no_ifname": "EINVAL", "attach_ifname_no_nul": "EINVAL", "attach_ifname_long": "EINVAL",
    "attach_bad_vdev_name": "EINVAL", "attach_no_key": "EINVAL", "attach_key_15": "ERANGE",
    "attach_key_17": "ERANGE", "attach_again": "EBUSY",
    "prog_no_image": "EINVAL", "prog_image_empty": "EINVAL", "prog_image_too_big": "ERANGE",
    "prog_image_garbage": "EACCES", "prog_name_empty": "EINVAL", "prog_name_long": "EINVAL",
    "map_no_name": "EINVAL", "map_name_empty": "EINVAL", "map_lookup_no_key": "EINVAL", "map_key_257": "ERANGE",
    "map_value_1025": "ERANGE", "map_update_no_value": "EINVAL", "map_update_bad_flags": "EINVAL",
    "map_lookup_with_value": "EINVAL", "map_unknown": "ENOEXEC", "map_key_wrong_size": "ENOEXEC",
    "table_no_table": "EINVAL", "table_unknown": "EINVAL", "table_port_index_8": "EINVAL",
    "table_lport_index_4": "EINVAL", "table_set_no_value": "EINVAL", "table_del_with_value": "EINVAL",
    "table_index_short": "EINVAL", "table_device_refuses": "EINVAL", "stats_short_nest": "EINVAL",
    "unpriv_key_add": "EPERM", "unpriv_detach": "EPERM", "unpriv_map_lookup": "EPERM", "unpriv_dev_get": "OK",
}
QUIC_CID = bytes.fromhex("0011223344556677")      # the guest's connection ID (open entry)
PEER_CID = bytes.fromhex("c0c1c2c3c4")            # the peer's (seal entry)


def quic_plain(pn, payload, dcid=QUIC_CID, largest=-1):
    from nanobpf.quic.protection import encode_pn
    tpn = encode_pn(pn, largest)
    return bytes([0x40 | (len(tpn) - 1)]) + dcid + tpn + payload


def recv_udp(port, dport, timeout=10):
    """The next UDP frame to dport arriving on a PacketPort."""
    from nanobpf.pcap import parse_udp
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0:
        f = port.recv(left)
        if f is None:
            break
        try:
            u = parse_udp(f)
        except ValueError:
            continue
        if u is not None and u.dport == dport:
            return f, u
    raise AssertionError(f"no UDP frame to port {dport} within {timeout} s")


def guest_recv(g, port, send):
    """Start a receiver on the guest's UDP port (SO_RCVMARK), call send(), return (mark, payload)."""
    g.run(f"(nbtest udprecv {port} 10000 > /tmp/r.out 2>&1 &); "
          "while ! grep -q LISTEN /tmp/r.out 2>/dev/null; do sleep 0.05; done")
    send()
    out = g.run("for i in $(seq 150); do grep -q RECV /tmp/r.out && break; sleep 0.1; done; cat /tmp/r.out")
    m = re.search(r"RECV mark=(0x[0-9a-f]+) hex=([0-9a-f]*)", out)
    assert m, f"nothing received on port {port}:\n{out}"
    return int(m.group(1), 16), bytes.fromhex(m.group(2))


@pytest.mark.parametrize("device", DEVICES)
def test_netlink_and_data(make_rig, quic_image, device):
    from nanobpf.pcap import udp_frame
    from nanobpf.quic import PacketKeys, protect, unprotect
    model = device == "model"
    key_slots = 16 if model else abi.NANOBPF_KEYTABLE_ENTRIES       # the RTL DPU's are fixed
    rig = make_rig(device, **(dict(key_slots=key_slots) if model else {}))
    g, dev = rig.guest, rig.dev
    g.ctl(f"dev attach eth0 {KEY}")

    # (f) malformed messages: every one gets its error; refusals roll back and show in DEV_GET
    out = g.run("nbtest malformed eth0")
    cases = {}
    for line in out.splitlines():
        m = re.match(r'CASE (\S+) (-?\d+) (\S+) "(.*)"$', line)
        if m:
            cases[m.group(1)] = (m.group(3), m.group(4))
    assert set(cases) == set(MALFORMED), f"cases: {sorted(set(cases) ^ set(MALFORMED))}\n{out}"
    wrong = {c: (cases[c], e) for c, e in MALFORMED.items() if cases[c][0] != e}
    assert not wrong, f"unexpected answers (got, expected): {wrong}"
    quiet = {"unknown_cmd", "cmd_unspec", "short_genl_header"}
    assert all(msg for c, (err, msg) in cases.items() if err in ("EINVAL", "ERANGE") and c not in quiet), \
        "validation errors come with an extended-ack message"
    assert "CTRL_KEY" in cases["attach_no_key"][1], cases["attach_no_key"]
    devs = [dict(kv.split("=", 1) for kv in l.partition(" errmsg=")[0].split()[1:]) | {"errmsg": l.partition(" errmsg=")[2]}
            for l in out.splitlines() if l.startswith("DEV ")]
    assert devs[0]["status"] == "9" and "pad" in devs[0]["errmsg"], devs[0]
    assert devs[1]["status"] == "10" and "magic" in devs[1]["errmsg"], devs[1]
    assert devs[2]["status"] == "9" and "port_entry" in devs[2]["errmsg"], devs[2]
    assert all(d["state"] == "2" for d in devs)
    assert not any("ctrl_key" in d for d in devs), "DEV_GET sent the device key back"
    assert dev.keys() == {} and dev.tables() in ({}, None) and dev.program() is None and g.host_keys() == {}
    if not model:        # the RTL DPU's key table is read through the program's map: a program first
        g.ctl("prog load /xdp_ctrl_test.nbpf")

    # fuzzing: random commands and attributes (the commands that tear the set-up down left out)
    out = g.run("nbtest fuzz 7 500", timeout=300)
    m = re.search(r"FUZZ sent=(\d+) ok=(\d+)", out)
    assert m and int(m.group(1)) == 500, out
    print(out.strip())
    g.ctl("stats")
    host = g.host_keys()
    assert {c: v[1] for c, v in host.items()} == {c: s for c, (s, _) in dev.keys().items()}

    # the key table holds what the device said in HELLO (16 slots for the model here)
    assert f"key_slots {key_slots}" in g.run("cat /sys/kernel/debug/nanobpf/nbpf0/session")
    kids = [key_id(bytes([0xa0, i >> 8, i & 0xFF, 0x5a]), dir=i & 1) for i in range(key_slots - 2)]
    kids += [key_id(b"", OPEN, addr_id("192.0.2.77", 9, 10)), key_id(b"", SEAL, addr_id("192.0.2.77", 9, 10))]
    table = {kid: keys80(kid, fill=i) for i, kid in enumerate(kids)}
    items = list(table.items())
    for n in range(0, len(items), 16):
        g.run("; ".join(f"nanobpfctl key add {ctl_key_args(c, k)}" for c, k in items[n:n + 16]), timeout=300)
    extra = key_id(bytes([0xa1] * 4))
    rc, doc = g.ctl("key add " + ctl_key_args(extra, keys80(extra)), check=False)
    assert rc == 1 and ctl_errno(doc) == 28 and "full" in doc["error"]["message"], doc   # ENOSPC
    assert device_keys(dev) == table
    for n in range(0, len(items), 16):
        g.run("; ".join(f"nanobpfctl key del {ctl_entry(c)}" for c, _ in items[n:n + 16]), timeout=300)
    assert dev.keys() == {} and g.host_keys() == {}

    # device garbage on the host link: short and inconsistent control frames, malformed shims
    guest_mac, dmac = bytes.fromhex(GUEST_MAC.replace(":", "")), ctrl.DEVICE_MAC
    before = drv_stats(g)
    hdr = lambda length, flags=D.NANOBPF_CTRL_F_RESPONSE, seq=12345: D.pack(
        "ctrl_hdr", version=1, type=D.NANOBPF_CTRL_MSG_STATS, flags=flags, status=0, seq=seq, epoch=dev.epoch,
        length=length)
    eth = lambda et: guest_mac + dmac + struct.pack(">H", et)
    ctrl_garbage = [eth(D.ETHERTYPE) + b"\x01\x03",                              # shorter than the header
                    eth(D.ETHERTYPE) + hdr(600) + bytes(40),                     # body beyond the frame
                    eth(D.ETHERTYPE) + hdr(D.NANOBPF_CTRL_MAX_BODY + 1) + bytes(D.NANOBPF_CTRL_MAX_BODY + 1),
                    eth(D.ETHERTYPE) + hdr(0),                                   # answers nothing in flight
                    eth(D.ETHERTYPE) + hdr(0, flags=0)]                          # a request
    ip = udp_frame(b"x" * 20, PEER_IP, GUEST_IP, 1, 9)[12:]
    shim_garbage = [eth(D.SHIM_ETHERTYPE) + b"\x01",                              # truncated shim
                    eth(D.SHIM_ETHERTYPE) + b"\x01\x05" + ip,                      # DECRYPTED with a CID length
                    eth(D.SHIM_ETHERTYPE) + b"\x02\x08" + ip,                      # ENCRYPT: the host's flag
                    eth(D.SHIM_ETHERTYPE) + b"\x02\x00" + ip,
                    eth(D.SHIM_ETHERTYPE) + b"\x00\x00" + ip,                      # no flag
                    eth(D.SHIM_ETHERTYPE) + b"\x03\x00" + ip,                      # both flags
                    eth(D.SHIM_ETHERTYPE) + b"\x80\x00" + ip,                      # unknown flag
                    eth(D.SHIM_ETHERTYPE) + b"\x01\x00" + struct.pack(">H", D.ETHERTYPE) + bytes(40)]
    g.run("ip link set nbpf0 up")
    for f in ctrl_garbage + shim_garbage:
        rig.host_port.send(f)
    time.sleep(0.5)
    after = drv_stats(g)
    assert after["ctrl_unmatched"] - before["ctrl_unmatched"] >= len(ctrl_garbage), (before, after)
    assert after["rx_bad_shim"] - before["rx_bad_shim"] == len(shim_garbage), (before, after)
    assert g.ctl("dev show")["link_state"] == "in_sync"

    # (g) the data path through the model's QUIC program, with marks: base | destination CID length
    k0 = PacketKeys.from_secret(bytes(range(32)))        # the peer's keys (the device opens with them)
    k1 = PacketKeys.from_secret(bytes(range(1, 33)))     # the guest's (the device seals with them)
    k2 = PacketKeys.from_secret(bytes(range(2, 34)))     # the guest's towards a zero-length-CID peer
    mark = lambda n: D.ENCRYPT_MARK | n
    if model:
        g.ctl("prog load /xdp_quic.nbpf")
    else:                # xdp_quic_hw (the AEAD engine): minutes of verification on the simulated core 0
        set_retry(g, RTL_RETRY_QUIC)
        t = time.monotonic()
        g.ctl("prog load /xdp_quic_hw.nbpf", timeout=1800)
        print(f"xdp_quic_hw verified and compiled on the simulated core 0 in {time.monotonic() - t:.0f} s")
        set_retry(g, RTL_RETRY)
    cfg = struct.pack(abi.STRUCTS["quic_config"].fmt, HOST_PORT, NET_PORT, 0, 0)
    g.ctl(f"map update quic_config key 00000000 value {cfg.hex()}")
    g.ctl(f"map update quic_ports key {struct.pack('<H', 443).hex()} value 01000000")
    g.ctl(f"key add cid {QUIC_CID.hex()} key {k0.key.hex()} iv {k0.iv.hex()} hp {k0.hp.hex()}")
    g.ctl(f"key add cid {PEER_CID.hex()} dir seal key {k1.key.hex()} iv {k1.iv.hex()} hp {k1.hp.hex()}")
    g.ctl(f"key add peer {PEER_IP}:443 local-port 50001 dir seal key {k2.key.hex()} iv {k2.iv.hex()} hp {k2.hp.hex()}")
    assert struct.unpack("<4I", dev.map_lookup("quic_config", bytes(4)))[2] == 1 << len(QUIC_CID)
    g.run(f"ip addr add {GUEST_IP}/24 dev nbpf0 && arp -i nbpf0 -s {PEER_IP} {PEER_MAC}")
    while rig.net.recv(0.2) is not None:
        pass
    before, dbefore = drv_stats(g), dev.stats()
    plain = quic_plain(5, b"sealed by the device " * 3, dcid=PEER_CID)
    g.run(f"nbtest udpsend {PEER_IP} 443 {mark(len(PEER_CID)):#x} {plain.hex()} 50000")
    frame, u = recv_udp(rig.net, 443)
    assert frame[12:14] == b"\x08\x00" and frame[:6] == bytes.fromhex(PEER_MAC.replace(":", ""))
    assert u.payload != plain and unprotect(u.payload, k1, -1, len(PEER_CID)).plain == plain
    zplain = quic_plain(6, b"to a peer without CIDs " * 3, dcid=b"")      # by address: 10.0.0.1:443, local 50001
    g.run(f"nbtest udpsend {PEER_IP} 443 {mark(0):#x} {zplain.hex()} 50001")
    frame, u = recv_udp(rig.net, 443)
    assert u.sport == 50001 and unprotect(u.payload, k2, -1, 0).plain == zplain
    # fail closed: a CID length above 20 never leaves the driver; a seal request the device has no
    # keys for (no seal entry for QUIC_CID: its entry is the open one) never reaches the network
    g.run(f"nbtest udpsend {PEER_IP} 443 {mark(21):#x} {plain.hex()} 50000")
    g.run(f"nbtest udpsend {PEER_IP} 443 {mark(0xff):#x} {plain.hex()} 50000")
    g.run(f"nbtest udpsend {PEER_IP} 443 {mark(len(QUIC_CID)):#x} {quic_plain(7, bytes(30)).hex()} 50000")
    g.run(f"nbtest udpsend {PEER_IP} 443 {mark(len(PEER_CID)):#x} {plain.hex()} 50002")   # PN 5 again: reused
    with pytest.raises(AssertionError):
        recv_udp(rig.net, 443, timeout=2)
    g.run(f"nbtest udpsend {PEER_IP} 9999 0x1234 {b'not for the device'.hex()} 50000")   # other marks: as is
    frame, u = recv_udp(rig.net, 9999)
    assert frame[12:14] == b"\x08\x00" and u.payload == b"not for the device"
    g.run(f"nbtest udpsend {PEER_IP} 9998 {D.ENCRYPT_MARK + 0x100:#x} {b'next base'.hex()} 50000")  # not the base
    frame, u = recv_udp(rig.net, 9998)
    assert u.payload == b"next base"
    plain2 = quic_plain(9, b"opened by the device " * 3)
    prot = protect(plain2, k0, largest_pn=-1, short_cid_len=len(QUIC_CID))
    to_guest = lambda payload, dport: rig.net.send(
        udp_frame(payload, PEER_IP, GUEST_IP, 50000, dport, src_mac=PEER_MAC, dst_mac=GUEST_MAC))
    assert guest_recv(g, 443, lambda: to_guest(prot, 443)) == (D.DECRYPT_MARK, plain2)
    assert guest_recv(g, 9999, lambda: to_guest(b"plain udp", 9999)) == (0, b"plain udp")
    g.run("echo 0x77 > /sys/module/nanobpf/parameters/decrypt_mark")             # module parameter
    plain3 = quic_plain(10, b"another mark " * 4)
    prot3 = protect(plain3, k0, largest_pn=9, short_cid_len=len(QUIC_CID))
    assert guest_recv(g, 443, lambda: to_guest(prot3, 443)) == (0x77, plain3)
    g.run(f"echo {D.DECRYPT_MARK} > /sys/module/nanobpf/parameters/decrypt_mark")
    after, dafter = drv_stats(g), dev.stats()
    assert after["tx_encrypt"] - before["tx_encrypt"] == 4 and after["tx_bad_mark"] - before["tx_bad_mark"] == 2
    assert after["rx_decrypted"] - before["rx_decrypted"] == 2
    assert after["tx_frames"] - before["tx_frames"] >= 6 and after["rx_frames"] - before["rx_frames"] >= 3
    assert dafter["encrypt_req"] - dbefore["encrypt_req"] == 4 and dafter["decrypted"] - dbefore["decrypted"] == 2
    assert dafter["xdp_drop"] + dafter["encrypt_unsealed"] - dbefore["xdp_drop"] - dbefore["encrypt_unsealed"] == 2
    # the encrypt mark base keeps its low byte for the CID length: other values are refused at run time
    rc, out = g.run("echo 0x4e420105 > /sys/module/nanobpf/parameters/encrypt_mark", check=False)
    assert rc != 0 and g.run("cat /sys/module/nanobpf/parameters/encrypt_mark").strip() == str(D.ENCRYPT_MARK)
    assert "low byte zero" in g.run("dmesg | tail -5")
    g.run("echo 0x4e430000 > /sys/module/nanobpf/parameters/encrypt_mark")
    assert g.run("cat /sys/module/nanobpf/parameters/encrypt_mark").strip() == str(0x4E430000)
    g.run(f"echo {D.ENCRYPT_MARK} > /sys/module/nanobpf/parameters/encrypt_mark")

    # the lower device goes away while a request waits for an answer (control frames all lost)
    if not model:        # the replays below would verify xdp_quic_hw again (minutes): the stand-in
        g.ctl("prog load /xdp_ctrl_test.nbpf")
    keys_before = device_keys(dev)
    dev.set_faults(loss=1.0)
    out = g.run("(nbtest bulk 11 3 241 > /tmp/b.out 2>&1 &); sleep 0.5; "
                "d=$(ls /sys/bus/virtio/drivers/virtio_net | grep virtio); echo $d > /tmp/virtio; "
                "echo $d > /sys/bus/virtio/drivers/virtio_net/unbind; "
                "for i in $(seq 100); do grep -q BULK /tmp/b.out && break; sleep 0.1; done; cat /tmp/b.out; "
                "echo NETDEVS $(ls /sys/class/net); echo DEBUGFS $(ls /sys/kernel/debug/nanobpf)", timeout=60)
    dev.set_faults()
    expect, fails, summary = parse_bulk(out)
    assert summary["ok"] == "0" and fails and all("ENODEV" in f for f in fails), out
    print(out)
    assert re.search(r"NETDEVS lo\s*$", out, re.M) and re.search(r"DEBUGFS\s*$", out, re.M), out
    info = g.ctl("dev show")
    assert info["link_state"] == "detached" and info["key_count"] == len(keys_before)
    g.run("cat /tmp/virtio > /sys/bus/virtio/drivers/virtio_net/bind; "
          "n=0; while [ ! -d /sys/class/net/eth0 ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n+1)); done; "
          "ip link set eth0 up")
    dev.reset()
    g.ctl(f"dev attach eth0 {KEY}")
    sync_and_compare(g, dev, keys_before)

    # module unload with the device attached and a request in flight (every control frame lost: the
    # request runs out its retries at the default timing, as on the board, before rmmod goes on)
    if not model:
        set_retry(g, f"retry_ms={D.NANOBPF_CTRL_RETRY_MS} retry_max_ms={D.NANOBPF_CTRL_RETRY_MAX_MS}")
    dev.set_faults(loss=1.0)
    out = g.run("(nbtest bulk 12 3 242 > /tmp/c.out 2>&1 &); sleep 0.5; rmmod nanobpf; echo rmmod=$?; "
                "for i in $(seq 100); do grep -q BULK /tmp/c.out && break; sleep 0.1; done; cat /tmp/c.out; "
                "echo MODULES $(lsmod | grep -c nanobpf); echo NETDEVS $(ls /sys/class/net)", timeout=60)
    dev.set_faults()
    assert "rmmod=0" in out and "MODULES 0" in out and not re.search(r"NETDEVS .*nbpf", out), out
    expect, fails, summary = parse_bulk(out)
    assert summary["ok"] == "0", out
    print(out)
    rc, out = g.run("insmod /nanobpf.ko encrypt_mark=0x99", check=False)        # low byte set: refused
    assert rc != 0 and "MODULES 0" in g.run("echo MODULES $(lsmod | grep -c nanobpf)")
    assert "encrypt_mark 0x00000099 refused" in g.run("dmesg | tail -5")
    g.run(f"insmod /nanobpf.ko encrypt_mark=0x99000000 {rig.insmod_args}")
    assert g.run("cat /sys/module/nanobpf/parameters/encrypt_mark").strip() == str(0x99000000)
    # the device is still in the old module's session: the new module's first HELLO (its sequence
    # numbers start again) gets STALE_SEQ with the device's last number, and it continues after it
    if model:
        stale = dev.stats()["ctrl_stale"]
        g.ctl(f"dev attach eth0 {KEY}")
        assert dev.stats()["ctrl_stale"] > stale
    else:                # the device's counters are read through the driver: its answers on the relay
        n0 = len(rig.relay.answers)
        g.ctl(f"dev attach eth0 {KEY}")
        assert any(a[2:4] == (D.NANOBPF_CTRL_MSG_HELLO, D.NANOBPF_CTRL_ST_STALE_SEQ)
                   for a in rig.relay.answers[n0:]), rig.relay.answers[n0:]
    assert g.ctl("dev show")["key_count"] == 0 and dev.keys() == {}          # a new module: empty host table
    assert dev.program() is None                                              # ... and no program
    g.assert_log_clean()


# ---------------------------------------------------------------- boot 3: the RTL DPU
def test_rtl_smoke(initramfs, tmp_path):
    """The driver and nanobpfctl against the RTL DPU (the Verilator model, core 0 answering the control
    protocol) over a bridged TAP: HELLO (attach), keys added and deleted, a program loaded (verified and
    compiled on the simulated core), a map written, a frame from the network opened by the program and
    delivered with the decrypt mark, another unmarked. The simulation runs some 500 times slower than
    the board, so the driver's retransmission timeouts are raised first (module parameters)."""
    from nanobpf.rtldev import RtlDeviceError
    from nanobpf.pcap import udp_frame
    try:
        rig = RtlRig(tmp_path, initramfs, seed=3)
    except (FileNotFoundError, RtlDeviceError) as e:
        pytest.fail(f"the RTL DPU did not start: {e}")
    try:
        g = rig.guest
        g.run("echo 3000 > /sys/module/nanobpf/parameters/retry_ms; echo 24000 > /sys/module/nanobpf/parameters/retry_max_ms")
        rc, out = g.run("echo 0 > /sys/module/nanobpf/parameters/retry_ms", check=False)
        assert rc != 0 and g.run("cat /sys/module/nanobpf/parameters/retry_ms").strip() == "3000"
        g.ctl(f"dev attach eth0 {KEY}")
        info = g.ctl("dev show")
        assert info["link_state"] == "in_sync" and info["epoch"] != 0
        # the device's limits, as HELLO reported them (hw/defs: one source for both)
        assert f"key_slots {abi.NANOBPF_KEYTABLE_ENTRIES}" in g.run("cat /sys/kernel/debug/nanobpf/nbpf0/session")
        kids = [key_id(b"\x11" * 4), key_id(b"\x22" * 8, SEAL), key_id(b"", OPEN, addr_id("192.0.2.5", 4433, 443))]
        for i, kid in enumerate(kids):
            g.ctl("key add " + ctl_key_args(kid, keys80(kid, fill=i)))
        g.ctl("key del " + ctl_entry(kids[1]))
        host = g.host_keys()
        assert set(host) == {kids[0], kids[2]} and all(v[2] == 1 for v in host.values())
        st = g.ctl("stats")
        assert st["device"]["keys"] == 2 and st["device"]["epoch"] == info["epoch"]
        prog = g.ctl("prog load /xdp_ctrl_test.nbpf")
        assert prog["loaded"] and prog["name"] == "xdp_ctrl_test"
        # the program's view of the device's key table
        dump = g.ctl(f"map dump {abi.KEYTABLE_MAP_NAME}")
        assert len(dump) == 2
        g.ctl("map update test_mode key 00000000 value 06000000")          # MODE_OPEN: counted opened
        g.run(f"ip link set nbpf0 up; ip addr add {GUEST_IP}/24 dev nbpf0 && arp -i nbpf0 -s {PEER_IP} {PEER_MAC}")
        to_guest = lambda payload, dport: rig.net.send(
            udp_frame(payload, PEER_IP, GUEST_IP, 50000, dport, src_mac=PEER_MAC, dst_mac=GUEST_MAC))
        assert guest_recv(g, 443, lambda: to_guest(b"opened by the DPU", 443)) == (D.DECRYPT_MARK, b"opened by the DPU")
        g.ctl("map update test_mode key 00000000 value 00000000")          # MODE_PASS: not opened
        assert guest_recv(g, 9999, lambda: to_guest(b"plain udp", 9999)) == (0, b"plain udp")
        st = g.ctl("stats")
        assert st["device"]["decrypted"] == 1 and st["driver"]["rx_decrypted"] == 1
        g.assert_log_clean()
    finally:
        rig.close()
    assert rig.rc == 0, "\n".join(rig.rtl.lines[-30:])


class OneArmRig(Rig):
    """The guest's link as a board's one-arm link: the model's host port is the host VLAN of the guest's
    TAP (board.toml [dpu] host_vid, nanobpf.ctrl.VlanPort); its network port a TAP of its own, as in Rig
    (on the board the network's VLAN shares the link: sim/board covers that side)."""

    def __init__(self, workdir, initrd, seed, host_vid):
        tag = f"{os.getpid() % 10000}{seed}"
        self.tap, self.nettap = f"nbq{tag}", f"nbn{tag}"
        _ip("tuntap", "add", "dev", self.tap, "mode", "tap")
        self.dev = self.guest = self.net = self.net_model_port = self.host_port = self.untagged = None
        try:
            Path(f"/proc/sys/net/ipv6/conf/{self.tap}/disable_ipv6").write_text("1")
            _ip("link", "set", self.tap, "up")
            self.guest = Guest(workdir, initrd, self.tap)
            self.host_port = ctrl.VlanPort(self.tap, host_vid)
            self.untagged = ctrl.VlanPort(self.tap, None)       # what the guest sends on eth0 itself
            self.net_model_port = TapPort(self.nettap)
            self.net = PacketPort(self.nettap)
            self.dev = DeviceModel(host=self.host_port, net=self.net_model_port, seed=seed).start()
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.untagged:
            self.untagged.close()
        super().close()


def test_one_arm_host(initramfs, tmp_path):
    """The host side of one-arm mode as boards/genesys2/README.md (step 4) sets it up: a VLAN sub-interface
    for the host link (eth0.10), nanobpf.ko attached to it. The device answers on that VLAN only: an
    attach on eth0 itself (untagged) gets no answer and fails; on eth0.10 it says HELLO and comes up in
    sync; a connection's keys go over it, and the data path works through it both ways: a packet sent
    with the encrypt mark leaves sealed, a protected packet from the network arrives opened, with the
    decrypt mark."""
    from nanobpf.board import facts
    from nanobpf.pcap import udp_frame
    from nanobpf.quic import PacketKeys, protect, unprotect
    vid = facts.load(facts.DEFAULT_BOARD).dpu.host_vid
    rig = OneArmRig(tmp_path, initramfs, seed=3, host_vid=vid)
    try:
        g, dev = rig.guest, rig.dev
        g.run("echo 200 > /sys/module/nanobpf/parameters/retry_ms; echo 800 > /sys/module/nanobpf/parameters/retry_max_ms")
        rc, doc = g.ctl(f"dev attach eth0 {KEY}", check=False)           # untagged: no device there
        assert rc != 0 and ctl_errno(doc) == 110, doc                # ETIMEDOUT
        assert dev.stats()["ctrl_rx"] == 0
        g.run(f"ip link add link eth0 name eth0.{vid} type vlan id {vid} && ip link set eth0 up && ip link set eth0.{vid} up")
        g.ctl(f"dev attach eth0.{vid} {KEY}")
        info = g.ctl("dev show")
        assert info["link_state"] == "in_sync" and info["epoch"] == dev.epoch, info
        k0 = PacketKeys.from_secret(bytes(range(32)))        # the peer's keys (the device opens with them)
        k1 = PacketKeys.from_secret(bytes(range(1, 33)))     # the guest's (the device seals with them)
        g.ctl("prog load /xdp_quic.nbpf")
        cfg = struct.pack(abi.STRUCTS["quic_config"].fmt, HOST_PORT, NET_PORT, 0, 0)
        g.ctl(f"map update quic_config key 00000000 value {cfg.hex()}")
        g.ctl(f"map update quic_ports key {struct.pack('<H', 443).hex()} value 01000000")
        g.ctl(f"key add cid {QUIC_CID.hex()} key {k0.key.hex()} iv {k0.iv.hex()} hp {k0.hp.hex()}")
        g.ctl(f"key add cid {PEER_CID.hex()} dir seal key {k1.key.hex()} iv {k1.iv.hex()} hp {k1.hp.hex()}")
        assert len(dev.keys()) == 2
        g.run(f"ip addr add {GUEST_IP}/24 dev nbpf0 && ip link set nbpf0 up && arp -i nbpf0 -s {PEER_IP} {PEER_MAC}")
        plain = quic_plain(5, b"sealed through a VLAN " * 3, dcid=PEER_CID)
        g.run(f"nbtest udpsend {PEER_IP} 443 {D.ENCRYPT_MARK | len(PEER_CID):#x} {plain.hex()} 50000")
        _, u = recv_udp(rig.net, 443)
        assert unprotect(u.payload, k1, -1, len(PEER_CID)).plain == plain
        opened = quic_plain(7, b"opened for the host on its VLAN " * 2)
        wire = udp_frame(protect(opened, k0, short_cid_len=len(QUIC_CID)), PEER_IP, GUEST_IP, 443, 4433,
                         src_mac=PEER_MAC, dst_mac=GUEST_MAC)
        mark, payload = guest_recv(g, 4433, lambda: rig.net.send(wire))
        assert mark == D.DECRYPT_MARK and payload == opened
        s = dev.stats()
        assert (s["encrypt_req"], s["net_tx"], s["decrypted"]) == (1, 1, 1), s
        g.assert_log_clean()
    finally:
        rig.close()



# ---------------------------------------------------------------- the device key
def _wait_request(port, type_, key, timeout):
    """The next control request of type_ the guest sends (decrypted with key) on a PacketPort."""
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0:
        raw = port.recv(left)
        if raw is None:
            break
        f = ctrl.parse(raw, key)
        if f and not f.hdr["flags"] & D.NANOBPF_CTRL_F_RESPONSE and f.hdr["type"] == type_:
            return f
    raise AssertionError(f"no {D.MSG_NAMES.get(type_, type_)} request within {timeout} s")


def _guest_drv_stat(g, name, vdev="nbpf0"):
    """A driver counter from debugfs (no netlink: DEV_GET would wait for the request in flight)."""
    out = g.run(f"cat /sys/kernel/debug/nanobpf/{vdev}/stats")
    return next(int(l.split()[1]) for l in out.splitlines() if l.split()[:1] == [name])


def test_device_key(initramfs, tmp_path):
    """Protocol v2's device key through the driver (docs/control.md "The device key"):
    (a) an attach with another key than the device's gets no answer (the device drops what does not
        authenticate, and counts it) and fails with the timeout naming the key; without any key file
        nanobpfctl says where it looked; $NANOBPF_CTRL_KEY names the file; DEV_GET never sends the key;
    (b) responses injected on the link while a request waits for its answer (the device's answers lost):
        one tagged under another key and one authentic answer altered are counted as CTRL_AUTH_FAIL, an
        authentic answer for another nonce (a replay) as CTRL_UNMATCHED; none is believed: the request
        still waits and completes with the device's real answer."""
    rig = Rig(tmp_path, initramfs, seed=4)
    spy = None
    try:
        g, dev = rig.guest, rig.dev
        # (a) the wrong key: every request dropped by the device, quick retries for a short test
        set_retry(g, "retry_ms=20 retry_max_ms=160")
        rc, doc = g.ctl(f"dev attach eth0 key {WRONG_KEY_FILE}", check=False)
        assert rc == 1 and ctl_errno(doc) == 110 and NO_ANSWER in doc["error"]["message"], doc
        st = dev.stats()
        assert st["ctrl_auth_fail"] == 1 + D.NANOBPF_CTRL_RETRIES and st["ctrl_applied"] == 0, st
        assert g.ctl("dev show")["link_state"] == "detached"
        rc, doc = g.ctl("dev attach eth0", check=False)              # no key file at the default path
        assert rc == 1 and doc["error"]["message"].startswith(
            "device key /etc/nanobpf/ctrl.key: No such file or directory"), doc
        assert dev.stats()["ctrl_rx"] == st["ctrl_rx"]                  # nothing sent without a key
        g.run(f"NANOBPF_CTRL_KEY={KEY_FILE} nanobpfctl dev attach eth0")
        info = g.ctl("dev show")
        assert info["link_state"] == "in_sync" and info["epoch"] == dev.epoch, info
        assert "ctrl_key" not in g.dev_get()
        assert dev.stats()["ctrl_auth_fail"] == st["ctrl_auth_fail"]   # the right key: all authentic

        # (b) forged and replayed answers to a request in flight
        set_retry(g, "retry_ms=300 retry_max_ms=2000")                  # some 10 s before a timeout
        auth0, unmatched0 = _guest_drv_stat(g, "ctrl_auth_fail"), _guest_drv_stat(g, "ctrl_unmatched")
        assert auth0 == 0
        spy = PacketPort(rig.tap, proto=D.ETHERTYPE, quiet=False)      # sees what the guest sends
        dev.set_faults(loss=1.0)                                        # the device hears nothing
        g.run("(sh -c 'nanobpfctl --json stats; echo EXIT=$?' > /tmp/s.out 2>&1 &)")
        req = _wait_request(spy, D.NANOBPF_CTRL_MSG_STATS, dev.key, 10)
        h, guest_mac = req.hdr, bytes.fromhex(GUEST_MAC.replace(":", ""))
        answer = lambda key, nonce: ctrl.build(guest_mac, ctrl.DEVICE_MAC, h["type"], h["seq"], h["epoch"],
                                               b"\xee" * 64, flags=D.NANOBPF_CTRL_F_RESPONSE, key=key, nonce=nonce)
        spy.send(answer(ctrlkey.DeviceKey(WRONG_KEY), req.nonce))       # another key's tag
        altered = bytearray(answer(dev.key, req.nonce))
        altered[14 + D.CTRL_HDR_SIZE + D.NANOBPF_CTRL_NONCE_LEN] ^= 1    # one body bit after tagging
        spy.send(bytes(altered))
        spy.send(answer(dev.key, bytes(D.NANOBPF_CTRL_NONCE_LEN)))      # authentic, another request's nonce
        wait_for(lambda: _guest_drv_stat(g, "ctrl_auth_fail") == 2 and
                 _guest_drv_stat(g, "ctrl_unmatched") == unmatched0 + 1, 5, "the forged answers counted")
        assert "EXIT" not in g.run("cat /tmp/s.out"), "a forged answer completed the request"
        dev.set_faults()                                                # the next retransmission is answered
        out = g.run("for i in $(seq 200); do grep -q EXIT /tmp/s.out && break; sleep 0.1; done; cat /tmp/s.out")
        assert "EXIT=0" in out, out
        doc = json.loads(out[:out.index("EXIT=")])
        assert doc["device"]["epoch"] == dev.epoch and doc["device"]["ctrl_auth_fail"] == st["ctrl_auth_fail"], doc
        assert doc["driver"]["ctrl_auth_fail"] == 2, doc["driver"]
        assert g.ctl("dev show")["link_state"] == "in_sync"
        g.assert_log_clean()
    finally:
        if spy:
            spy.close()
        rig.close()
