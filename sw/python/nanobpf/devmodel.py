"""Reference device model: the DPU's control side and packet behaviour, in Python (docs/control.md).

One file on purpose (about 900 lines): the model is one state (sessions, key table, program, maps, tables,
counters) that the control messages and the data path both change, read best side by side.

It answers the control protocol exactly as the device must (sessions, epochs, the at-most-once
sequence window with its replay cache, every status code), keeps the device state (key table,
attached program, PISA table words, counters) and forwards data frames between its host port and its
network port, running the attached XDP program in the device's own eBPF runtime (nanobpf-run, the
firmware's loader, verifier and interpreter). Control frames are accepted only on the host port.

Ports are nanobpf.ctrl ports: MemoryLink ends (tests), TapPort (a TAP the model owns) or PacketPort
(an existing interface, e.g. the TAP QEMU opened). Port numbers seen by programs (ingress_ifindex,
bpf_redirect): host 1, network 2. XDP_TX sends back out of the ingress port, XDP_REDIRECT to port 1 or
2, XDP_PASS onwards (host -> network, network -> host), anything else drops.

Data path, failing closed (every drop is counted by its reason: in = out + drops):
- host frames run the attached program as they are, the shim included; without a program they go to
  the network unchanged. A host frame with the ENCRYPT shim ("seal this or drop it") is dropped when no
  program is attached (encrypt_no_prog), and leaves only towards the network, without a shim, and only
  if the program counted it sealed during that run (its `quic_stats` map, entry
  NANOBPF_QUIC_STAT_SEALED); otherwise it is dropped (encrypt_unsealed). The program may remove the shim
  itself or leave it where it came, unchanged: the egress then leaves those 4 bytes out (egress_shim
  strip; a changed one is encrypt_unsealed). A malformed shim from the host (not exactly ENCRYPT, a CID
  length above 20) is dropped (bad_shim).
- network frames run the program; those it passes go to the host, with the DECRYPTED shim (put in by
  the egress, before its deparser) when the program counted them opened
  (quic_stats[NANOBPF_QUIC_STAT_OPENED]). A shim from the network is dropped (bad_shim), and so is any
  frame a program lets out still carrying one; the deparser drops a frame that would carry one towards
  the network behind the one stripped or a VLAN tag (shim_to_net, PISA's tx_shim).

Key table: entries per direction (ctrl.KeyId: dir, CID length, 20-byte id; a zero-length CID is the
peer's address id), mirrored into the program's `nanobpf_quic_keys` map. The control plane keeps the
`quic_pn` map (packet-number state, same key) in step: an entry's state starts at zero on KEY_ADD
(fresh keys), goes with the entry on KEY_DEL and KEY_FLUSH, and is kept on KEY_UPDATE. The runtime
holds it as the key table's companion, one state per key table slot (firmware/ebpf/maps.c): a key
has a state exactly while it has an entry, and `bpf_quic_pn_of` finds it from the entry's value.
Like the key table it is the
device's, not the program's: it outlives program loads, swaps and unloads (kept here while no program
that declares it is attached). It also owns the `open_cid_lens`
field of `quic_config` (bit n: open entries with n-byte CIDs exist): rewritten whenever the open entries
change, a program is attached or quic_config is written with MAP_UPDATE (the other fields are the
user's).

Event maps (RINGBUF, PERF_EVENT_ARRAY): EVENTS drains the attached program's map through its runtime
(nanobpf-run's `events`, the same ring code as the device), as many records as the response holds.

Fault injection (set_faults) applies to control frames in both directions, from a seeded RNG.

fast=True (nanobpf-devmodel --fast): while a program is attached, the data frames are the runtime
process's (nanobpf-run --serve, sw/tools/src/model_serve.c, with libcrypto's AES): it reads the ports,
runs the program and forwards the frames in C by the rules of _from_host, _from_net, _run_prog and _out
below, and sends the host's control frames up a socket to this model, reading the ports again only once
the model has handled one ("resume"). The control plane stays here, unchanged; the native path's
counters are added to stats() and carried over program swaps. Only without PISA, on ports that are file
descriptors (TapPort, PacketPort, MemoryLink ends; not VlanPort) and without --jit; otherwise, and with
no program attached, the frames take the Python path below.

    python -m nanobpf.devmodel --host-tap nbh0 --net-tap nbn0     # or nanobpf-devmodel
"""
import argparse
import os
import random
import select
import socket
import struct
import sys
import tempfile
import threading
import time
from collections import Counter, OrderedDict
from pathlib import Path

import nanobpf_ctrl_defs as D
import nanobpf_ebpf_defs as abi

from . import ctrl, ctrlkey
from .models import pisa as pisa_model
from .faults import LinkFaults
from .ebpf.device import DeviceError, DeviceXdp
from .ebpf.loader import LoadError, parse_image

__all__ = ["DeviceModel", "HOST_PORT", "NET_PORT", "main"]

HOST_PORT, NET_PORT = abi.NANOBPF_IFINDEX_HOST, abi.NANOBPF_IFINDEX_NET  # hw/defs/ebpf.toml ifindex
KEYTABLE = abi.KEYTABLE_MAP_NAME
QUIC_STATS = "quic_stats"      # the QUIC programs' per-CPU frame counters (sw/ebpf/quic)
PN_MAP = abi.KEYTABLE_PN_MAP_NAME
TABLES = {D.NANOBPF_CTRL_TABLE_PORT: "port_entry", D.NANOBPF_CTRL_TABLE_PROFILE: "profile_entry",
          D.NANOBPF_CTRL_TABLE_LPORT_CFG: "lport_cfg"}
ERRNO_STATUS = {17: D.NANOBPF_CTRL_ST_EXIST, 2: D.NANOBPF_CTRL_ST_NOENT, 7: D.NANOBPF_CTRL_ST_FULL,
                22: D.NANOBPF_CTRL_ST_INVALID}
EVENT_MAP_TYPES = frozenset({abi.NANOBPF_MAP_TYPE_RINGBUF, abi.NANOBPF_MAP_TYPE_PERF_EVENT_ARRAY})
# EVENTS fills a response as the device does: nanobpf-run's events budget counts each record as its length
# plus NANOBPF_EVENT_REC_HDR, the wire's event_rec is that size
assert D.EVENT_REC_SIZE == abi.NANOBPF_EVENT_REC_HDR


class _Refuse(Exception):
    def __init__(self, status, message=""):
        self.status, self.message = status, message


def _serial_newer(a, b):
    """a is after b in 32-bit serial number arithmetic (RFC 1982)."""
    return a != b and ((a - b) & 0xFFFFFFFF) < 0x80000000


def _table_limits(name):
    import nanobpf_soc as soc
    reg = soc.REGS[("pisa", name)]
    mask = 0
    for lsb, width in reg.fields.values():
        mask |= ((1 << width) - 1) << lsb
    return reg.count, mask


