//! What the offload needs from a DPU, whichever way the host reaches it.
//!
//! Two backends implement these traits: [`crate::driver`] (nanobpf.ko: keys over its generic-netlink
//! family through libnanobpf, data on the ordinary UDP socket with `SO_MARK` / `SO_RCVMARK`) and
//! [`crate::packet`] (user space, for hosts without the module: the authenticated control protocol
//! and the shim frames over AF_PACKET sockets on the DPU link). [`crate::plain`] is the UDP socket
//! alone, for connections without a DPU. docs/offload.md describes the contract.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::path::Path;

use crate::defs::ctrl as C;

/// Size of a key table value (`struct nanobpf_quic_keys`, hw/defs/ebpf.toml).
pub const KEYS_SIZE: usize = crate::defs::ebpf::NANOBPF_QUIC_KEYS_SIZE;
/// Longest connection ID (RFC 9000), the size of a key table entry's id.
pub const MAX_CID: usize = C::NANOBPF_CTRL_MAX_CID as usize;

/// The name of a key table entry (docs/control.md "Key table entries, one per direction").
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId {
    /// `NANOBPF_QUIC_DIR_OPEN` (0): a local CID, the peer's keys; `NANOBPF_QUIC_DIR_SEAL` (1): the
    /// peer's CID, our keys.
    pub dir: u8,
    /// 1..=20: `id` holds the CID (zero after it); 0: `id` is the peer's address id.
    pub cid_len: u8,
    pub id: [u8; MAX_CID],
}

pub const OPEN: u8 = crate::defs::ebpf::NANOBPF_QUIC_DIR_OPEN as u8;
pub const SEAL: u8 = crate::defs::ebpf::NANOBPF_QUIC_DIR_SEAL as u8;

impl KeyId {
    /// An entry named by a 1..=20-byte connection ID.
    pub fn cid(dir: u8, cid: &[u8]) -> KeyId {
        assert!(!cid.is_empty() && cid.len() <= MAX_CID, "CID of {} bytes", cid.len());
        let mut id = [0u8; MAX_CID];
        id[..cid.len()].copy_from_slice(cid);
        KeyId { dir, cid_len: cid.len() as u8, id }
    }
    /// An entry of a peer with zero-length CIDs: its address (IPv4 as ::ffff:a.b.c.d), its UDP port and
    /// the local UDP port, both big-endian (`NANOBPF_QUIC_ADDR_*`).
    pub fn addr(dir: u8, peer: SocketAddr, local_port: u16) -> KeyId {
        use crate::defs::ebpf as E;
        let ip = match peer.ip() {
            std::net::IpAddr::V4(a) => a.to_ipv6_mapped(),
            std::net::IpAddr::V6(a) => a,
        };
        let mut id = [0u8; MAX_CID];
        let a = E::NANOBPF_QUIC_ADDR_IP_OFF as usize;
        id[a..a + 16].copy_from_slice(&ip.octets());
        let p = E::NANOBPF_QUIC_ADDR_PEER_PORT_OFF as usize;
        id[p..p + 2].copy_from_slice(&peer.port().to_be_bytes());
        let l = E::NANOBPF_QUIC_ADDR_LOCAL_PORT_OFF as usize;
        id[l..l + 2].copy_from_slice(&local_port.to_be_bytes());
        KeyId { dir, cid_len: 0, id }
    }
    pub fn cid_bytes(&self) -> &[u8] {
        &self.id[..self.cid_len as usize]
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = if self.dir == OPEN { "open" } else { "seal" };
        let hex: String = if self.cid_len > 0 { self.cid_bytes() } else { &self.id[..] }
            .iter().map(|b| format!("{b:02x}")).collect();
        if self.cid_len > 0 { write!(f, "{dir}:{hex}") } else { write!(f, "{dir}:addr:{hex}") }
    }
}

/// Why the device did not do what was asked.
#[derive(Debug)]
pub enum DeviceError {
    /// The device (or the driver, for it) refused the request: its `NANOBPF_CTRL_ST_*` status when it
    /// was the device's, and the text it gave.
    Refused { status: Option<u8>, message: String },
    /// No answer after the retransmissions (the request may or may not have been applied).
    Timeout(String),
    /// The host side failed (socket, netlink, the module absent, no route to the peer on the DPU link).
    Io(io::Error),
    /// Anything else, with its reason.
    Other(String),
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::Refused { status: Some(s), message } => write!(f, "refused by the device (status {s}): {message}"),
            DeviceError::Refused { status: None, message } => write!(f, "refused: {message}"),
            DeviceError::Timeout(m) => write!(f, "no answer from the device: {m}"),
            DeviceError::Io(e) => write!(f, "{e}"),
            DeviceError::Other(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for DeviceError {}

impl From<io::Error> for DeviceError {
    fn from(e: io::Error) -> Self {
        DeviceError::Io(e)
    }
}

/// The device's control side: its key table and the QUIC program's settings.
pub trait Control {
    /// Make the device ready for QUIC on `local_port`: the QUIC program attached when it has none
    /// (`program`, a .nbpf image: `make firmware` builds xdp_quic_hw.nbpf), `quic_config` naming the
    /// host and network ports, `local_port` in `quic_ports`. Called once per socket before any key.
    fn prepare(&mut self, program: Option<&Path>, local_port: u16) -> Result<(), DeviceError>;
    /// A new entry with keys never used before (`KEY_ADD`: its packet-number state starts at zero).
    fn key_add(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<(), DeviceError>;
    /// The entry's keys replaced in one step, its packet-number state kept (`KEY_UPDATE`).
    fn key_update(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<(), DeviceError>;
    /// The entry and its packet-number state removed (`KEY_DEL`).
    fn key_del(&mut self, id: &KeyId) -> Result<(), DeviceError>;
    /// The device's counters (`STATS`, by their names in hw/defs/ctrl.toml) and the program's
    /// `quic_stats` (`quic_sealed`, `quic_opened`) and non-zero `quic_drops` (`quic_drop_<reason>`).
    fn stats(&mut self) -> Result<Vec<(String, u64)>, DeviceError>;
}

/// A datagram received from the network side.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    /// Bytes written into the caller's buffer.
    pub len: usize,
    /// The peer's address.
    pub peer: SocketAddr,
    /// The device opened it: header protection removed, tag verified and removed (the DECRYPTED shim,
    /// or the driver's decrypt mark). Only such a datagram may skip the stack's own AEAD.
    pub opened: bool,
}

/// The data path of one UDP socket, with or without a DPU behind it.
pub trait Datapath {
    /// The local address the socket is bound to.
    fn local_addr(&self) -> SocketAddr;
    /// File descriptors to wait on (readable) before calling `recv`.
    fn fds(&self) -> Vec<RawFd>;
    /// One waiting datagram (never blocks): `None` when nothing waits.
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>>;
    /// A datagram the stack protected itself, sent as it is.
    fn send(&mut self, dest: SocketAddr, data: &[u8]) -> io::Result<()>;
    /// One unprotected 1-RTT packet (header and payload in clear, without room for the tag) for the
    /// device to seal with the SEAL entry of its destination CID of `cid_len` bytes (0: the entry by
    /// address). The device seals it or drops it and counts why; it never leaves unprotected.
    /// `Err(Unsupported)` on a path without a device.
    fn send_seal(&mut self, dest: SocketAddr, packet: &[u8], cid_len: u8) -> io::Result<()>;
}