def _boot_port_entries():
    """index -> word of the port_entry words the device writes at boot (pisa.default_tables)."""
    from .soc import DATAPATH, pack
    return {i: pack("pisa", "port_entry", valid=1, port=DATAPATH[port], lport=DATAPATH[lport])
            for i, (port, lport) in enumerate((("host_port", "host_lport"), ("net_port", "net_lport")))}


def _brings_host_in(word):
    """A port_entry word that maps frames to the host's logical port (its control frames come through one)."""
    from .soc import DATAPATH, unpack
    e = unpack("pisa", "port_entry", word)
    return bool(e["valid"]) and e["lport"] == DATAPATH["host_lport"]


def _without_secrets(value):
    """A key table value as MAP_LOOKUP answers it: keys, IVs and the header-protection key zeroed
    (responses are authenticated, not encrypted: key material never leaves the device)."""
    v = bytearray(value)
    for name, off, size in abi.STRUCTS["quic_keys"].fields:
        if name in SECRET_KEY_FIELDS:
            v[off:off + size] = bytes(size)
    return bytes(v)


SECRET_KEY_FIELDS = ("key", "iv", "hp")


class DeviceModel:
    """The device on two ports. Drive it with start()/stop() (a thread) or poll() (tests)."""

    def __init__(self, host, net=None, key_slots=abi.NANOBPF_KEYTABLE_ENTRIES, cores=4, seed=None, mac=ctrl.DEVICE_MAC, jit=False, log=None,
                 pisa=False, key=None, fast=False):
        self.host, self.net = host, net
        self.key = key or ctrlkey.default()     # the device key its image carries (ctrlkey.DeviceKey)
        self.use_pisa = pisa
        self.key_slots, self.cores, self.mac, self.jit = key_slots, cores, mac, jit
        self.rng = random.Random(seed)
        self.log = log
        self.lock = threading.RLock()
        self.faults = LinkFaults(rng=self.rng)
        self._thread, self._stop = None, threading.Event()
        self._tmp = tempfile.TemporaryDirectory(prefix="nanobpf-devmodel-")
        self.resets = 0
        # fast: the native data path while a program is attached (None: the Python path; fast_why says why)
        self.fast_why = _fast_refused(host, net, pisa, jit) if fast else "not asked for"
        self.fast = fast and not self.fast_why
        self._up = self._up_child = None
        if self.fast:   # host control frames come up this socket from the runtime process
            self._up, self._up_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._power_on()

    # ------------------------------------------------------------ state
    def _power_on(self):
        self.epoch = self.rng.randrange(1, 1 << 32)
        self.session = False
        self.version = None
        self.last_seq = 0
        self.cache = OrderedDict()     # seq -> (type, status, body, (request type, request body))
        self._keys = {}                # ctrl.KeyId -> (slot, keys)
        self._pn = {}                  # packet-number state while no program holds it: key -> value
        self._pinned = {}              # the attached program's pinned maps: name -> loader Map (its shape)
        self._prog = None              # (DeviceXdp, info dict)
        self._loading = None           # dict(total, crc32, name, data)
        self._tables = {}
        self._ports = _boot_port_entries()   # the port table as it is now (index -> word)
        self.counters = Counter()
        # pisa=True: frames pass the PISA pipeline's model first and last, with the tables the data-plane
        # firmware writes at boot (frames it drops are counted by reason, as the RTL DPU does)
        self.pisa = pisa_model.default_tables(pisa_model.Pisa()) if self.use_pisa else None
        # PISA's CID table (the pipeline's own; without pisa=True a pipeline model that only holds it):
        # (CID, length) -> the key table slot of the open entry, so a program gets conn = 1 + slot
        self._cid_pisa = self.pisa or pisa_model.Pisa()
        self._parse = None  # what PISA parsed of the frame in hand (_pisa_ingress)
        self.applied = []              # (epoch, seq, type, status) in the order applied

    def reset(self):
        """A device reset (power cycle or RESET): new epoch, everything cleared."""
        with self.lock:
            if self._prog:
                self._prog[0].close()
            self.resets += 1
            self._power_on()

    def cid_table(self):
        """PISA's CID table: {CID bytes: key table slot}."""
        with self.lock:
            return {e.cid: e.slot for e in self._cid_pisa.cid_table if e}

    def keys(self):
        """{ctrl.KeyId: (slot, 80-byte keys)}"""
        with self.lock:
            return dict(self._keys)

    def program(self):
        with self.lock:
            return dict(self._prog[1]) if self._prog else None

    def tables(self):
        with self.lock:
            return dict(self._tables)

    def stats(self):
        with self.lock:
            c = Counter(self.counters)
            if (x := self._native()):
                self._add_native(c, x)
            c["keys"], c["resets"], c["epoch"] = len(self._keys), self.resets, self.epoch
            c["cid_full"] = self._cid_pisa.reg_read("counter", pisa_model.COUNTER["cid_full"])
            return {name: c[name] for name in D.STAT_NAMES.values()}

    def map_lookup(self, name, key):
        with self.lock:
            if not self._prog:
                return None
            return self._prog[0].map_lookup(name, key)

    def set_faults(self, loss=0.0, dup=0.0, reorder=0.0):
        """Probabilities of dropping, duplicating and holding back (behind the next frame) each control frame."""
        self.faults.set(loss, dup, reorder)

    # ------------------------------------------------------------ running
    def start(self):
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="devmodel", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)
            self._thread = None
        with self.lock:
            if self._prog:
                self._prog[0].close()
                self._prog = None
        for s in (self._up, self._up_child):
            if s is not None:
                s.close()
        self._up = self._up_child = None
        self._tmp.cleanup()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _run(self):
        while not self._stop.is_set():
            self.poll(0.05)

    def poll(self, timeout=0.0):
        """Handle the frames waiting on the ports (waiting up to timeout for the first); with the native
        data path, the frames it sent up."""
        if self._native():
            r, _, _ = select.select([self._up], [], [], timeout)
            if r:
                data = self._up.recv(65536 + 1)
                with self.lock:
                    if data:
                        (self._from_host if data[0] == HOST_PORT else self._from_net)(data[1:])
                    self._resume()
            return
        ports = [p for p in (self.host, self.net) if p is not None]
        r, _, _ = select.select(ports, [], [], timeout)
        for p in r:
            frame = p._read()
            if frame is None:
                continue
            with self.lock:
                if p is self.host:
                    self._from_host(frame)
                else:
                    self._from_net(frame)
                self._resume()      # a program just attached takes the ports over

    # ------------------------------------------------------------ the native data path (fast=True)
    def _native(self):
        """The attached program's runtime when it is the data path (fast), else None."""
        return self._prog[0] if self.fast and self._prog else None

    def _resume(self):
        if (x := self._native()):
            x.resume()

    def _serve(self):
        """DeviceXdp's serve argument: the ports' descriptors, the up socket, the egress's longest frame."""
        if not self.fast:
            return None
        return (self.host.fileno(), self.net.fileno() if self.net is not None else -1, self._up_child.fileno(),
                pisa_model.Pisa().max_frame, QUIC_STATS)

    @staticmethod
    def _add_native(counters, x):
        """Add the native path's counts (by device counter id) to counters."""
        by_id, egress_drop = x.native_counters()
        for i, v in by_id.items():
            counters[D.STAT_NAMES[i]] += v
        counters["egress_drop"] += egress_drop

    def _send(self, port, frame):
        if port is not None:
            port.send(frame)

    # ------------------------------------------------------------ frames
    def _pisa_ingress(self, frame, port):
        """The frame as it passes the PISA ingress (without its outer VLAN tag, which the port table
        matched: pisa_model.pop_tag), or None when PISA drops it (counted); without pisa=True the frame
        itself. What PISA parsed is kept for the program's context (self._parse; all 0 without pisa=True)."""
        self._parse = None
        if self.pisa is None:
            return frame
        import nanobpf_soc as soc
        action, meta, reason = self.pisa.ingress(frame, soc.DATAPATH["host_port" if port == HOST_PORT else "net_port"])
        if action == pisa_model.ACTION["drop"]:
            self.counters["pisa_drop"] += 1
            if reason == pisa_model.DROP["ctrl_foreign"]:   # STATS ctrl_foreign is PISA's count, as on the device
                self.counters["ctrl_foreign"] += 1
            if reason == pisa_model.DROP["no_lport"]:       # and no_lport
                self.counters["no_lport"] += 1
            return None
        self._parse = pisa_model.xdp_parse(meta)
        return pisa_model.pop_tag(frame)[0]

    def _from_host(self, frame):
        frame = self._pisa_ingress(frame, HOST_PORT)
        if frame is None:
            return
        if (len(frame) >= ctrl.ETH + ctrl.HDR and struct.unpack_from(">H", frame, 12)[0] == D.ETHERTYPE
                and frame[ctrl.ETH + 2] & D.NANOBPF_CTRL_F_RESPONSE):
            self.counters["ctrl_malformed"] += 1     # a response from the host: malformed, as the firmware
            return
        try:
            f = ctrl.parse(frame, self.key)
        except ctrl.AuthError:
            self.counters["ctrl_auth_fail"] += 1     # forged, altered or another key's: nothing in it is read
            return
        except ValueError:
            self.counters["ctrl_malformed"] += 1
            return
        if f is not None:
            for fr in self.faults.through("in", frame):
                self._control(ctrl.parse(fr, self.key))
            return
        self.counters["host_rx"] += 1
        seal = ctrl.has_shim(frame)
        if seal:
            try:
                flags, _, _ = ctrl.strip_shim(frame)
            except ValueError:
                flags = None
            if flags != D.NANOBPF_SHIM_F_ENCRYPT:      # malformed, or DECRYPTED from the host
                self.counters["bad_shim"] += 1
                return
            self.counters["encrypt_req"] += 1
            if not self._prog:
                self.counters["encrypt_no_prog"] += 1  # never sent unsealed
                return
        if self._prog:
            self._run_prog(frame, HOST_PORT, seal=seal)   # the shim included: the program strips it
        else:
            self._out(NET_PORT, frame)

    def _from_net(self, frame):
        frame = self._pisa_ingress(frame, NET_PORT)
        if frame is None:
            return
        if len(frame) >= 14 and struct.unpack_from(">H", frame, 12)[0] == D.ETHERTYPE:
            self.counters["ctrl_foreign"] += 1      # control frames from the network are never obeyed
            return
        self.counters["net_rx"] += 1
        if ctrl.has_shim(frame):
            self.counters["bad_shim"] += 1          # a shim is host-link metadata, not network traffic
            return
        if self._prog:
            self._run_prog(frame, NET_PORT)
        else:
            self._out(HOST_PORT, frame)

    def _out(self, port, frame, shim=0, fix_csum=False, fix_len=False):
        """A frame leaves towards port (with the DECRYPTED shim when shim: the egress puts it in before
        the deparser, which sums behind it); fix_csum: the deparser recomputes its checksums (the program
        called bpf_xdp_csum_offload); fix_len: it sets the IP and UDP lengths from the frame's end first
        (a device helper left them to it)."""
        if shim:
            if len(frame) + 4 > (self.pisa or pisa_model.Pisa()).max_frame:   # the egress refuses the completion
                self.counters["egress_drop"] += 1
                return
            frame = ctrl.add_shim(frame, shim)
        if self.pisa is not None:   # the deparser: frames shorter than a header or too long are dropped there
            shims = self.pisa.counters[pisa_model.COUNTER["tx_shim"]]
            out = self.pisa.egress(frame, pisa_model.ACTION["to_host" if port == HOST_PORT else "to_network"], fix_csum, fix_len)
            if out is None:   # tx_shim: never a shim on the wire
                self.counters["shim_to_net" if self.pisa.counters[pisa_model.COUNTER["tx_shim"]] > shims else "egress_drop"] += 1
                return
            frame = out[0]
        else:
            if port == NET_PORT and len(frame) >= 14 and pisa_model.parse(frame, len(frame), step_shim=True).shim:
                self.counters["shim_to_net"] += 1   # the deparser's tx_shim: never a shim on the wire
                return
            if fix_csum or fix_len:
                frame = bytearray(frame)
                pisa_model.fix_frame_checksums(frame, fix_len)
                frame = bytes(frame)
        if port == HOST_PORT:
            self.counters["host_tx"] += 1
            if shim:
                self.counters["decrypted"] += 1
            self._send(self.host, frame)
        else:
            self.counters["net_tx"] += 1
            self._send(self.net, frame)

    @staticmethod
    def _quic_stat(xdp, index):
        """quic_stats[index] of the program (None without such a map)."""
        if QUIC_STATS not in xdp.map_names() or xdp.map_info(QUIC_STATS).value_size < 8:
            return None
        try:
            v = xdp.map_lookup_percpu(QUIC_STATS, struct.pack("<I", index))
        except (KeyError, TypeError, DeviceError):
            return None
        return sum(int.from_bytes(x[:8], "little") for x in v) if v else 0

    def _counted(self, xdp, index, before):
        """The program counted quic_stats[index] during the run that started at `before`."""
        return before is not None and (self._quic_stat(xdp, index) or 0) > before

    def _run_prog(self, frame, ingress, seal=False):
        """Run the program over a frame from `ingress`; seal: the frame carries the ENCRYPT shim and may
        leave only sealed, towards the network."""
        xdp = self._prog[0]
        watch = abi.NANOBPF_QUIC_STAT_SEALED if seal else abi.NANOBPF_QUIC_STAT_OPENED if ingress == NET_PORT else None
        before = self._quic_stat(xdp, watch) if watch is not None else None
        try:
            # the checksums the program left to the egress are the deparser's (_out)
            action, out = xdp.run(frame, ingress_ifindex=ingress, parse=self._parse, egress_csum=False)
            out = out[xdp.meta_len:]  # metadata stays on the device, as the firmware leaves it in the slot
            fix_csum, fix_len = xdp.csum_offload, xdp.len_offload
        except DeviceError:
            action, out, fix_csum, fix_len = abi.NANOBPF_XDP_ABORTED, b"", False, False
        if action == abi.NANOBPF_XDP_PASS:
            self.counters["xdp_pass"] += 1
            port = NET_PORT if ingress == HOST_PORT else HOST_PORT
        elif action in (abi.NANOBPF_XDP_TX, abi.NANOBPF_XDP_REDIRECT):
            port = ingress if action == abi.NANOBPF_XDP_TX else xdp.redirect_ifindex
            if port not in (HOST_PORT, NET_PORT):
                self.counters["xdp_drop"] += 1
                return
            self.counters["xdp_tx"] += 1
        else:
            self.counters["xdp_drop"] += 1
            return
        if seal:
            if not (port == NET_PORT and self._counted(xdp, watch, before)) or \
                    (ctrl.has_shim(out) and (out[12:16] != frame[12:16] or len(out) < 18)):
                self.counters["encrypt_unsealed"] += 1     # fail closed: never out unsealed
                return
            if ctrl.has_shim(out):   # the host's shim where it came, unchanged: the egress leaves it out
                out = out[:12] + out[16:]
            self._out(port, out, 0, fix_csum, fix_len)
            return
        if ctrl.has_shim(out):
            self.counters["bad_shim"] += 1             # only the device itself adds a shim
            return
        opened = ingress == NET_PORT and port == HOST_PORT and self._counted(xdp, watch, before)
        self._out(port, out, D.NANOBPF_SHIM_F_DECRYPTED if opened else 0, fix_csum, fix_len)

    # ------------------------------------------------------------ control
    def _respond(self, req, type_, status, body=b"", replay=False):
        flags = D.NANOBPF_CTRL_F_RESPONSE | (D.NANOBPF_CTRL_F_REPLAY if replay else 0)
        frame = ctrl.build(req.src, self.mac, type_, req.hdr["seq"], self.epoch, body, flags=flags, status=status,
                           version=self.version or D.VERSION, key=self.key, nonce=req.nonce)
        for fr in self.faults.through("out", frame):
            self._send(self.host, fr)

    def _control(self, req):
        h = req.hdr
        self.counters["ctrl_rx"] += 1
        seq = h["seq"]
        digest = (h["type"], req.body)
        if h["type"] == D.NANOBPF_CTRL_MSG_HELLO and self.session and self._cached(seq, digest):
            self.counters["ctrl_replayed"] += 1
            type_, status, body, _ = self.cache[seq]
            return self._respond(req, type_, status, body, replay=True)
        if h["type"] == D.NANOBPF_CTRL_MSG_HELLO and self.session and not _serial_newer(seq, self.last_seq):
            # a late duplicate must not restart the window; a restarted host learns where to continue
            self.counters["ctrl_stale"] += 1
            return self._respond(req, h["type"], D.NANOBPF_CTRL_ST_STALE_SEQ, struct.pack(">I", self.last_seq))
        if h["type"] == D.NANOBPF_CTRL_MSG_HELLO:
            return self._hello(req)
        if not self.session or h["epoch"] != self.epoch:
            self.counters["ctrl_stale"] += 1
            st = D.NANOBPF_CTRL_ST_NEED_HELLO if not self.session else D.NANOBPF_CTRL_ST_STALE_EPOCH
            return self._respond(req, h["type"], st)
        if self._cached(seq, digest):
            self.counters["ctrl_replayed"] += 1
            type_, status, body, _ = self.cache[seq]
            return self._respond(req, type_, status, body, replay=True)
        if not _serial_newer(seq, self.last_seq):     # old, or a different request under a cached number
            self.counters["ctrl_stale"] += 1
            return self._respond(req, h["type"], D.NANOBPF_CTRL_ST_STALE_SEQ, struct.pack(">I", self.last_seq))
        if h["version"] != self.version:
            self.counters["ctrl_errors"] += 1
            return self._respond(req, h["type"], D.NANOBPF_CTRL_ST_BAD_VERSION,
                                 f"session version {self.version}, request version {h['version']}".encode())
        epoch = self.epoch
        try:
            status, body = D.NANOBPF_CTRL_ST_OK, self._apply(h["type"], req.body)
        except _Refuse as e:
            status, body = e.status, e.message.encode()[:D.NANOBPF_CTRL_MAX_ERRMSG]
            self.counters["ctrl_errors"] += 1
        self.applied.append((epoch, seq, h["type"], status))
        self.counters["ctrl_applied"] += 1
        if h["type"] == D.NANOBPF_CTRL_MSG_RESET and status == D.NANOBPF_CTRL_ST_OK:
            return self._respond(req, h["type"], status, body)     # answered with the new epoch, no session
        self.last_seq = seq
        self.cache[seq] = (h["type"], status, body, digest)
        while len(self.cache) > D.NANOBPF_CTRL_REPLAY_CACHE:
            self.cache.popitem(last=False)
        if self.log:
            self.log(f"applied {D.MSG_NAMES.get(h['type'], h['type'])} seq {seq}: {D.STATUS_NAMES[status]}")
        self._respond(req, h["type"], status, body)

    def _hello(self, req):
        try:
            b = D.unpack("hello_req", req.body)
        except ValueError:
            self.counters["ctrl_errors"] += 1
            return self._respond(req, req.hdr["type"], D.NANOBPF_CTRL_ST_BAD_LENGTH)
        ver = min(D.VERSION, b["ver_max"])
        if ver < max(D.MIN_VERSION, b["ver_min"]):
            self.counters["ctrl_errors"] += 1
            return self._respond(req, req.hdr["type"], D.NANOBPF_CTRL_ST_BAD_VERSION,
                                 f"device speaks {D.MIN_VERSION}..{D.VERSION}".encode())
        self.session, self.version = True, ver
        self.last_seq = req.hdr["seq"]
        self.cache.clear()
        self.applied.append((self.epoch, self.last_seq, req.hdr["type"], D.NANOBPF_CTRL_ST_OK))
        self.counters["ctrl_applied"] += 1
        body = D.pack("hello_resp", version=ver, cores=self.cores, key_slots=self.key_slots,
                      max_image=D.NANOBPF_CTRL_MAX_IMAGE, max_body=D.NANOBPF_CTRL_MAX_BODY)
        self.cache[self.last_seq] = (req.hdr["type"], D.NANOBPF_CTRL_ST_OK, body, (req.hdr["type"], req.body))
        self._respond(req, req.hdr["type"], D.NANOBPF_CTRL_ST_OK, body)

    def _cached(self, seq, digest):
        """seq is in the replay cache for this very request (same type and body): a duplicate."""
        return seq in self.cache and self.cache[seq][3] == digest

    # ------------------------------------------------------------ requests
    def _apply(self, type_, body):
        handler = self._HANDLERS.get(type_)
        if handler is None:
            raise _Refuse(D.NANOBPF_CTRL_ST_BAD_TYPE, f"unknown message type {type_:#x}")
        return handler(self, body)

    @staticmethod
    def _exact(body, name, extra_ok=False):
        size = D.STRUCTS[name][0].size
        if len(body) < size or (len(body) != size and not extra_ok):
            raise _Refuse(D.NANOBPF_CTRL_ST_BAD_LENGTH, f"{name}: {len(body)} bytes, expected {size}")
        return D.unpack(name, body)

    @staticmethod
    def _key_id(m):
        """The KeyId a key_msg/key_del names, or INVALID with the field at fault."""
        n, d, cid = m["cid_len"], m["dir"], m["cid"]
        if d not in (ctrl.OPEN, ctrl.SEAL):
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, f"dir {d}: {ctrl.OPEN} (open) or {ctrl.SEAL} (seal)")
        if n > D.NANOBPF_CTRL_MAX_CID:
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, f"cid_len {n}: 0..{D.NANOBPF_CTRL_MAX_CID}")
        if any(m["reserved"]):
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, "reserved bytes not zero")
        if n and any(cid[n:]):
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, f"cid: bytes after the {n}-byte CID not zero")
        if not n and not any(cid):
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, "cid_len 0: cid holds the peer's address id, not all zero")
        return ctrl.KeyId(d, n, bytes(cid))

    @staticmethod
    def _check_keys(kid, keys):
        phase, flags, cid_len = keys[0], keys[1], keys[2]
        f = abi.NANOBPF_QUIC_KEY_NEXT | abi.NANOBPF_QUIC_KEY_PREV
        problems = []
        if phase > 1:
            problems.append(f"key_phase {phase}: 0 or 1")
        if flags & ~f or flags == f:
            problems.append(f"flags {flags:#x}: NEXT ({abi.NANOBPF_QUIC_KEY_NEXT}) or PREV ({abi.NANOBPF_QUIC_KEY_PREV}), "
                            "not both")
        elif flags & abi.NANOBPF_QUIC_KEY_PREV and kid.dir != ctrl.OPEN:
            problems.append("flags: PREV (previous keys) only in open entries")
        if cid_len != kid.cid_len:
            problems.append(f"cid_len {cid_len}: the entry's CID length is {kid.cid_len}")
        if keys[3] or any(keys[76:80]):
            problems.append("reserved and pad not zero")
        if problems:
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, "keys: " + "; ".join(problems))

    def _do_reset(self, body):
        if body:
            raise _Refuse(D.NANOBPF_CTRL_ST_BAD_LENGTH, "RESET has no body")
        self.reset()
        return b""

    def _do_stats(self, body):
        if body:
            raise _Refuse(D.NANOBPF_CTRL_ST_BAD_LENGTH, "STATS has no body")
        ids = {v: k for k, v in D.STAT_NAMES.items()}
        return b"".join(D.pack("stat_entry", id=ids[n], value=v) for n, v in self.stats().items())

    def _prog_map(self, name, struct_name=None):
        """The attached program if it has map `name` (with the ABI struct's key or value size), else None."""
        if not self._prog or name not in self._prog[0].map_names():
            return None
        x = self._prog[0]
        if struct_name:
            info, size = x.map_info(name), abi.STRUCTS[struct_name].size
            if size not in (info.key_size, info.value_size):
                return None
        return x

    def _keytable_map(self):
        return self._prog_map(KEYTABLE)

    def _pn_map(self):
        """The attached program if it declares the packet-number map (the runtime binds only its shape)."""
        return self._prog_map(PN_MAP)

    def _forget_pn(self, kid):
        """Remove the packet-number state of an entry (quic_pn, key struct nanobpf_quic_cid)."""
        self._pn.pop(kid.pack(), None)
        if (x := self._pn_map()):
            x.map_delete(PN_MAP, kid.pack())

    def _pn_entries(self):
        """The attached program's packet-number map as {key: value}."""
        x, out, k = self._pn_map(), {}, None
        while x and (k := x.map_next_key(PN_MAP, k)) is not None:
            out[k] = x.map_lookup(PN_MAP, k)
        return out

    def _detach(self):
        """Close the attached program, keeping the device's packet-number state for the next one. Its
        pinned maps go with it unless the next program shares them (_share_pinned)."""
        if self._pn_map():
            self._pn = self._pn_entries()
        if (x := self._native()):
            self._add_native(self.counters, x)   # the device's counters outlive the program
        self._prog[0].close()
        self._prog = None
        self._pinned = {}

    def _share_pinned(self, xdp, pinned):
        """The device has one map per pinned name, held by every program that declares it: a program
        replacing one that pins the same map finds its entries (each model program is a runtime process
        of its own, so they are copied). A pinned event map's waiting records are not carried over (the
        device keeps them): the model has no way to put records into a ring."""
        old = self._prog[0]
        for name in sorted(pinned.keys() & self._pinned.keys()):
            for key, value in old.map_items(name):
                xdp.map_update(name, key, value)

    def open_cid_lens(self):
        """The quic_config.open_cid_lens bit map of the key table: bit n for open entries of n-byte CIDs."""
        bits = 0
        for kid in self._keys:
            if kid.dir == ctrl.OPEN:
                bits |= 1 << kid.cid_len
        return bits

    def _sync_config(self):
        """Write open_cid_lens into quic_config[0], keeping the other fields (read-modify-write)."""
        x = self._prog_map("quic_config", "quic_config")
        if not x:
            return
        st, key = abi.STRUCTS["quic_config"], struct.pack("<I", 0)
        if x.map_info("quic_config").value_size != st.size or x.map_info("quic_config").key_size != 4:
            return
        off = next(o for name, o, _ in st.fields if name == "open_cid_lens")
        value = bytearray(x.map_lookup("quic_config", key) or bytes(st.size))
        bits = struct.pack("<I", self.open_cid_lens())
        if value[off:off + 4] != bits:
            value[off:off + 4] = bits
            x.map_update("quic_config", key, bytes(value))

    def _cid_command(self, op, kid, slot=0):
        """Every entry goes into PISA's CID table, an open entry's CID (packets from the network carry the
        device's own CIDs) and a seal entry's marked as such (frames to seal carry the peer's CID behind
        the shim); an entry of a zero-length CID by its peer's address id (length 0 and the 20 bytes):
        inserted after the entry is in the key table, removed before it leaves, so a packet's conn never
        names a slot without its entry. A full table refuses the insert (counted, cid_full): the entry
        still works, its packets get conn 0 and the program looks the keys up by CID."""
        p, key = self._cid_pisa, kid.id.ljust(24, b"\0")
        for i in range(3):
            p.reg_write("cid_key", int.from_bytes(key[8 * i:8 * i + 8], "little"), i)
        p.reg_write("cid_arg", pisa_model.pack("pisa", "cid_arg", len=kid.cid_len, seal=int(kid.dir == ctrl.SEAL), slot=slot))
        p.reg_write("cid_cmd", pisa_model.pack("pisa", "cid_cmd", op=pisa_model.CID_OP[op]))

    def _do_key(self, body, update):
        m = self._exact(body, "key_msg")
        kid, keys = self._key_id(m), m["keys"]
        self._check_keys(kid, keys)
        if update:
            if kid not in self._keys:
                raise _Refuse(D.NANOBPF_CTRL_ST_NOENT, "no such entry")
            slot = self._keys[kid][0]
        else:
            if kid in self._keys:
                raise _Refuse(D.NANOBPF_CTRL_ST_EXIST, "entry already present (KEY_UPDATE replaces keys)")
            used = {s for s, _ in self._keys.values()}
            slot = next((s for s in range(self.key_slots) if s not in used), None)
            if slot is None:
                raise _Refuse(D.NANOBPF_CTRL_ST_FULL, f"key table full ({self.key_slots} entries)")
        self._keys[kid] = (slot, bytes(keys))
        if (x := self._keytable_map()):
            x.map_update(KEYTABLE, kid.pack(), keys)
        if not update:
            self._forget_pn(kid)            # fresh keys: packet numbers start anew (an update keeps them)
            self._sync_config()
            self._cid_command("insert", kid, slot)
        return D.pack("key_resp", slot=slot)

    def _do_key_del(self, body):
        kid = self._key_id(self._exact(body, "key_del"))
        if kid not in self._keys:
            raise _Refuse(D.NANOBPF_CTRL_ST_NOENT, "no such entry")
        self._cid_command("delete", kid)
        del self._keys[kid]
        if (x := self._keytable_map()):
            x.map_delete(KEYTABLE, kid.pack())
        self._forget_pn(kid)
        self._sync_config()
        return b""

    def _do_key_flush(self, body):
        if body:
            raise _Refuse(D.NANOBPF_CTRL_ST_BAD_LENGTH, "KEY_FLUSH has no body")
        x = self._keytable_map()
        for kid in self._keys:
            self._cid_command("delete", kid)
            if x:
                x.map_delete(KEYTABLE, kid.pack())
        self._keys.clear()
        for key in self._pn_entries():     # every entry's state, none left behind (as the device)
            self._pn_map().map_delete(PN_MAP, key)
        self._pn.clear()
        self._sync_config()
        return b""

    def _do_prog_begin(self, body):
        m = self._exact(body, "prog_begin")
        if not 1 <= m["total"] <= D.NANOBPF_CTRL_MAX_IMAGE:
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, f"image of {m['total']} bytes: 1..{D.NANOBPF_CTRL_MAX_IMAGE}")
        self._loading = dict(m, data=bytearray())
        return b""

    def _do_prog_chunk(self, body):
        m = self._exact(body, "prog_chunk", extra_ok=True)
        data = body[D.PROG_CHUNK_SIZE:]
        ld = self._loading
        if ld is None:
            raise _Refuse(D.NANOBPF_CTRL_ST_SEQUENCE, "PROG_CHUNK without PROG_BEGIN")
        if m["offset"] != len(ld["data"]) or len(ld["data"]) + len(data) > ld["total"]:
            raise _Refuse(D.NANOBPF_CTRL_ST_SEQUENCE,
                          f"chunk at {m['offset']}+{len(data)}: have {len(ld['data'])} of {ld['total']} bytes")
        ld["data"] += data
        return b""

    def _do_prog_commit(self, body):
        m = self._exact(body, "prog_begin")
        ld = self._loading
        if ld is None or (m["total"], m["crc32"], m["name"]) != (ld["total"], ld["crc32"], ld["name"]):
            raise _Refuse(D.NANOBPF_CTRL_ST_SEQUENCE, "PROG_COMMIT does not match PROG_BEGIN")
        if len(ld["data"]) != ld["total"]:
            raise _Refuse(D.NANOBPF_CTRL_ST_SEQUENCE, f"have {len(ld['data'])} of {ld['total']} bytes")
        image = bytes(ld["data"])
        self._loading = None
        if ctrl.crc32(image) != ld["crc32"]:
            raise _Refuse(D.NANOBPF_CTRL_ST_SEQUENCE, "image CRC-32 mismatch")
        try:
            pinned = {m.name: m for m in parse_image(image).maps if m.pinning}
        except (LoadError, ValueError, struct.error) as e:
            raise _Refuse(D.NANOBPF_CTRL_ST_VERIFIER, f"image: {e}")
        for name in pinned.keys() & self._pinned.keys():   # as maps.c ebpf_pinned_map_bind
            old, new = self._pinned[name], pinned[name]
            if (old.type, old.key_size, old.value_size, old.max_entries, old.flags, old.spin_lock_off) != \
                    (new.type, new.key_size, new.value_size, new.max_entries, new.flags, new.spin_lock_off):
                raise _Refuse(D.NANOBPF_CTRL_ST_VERIFIER,
                              f"map {name}: pinned with type {old.type}, key {old.key_size}, value {old.value_size}, "
                              f"{old.max_entries} entries; this program declares type {new.type}, key {new.key_size}, "
                              f"value {new.value_size}, {new.max_entries} entries")
        path = Path(self._tmp.name) / f"prog-{self.epoch:08x}-{time.monotonic_ns()}.nbpf"
        path.write_bytes(image)
        xdp = None
        try:                                    # a refused program leaves the attached one in place
            xdp = DeviceXdp(path, jit=self.jit, serve=self._serve())   # fast: waits for _resume
            insns, maps = xdp.info()
        except DeviceError as e:
            if xdp is not None:
                xdp.close()
            raise _Refuse(D.NANOBPF_CTRL_ST_VERIFIER, str(e).split(": ", 1)[-1])
        info = dict(name=ld["name"], image_len=len(image), crc32=ld["crc32"], insns=insns, maps=maps)
        if self._prog:
            self._share_pinned(xdp, pinned)
            self._detach()
        self._pinned = pinned
        self._prog = (xdp, info)
        if KEYTABLE in xdp.map_names():
            for kid, (_, keys) in self._keys.items():
                xdp.map_update(KEYTABLE, kid.pack(), keys)
        if PN_MAP in xdp.map_names() and KEYTABLE in xdp.map_names():
            # a state per key table entry (the runtime's quic_pn follows its key table, mirrored above)
            entries = {kid.pack() for kid in self._keys}
            for key, value in self._pn.items():
                if key in entries:
                    xdp.map_update(PN_MAP, key, value)
            self._pn = {}
        self._sync_config()
        return D.pack("prog_info", **info)

    def _do_prog_unload(self, body):
        if body:
            raise _Refuse(D.NANOBPF_CTRL_ST_BAD_LENGTH, "PROG_UNLOAD has no body")
        if not self._prog:
            raise _Refuse(D.NANOBPF_CTRL_ST_NO_PROG, "no program attached")
        self._detach()
        return b""

    def _do_prog_info(self, body):
        if body:
            raise _Refuse(D.NANOBPF_CTRL_ST_BAD_LENGTH, "PROG_INFO has no body")
        if not self._prog:
            raise _Refuse(D.NANOBPF_CTRL_ST_NO_PROG, "no program attached")
        return D.pack("prog_info", **self._prog[1])

    def _do_map(self, body, type_):
        m = self._exact(body, "map_req", extra_ok=True)
        kl, vl = m["key_len"], m["value_len"]
        if len(body) != D.MAP_REQ_SIZE + kl + vl:
            raise _Refuse(D.NANOBPF_CTRL_ST_BAD_LENGTH, f"map_req: {len(body)} bytes, header + key {kl} + value {vl}")
        if m["reserved"] or m["flags"] > 2 or (m["flags"] and type_ != D.NANOBPF_CTRL_MSG_MAP_UPDATE):
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, "flags: 0..2 on MAP_UPDATE only; reserved zero")
        if vl and type_ != D.NANOBPF_CTRL_MSG_MAP_UPDATE:
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, "only MAP_UPDATE carries a value")
        if not self._prog:
            raise _Refuse(D.NANOBPF_CTRL_ST_NO_PROG, "no program attached")
        xdp, name = self._prog[0], m["name"]
        if name not in xdp.map_names():
            raise _Refuse(D.NANOBPF_CTRL_ST_NO_MAP, f"no map '{name}' (maps: {', '.join(xdp.map_names())})")
        info = xdp.map_info(name)
        if info.type in EVENT_MAP_TYPES:
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, f"map {name} is an event map (records, no keys): read it with EVENTS")
        key, value = body[D.MAP_REQ_SIZE:D.MAP_REQ_SIZE + kl], body[D.MAP_REQ_SIZE + kl:]
        if not (kl == info.key_size or (type_ == D.NANOBPF_CTRL_MSG_MAP_NEXT and kl == 0)):
            raise _Refuse(D.NANOBPF_CTRL_ST_NO_MAP, f"map {name}: key of {kl} bytes, the map's is {info.key_size}")
        if type_ == D.NANOBPF_CTRL_MSG_MAP_UPDATE and vl != info.value_size:
            raise _Refuse(D.NANOBPF_CTRL_ST_NO_MAP, f"map {name}: value of {vl} bytes, the map's is {info.value_size}")
        if name == KEYTABLE and type_ in (D.NANOBPF_CTRL_MSG_MAP_UPDATE, D.NANOBPF_CTRL_MSG_MAP_DELETE):
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, "the key table is changed with KEY_* messages")
        try:
            if type_ == D.NANOBPF_CTRL_MSG_MAP_LOOKUP:
                if info.percpu:
                    vals = xdp.map_lookup_percpu(name, key)
                    v = vals[0] if vals else None
                else:
                    v = xdp.map_lookup(name, key)
                if v is None:
                    raise _Refuse(D.NANOBPF_CTRL_ST_NOENT, "no such entry")
                return _without_secrets(v) if name == KEYTABLE else v
            if type_ == D.NANOBPF_CTRL_MSG_MAP_UPDATE:
                xdp.map_update(name, key, value, m["flags"])
                if name == "quic_config":
                    self._sync_config()         # open_cid_lens is the device's, the rest the user's
                return b""
            if type_ == D.NANOBPF_CTRL_MSG_MAP_DELETE:
                if not xdp.map_delete(name, key):
                    raise _Refuse(D.NANOBPF_CTRL_ST_NOENT, "no such entry")
                return b""
            nxt = xdp.map_next_key(name, key or None)
            if nxt is None:
                raise _Refuse(D.NANOBPF_CTRL_ST_NOENT, "no more keys")
            return nxt
        except DeviceError as e:
            text = str(e)
            errno = next((int(t) for t in text.replace("(", " ").replace(")", " ").replace(":", " ").split()
                          if t.lstrip("-").isdigit() and int(t) < 0), -22)
            raise _Refuse(ERRNO_STATUS.get(-errno, D.NANOBPF_CTRL_ST_INVALID), text.split(": ", 1)[-1])

    def _do_events(self, body):
        """EVENTS: the oldest records of an event map, as many as the response holds (at most max), and
        the records it dropped since the last EVENTS; the records are taken."""
        m = self._exact(body, "events_req")
        if m["reserved"]:
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, "events_req: reserved not zero")
        if not self._prog:
            raise _Refuse(D.NANOBPF_CTRL_ST_NO_PROG, "no program attached")
        xdp, name = self._prog[0], m["name"]
        if name not in xdp.map_names():
            raise _Refuse(D.NANOBPF_CTRL_ST_NO_MAP, f"no map '{name}' (maps: {', '.join(xdp.map_names())})")
        if xdp.map_info(name).type not in EVENT_MAP_TYPES:
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, f"map {name} is not an event map (RINGBUF, PERF_EVENT_ARRAY)")
        lost, pending, records = xdp.events(name, m["max"], D.NANOBPF_CTRL_MAX_BODY - D.EVENTS_RESP_SIZE)
        return D.pack("events_resp", lost=lost, pending=pending, count=len(records)) + b"".join(
            D.pack("event_rec", len=len(data), index=index) + data for index, data in records)

    def _do_table(self, body, set_):
        m = self._exact(body, "table_msg")
        if m["table"] not in TABLES or m["reserved"]:
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, f"table {m['table']}: 0..{len(TABLES) - 1}, reserved zero")
        count, mask = _table_limits(TABLES[m["table"]])
        if m["index"] >= count:
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, f"{TABLES[m['table']]}[{m['index']}]: {count} entries")
        if set_ and m["value"] & ~mask:
            raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, f"{TABLES[m['table']]}: bits {m['value'] & ~mask:#x} are not fields")
        if m["table"] == D.NANOBPF_CTRL_TABLE_PORT:
            after = {**self._ports, m["index"]: m["value"] if set_ else 0}
            if not any(_brings_host_in(w) for w in after.values()):
                # some entry must still bring the host's control frames in: without one no later
                # request, RESET included, could reach the device
                raise _Refuse(D.NANOBPF_CTRL_ST_INVALID, f"port_entry[{m['index']}] is the last one that brings the host's "
                              "control frames in: changing it would cut the control link")
            self._ports = after
        if set_:
            self._tables[(m["table"], m["index"])] = m["value"]
        else:
            self._tables.pop((m["table"], m["index"]), None)
        if self.pisa is not None:           # the pipeline's own register, as the device writes it
            self.pisa.reg_write(TABLES[m["table"]], m["value"] if set_ else 0, m["index"])
        return b""

    _HANDLERS = {
        D.NANOBPF_CTRL_MSG_RESET: _do_reset,
        D.NANOBPF_CTRL_MSG_STATS: _do_stats,
        D.NANOBPF_CTRL_MSG_KEY_ADD: lambda s, b: s._do_key(b, update=False),
        D.NANOBPF_CTRL_MSG_KEY_UPDATE: lambda s, b: s._do_key(b, update=True),
        D.NANOBPF_CTRL_MSG_KEY_DEL: _do_key_del,
        D.NANOBPF_CTRL_MSG_KEY_FLUSH: _do_key_flush,
        D.NANOBPF_CTRL_MSG_PROG_BEGIN: _do_prog_begin,
        D.NANOBPF_CTRL_MSG_PROG_CHUNK: _do_prog_chunk,
        D.NANOBPF_CTRL_MSG_PROG_COMMIT: _do_prog_commit,
        D.NANOBPF_CTRL_MSG_PROG_UNLOAD: _do_prog_unload,
        D.NANOBPF_CTRL_MSG_PROG_INFO: _do_prog_info,
        D.NANOBPF_CTRL_MSG_MAP_LOOKUP: lambda s, b: s._do_map(b, D.NANOBPF_CTRL_MSG_MAP_LOOKUP),
        D.NANOBPF_CTRL_MSG_MAP_UPDATE: lambda s, b: s._do_map(b, D.NANOBPF_CTRL_MSG_MAP_UPDATE),
        D.NANOBPF_CTRL_MSG_MAP_DELETE: lambda s, b: s._do_map(b, D.NANOBPF_CTRL_MSG_MAP_DELETE),
        D.NANOBPF_CTRL_MSG_MAP_NEXT: lambda s, b: s._do_map(b, D.NANOBPF_CTRL_MSG_MAP_NEXT),
        D.NANOBPF_CTRL_MSG_EVENTS: _do_events,
        D.NANOBPF_CTRL_MSG_TABLE_SET: lambda s, b: s._do_table(b, True),
        D.NANOBPF_CTRL_MSG_TABLE_DEL: lambda s, b: s._do_table(b, False),
    }


def _fast_refused(host, net, pisa, jit):
    """Why the native data path cannot serve these ports ("" when it can)."""
    if pisa:
        return "PISA's model is Python"
    if jit:
        return "the native data path runs the interpreter"
    for p in (host, net):
        if p is not None and (isinstance(p, ctrl.VlanPort) or not isinstance(p, (ctrl.TapPort, ctrl.PacketPort, ctrl._DgramEnd))):
            return f"port {p.name} is not a plain file-descriptor port (TapPort, PacketPort, MemoryLink)"
    from .ebpf.device import RUN_FAST
    if not RUN_FAST.exists():
        return f"{RUN_FAST} is not built (make ebpf-tools)"
    return ""


def main(argv=None):
    ap = argparse.ArgumentParser(prog="nanobpf-devmodel", description="Run the NanoBPF reference device model on "
                                 "network interfaces until interrupted (docs/control.md). Needs root.")
    host = ap.add_mutually_exclusive_group(required=True)
    host.add_argument("--host-tap", metavar="NAME", help="create TAP NAME as the host port")
    host.add_argument("--host-if", metavar="IF", help="use existing interface IF (e.g. QEMU's TAP) as the host port")
    host.add_argument("--one-arm", metavar="IF", help="one-arm mode, as the board's image: both links on existing "
                      "interface IF as two VLANs (--host-vid, --net-vid), frames on neither ignored")
    ap.add_argument("--host-vid", type=int, help="with --one-arm: the host link's VLAN (default: the default board's "
                    "board.toml [dpu] host_vid)")
    ap.add_argument("--net-vid", type=int, help="with --one-arm: the network link's VLAN (default: [dpu] net_vid)")
    net = ap.add_mutually_exclusive_group()
    net.add_argument("--net-tap", metavar="NAME", help="create TAP NAME as the network port")
    net.add_argument("--net-if", metavar="IF", help="use existing interface IF as the network port")
    ap.add_argument("--key-slots", type=int, default=abi.NANOBPF_KEYTABLE_ENTRIES, help=f"connections the key table holds (default {abi.NANOBPF_KEYTABLE_ENTRIES})")
    ap.add_argument("--key", metavar="FILE", help="the device key (default: $NANOBPF_CTRL_KEY, else build/keys/ctrl.key; "
                    "docs/control.md \"The device key\")")
    ap.add_argument("--seed", type=int, help="seed of the epoch and fault RNG")
    ap.add_argument("--loss", type=float, default=0.0, help="control frame loss probability (default 0)")
    ap.add_argument("--dup", type=float, default=0.0, help="control frame duplication probability")
    ap.add_argument("--reorder", type=float, default=0.0, help="control frame reordering probability")
    ap.add_argument("--jit", action="store_true", help="run programs as RV64 JIT code under qemu-riscv64")
    ap.add_argument("--fast", action="store_true", help="the native data path while a program is attached: frames "
                    "handled in C by the runtime process with libcrypto's AES (nanobpf-run --serve; the control plane "
                    "stays in Python; not with --one-arm or --jit; docs/control.md)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every applied request")
    a = ap.parse_args(argv)
    for name in ("loss", "dup", "reorder"):
        if not 0.0 <= getattr(a, name) <= 1.0:
            ap.error(f"--{name} is a probability, 0..1")
    if not 1 <= a.key_slots <= abi.NANOBPF_KEYTABLE_ENTRIES:
        ap.error(f"--key-slots: 1..{abi.NANOBPF_KEYTABLE_ENTRIES}")
    if (a.host_vid is not None or a.net_vid is not None) and not a.one_arm:
        ap.error("--host-vid and --net-vid go with --one-arm")
    try:
        key = ctrlkey.load(a.key)
    except ctrlkey.KeyFileError as e:
        print(f"nanobpf-devmodel: {e}", file=sys.stderr)
        return 2
    try:
        if a.one_arm:
            if a.net_tap or a.net_if:
                ap.error("--one-arm carries the network link too: no --net-tap or --net-if")
            from .board import facts
            dpu = facts.load(facts.DEFAULT_BOARD).dpu
            hv, nv = (a.host_vid if a.host_vid is not None else dpu.host_vid), (a.net_vid if a.net_vid is not None else dpu.net_vid)
            if not (1 <= hv <= 4094 and 1 <= nv <= 4094 and hv != nv):
                ap.error("--host-vid and --net-vid: two VLANs, 1..4094")
            hp, np_ = ctrl.VlanPort(a.one_arm, hv), ctrl.VlanPort(a.one_arm, nv)
        else:
            hp = ctrl.TapPort(a.host_tap) if a.host_tap else ctrl.PacketPort(a.host_if)
            np_ = ctrl.TapPort(a.net_tap) if a.net_tap else ctrl.PacketPort(a.net_if) if a.net_if else None
    except OSError as e:
        print(f"nanobpf-devmodel: {e}", file=sys.stderr)
        return 1
    log = (lambda m: print(f"[devmodel] {m}", flush=True)) if a.verbose else None
    dev = DeviceModel(hp, np_, key_slots=a.key_slots, seed=a.seed, jit=a.jit, log=log, key=key, fast=a.fast)
    dev.set_faults(a.loss, a.dup, a.reorder)
    if a.fast and not dev.fast:
        print(f"[devmodel] --fast: the Python data path ({dev.fast_why})", file=sys.stderr, flush=True)
    print(f"[devmodel] host port {hp.name}, network port {np_.name if np_ else 'none'}, epoch {dev.epoch:#010x}, "
          f"device key id {key.id()}, {'native' if dev.fast else 'Python'} data path; "
          "Ctrl-C stops", flush=True)
    dev.start()
    try:
        while True:
            time.sleep(10)
            s = dev.stats()
            print(f"[devmodel] ctrl {s['ctrl_rx']} rx / {s['ctrl_applied']} applied, keys {s['keys']}, "
                  f"host {s['host_rx']}/{s['host_tx']}, net {s['net_rx']}/{s['net_tx']}", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        dev.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
