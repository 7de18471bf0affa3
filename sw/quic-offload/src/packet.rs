//! The user-space backend (issue 45: hosts without nanobpf.ko): the authenticated control protocol
//! and the shim frames over AF_PACKET sockets on the DPU link, the UDP socket for everything else.
//! A port of sw/python/nanobpf/quic/offload.py's `Dpu`.
//!
//! - control: [`crate::ctrlproto_client::Client`] on an AF_PACKET socket of the control EtherType;
//!   this process owns the device's session (opening it flushes the device's key table, as a replay
//!   does) and replays its keys and the program it loaded after a device reset or lost answers, then
//!   writes quic_config and quic_ports again (map contents are not replayed).
//! - sending sealed: the unprotected packet in an Ethernet frame with the ENCRYPT shim (its CID
//!   length), an IPv4 header with its checksum or an IPv6 header, UDP with checksum 0 (the device
//!   computes it after sealing), to the next hop's MAC of the kernel's neighbour table.
//! - receiving: frames with the DECRYPTED shim, CID length 0, IPv4/IPv6 UDP with consistent lengths
//!   to our port are delivered as opened; every other shim frame is counted and dropped (no other
//!   packet may skip the stack's tag check). The UDP socket carries the rest.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::process::Command;

use crate::ctrlproto::DeviceKey;
use crate::ctrlproto_client::{refused_status, Client, Retry};
use crate::ctrlproto_link::{CtrlLink, PacketSocket};
use crate::defs::ctrl as C;
use crate::defs::ebpf as E;
use crate::device::{Control, Datapath, DeviceError, KeyId, Received, KEYS_SIZE, MAX_CID};

const ETH_LEN: usize = 14;
const SHIM_LEN: usize = 4; // EtherType 0x88B6 + struct nanobpf_shim
const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;
const UDP_LEN: usize = 8;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const IPPROTO_UDP: u8 = 17;
const TTL: u8 = 64;

/// The QUIC program's drop reasons (`quic_drops` indices) by name: `stats` reports the non-zero ones
/// as `quic_drop_<name>`. The numbers are hw/defs/ebpf.toml's.
const DROP_REASONS: &[(&str, u64)] = &[
    ("truncated", E::NANOBPF_QUIC_DROP_TRUNCATED),
    ("bad_ipv4", E::NANOBPF_QUIC_DROP_BAD_IPV4),
    ("bad_ipv6", E::NANOBPF_QUIC_DROP_BAD_IPV6),
    ("bad_udp_length", E::NANOBPF_QUIC_DROP_BAD_UDP_LENGTH),
    ("quic_truncated", E::NANOBPF_QUIC_DROP_QUIC_TRUNCATED),
    ("no_fixed_bit", E::NANOBPF_QUIC_DROP_NO_FIXED_BIT),
    ("bad_cid_length", E::NANOBPF_QUIC_DROP_BAD_CID_LENGTH),
    ("tag_mismatch", E::NANOBPF_QUIC_DROP_TAG_MISMATCH),
    ("no_keys", E::NANOBPF_QUIC_DROP_NO_KEYS),
    ("oversize", E::NANOBPF_QUIC_DROP_OVERSIZE),
    ("bad_shim", E::NANOBPF_QUIC_DROP_BAD_SHIM),
    ("not_sealable", E::NANOBPF_QUIC_DROP_NOT_SEALABLE),
    ("no_seal_keys", E::NANOBPF_QUIC_DROP_NO_SEAL_KEYS),
    ("pn_reused", E::NANOBPF_QUIC_DROP_PN_REUSED),
    ("no_pn_state", E::NANOBPF_QUIC_DROP_NO_PN_STATE),
];

/// Settings of [`PacketDevice::open`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PacketOptions {
    /// The control requests' retransmission (defaults of hw/defs/ctrl.toml; longer for a simulated DPU).
    pub retry: Retry,
}

/// What the host side counted (beside the device's own counters, [`Control::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams delivered opened by the device (DECRYPTED shim).
    pub rx_opened: u64,
    /// Datagrams from the UDP socket.
    pub rx_udp: u64,
    /// Shim frames dropped: not DECRYPTED with CID length 0, not IPv4/IPv6 UDP, fragments, lengths
    /// that do not add up.
    pub rx_bad_frame: u64,
    /// Opened datagrams for another local port or address (not this socket's).
    pub rx_not_ours: u64,
    /// Opened datagrams longer than the caller's buffer (or than a frame buffer): dropped.
    pub rx_truncated: u64,
    pub tx_udp: u64,
    /// Packets sent to the device to seal.
    pub tx_seal: u64,
    /// The program image loaded by `prepare` (the device had none).
    pub program_loaded: u64,
}

/// A route on the DPU link: our addresses and the next hop's MAC.
#[derive(Debug, Clone, Copy)]
struct Route {
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: IpAddr,
}

/// The DPU in front of one UDP socket, from user space. See the module's documentation.
pub struct PacketDevice {
    ifname: String,
    client: Client<CtrlLink>,
    rx: PacketSocket,
    tx: PacketSocket,
    udp: UdpSocket,
    local: SocketAddr,
    ports: BTreeSet<u16>,
    prepared: bool,
    configured_at: u64,
    routes: HashMap<IpAddr, Route>,
    ip_id: u16,
    counters: Counters,
    frame: Vec<u8>,
    udp_first: bool,
}

impl fmt::Debug for PacketDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PacketDevice({} for {})", self.ifname, self.local)
    }
}

impl PacketDevice {
    /// The DPU behind interface `ifname` (the Ethernet device, or the VLAN sub-interface in one-arm
    /// mode, that leads to the device's host port), with the device key of `key_file` (32 hex digits,
    /// `#` lines ignored: docs/control.md "The device key"), in front of `udp`, a bound UDP socket the
    /// QUIC stack uses (made non-blocking here; its port goes into quic_ports at `prepare`).
    ///
    /// Says HELLO and takes over the device's session: the key table is flushed (this process is the
    /// device's only user, as with `nanobpf.quic.offload.Dpu`). A device that does not answer (absent,
    /// or built with another key) is `Timeout`, whose text says to check the key. Needs root or
    /// CAP_NET_RAW (AF_PACKET sockets), and the `ip` command (routes and neighbours, for sealing).
    pub fn open(ifname: &str, key_file: &Path, udp: UdpSocket, opts: PacketOptions) -> Result<PacketDevice, DeviceError> {
        let key = DeviceKey::from_file(key_file)?;
        let ctrl = CtrlLink::open(ifname)?;
        let rx = PacketSocket::open(ifname, C::NANOBPF_SHIM_ETHERTYPE)?;
        let tx = PacketSocket::open(ifname, 0)?;
        udp.set_nonblocking(true)?;
        let local = udp.local_addr()?;
        let mut client = Client::new(ctrl, key, opts.retry);
        client.sync()?;
        Ok(PacketDevice {
            ifname: ifname.to_string(), configured_at: client.resyncs(), client, rx, tx, udp, local,
            ports: BTreeSet::new(), prepared: false, routes: HashMap::new(), ip_id: 0,
            counters: Counters::default(), frame: vec![0; 65600], udp_first: false,
        })
    }

    /// The host side's counters, with the control client's (as the driver names them).
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = self.counters;
        let k = self.client.counters();
        vec![
            ("rx_opened", c.rx_opened), ("rx_udp", c.rx_udp), ("rx_bad_frame", c.rx_bad_frame),
            ("rx_not_ours", c.rx_not_ours), ("rx_truncated", c.rx_truncated), ("tx_udp", c.tx_udp),
            ("tx_seal", c.tx_seal), ("program_loaded", c.program_loaded),
            ("ctrl_tx", k.tx), ("ctrl_retransmits", k.retransmits), ("ctrl_timeouts", k.timeouts),
            ("ctrl_rx", k.rx), ("ctrl_unmatched", k.unmatched), ("ctrl_auth_fail", k.auth_fail),
            ("ctrl_malformed", k.malformed), ("resyncs", k.resyncs),
        ]
    }

    /// The entries this host installed (what a replay sends again).
    pub fn keys(&self) -> Vec<KeyId> {
        self.client.host_keys().keys().copied().collect()
    }

    /// The control client (program, maps, limits).
    pub fn client(&mut self) -> &mut Client<CtrlLink> {
        &mut self.client
    }

    /// Remove every key this host installed, then drop the sockets.
    pub fn close(mut self) -> Result<(), DeviceError> {
        let mut first = None;
        for id in self.keys() {
            if let Err(e) = self.client.key_del(&id) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    // ------------------------------------------------------------ device settings
    /// quic_config naming the host and network ports (its other fields kept) and our ports in
    /// quic_ports; again whenever the client replayed (the replay restores keys and the program, not
    /// map contents).
    fn configure(&mut self) -> Result<(), DeviceError> {
        for _ in 0..3 {
            let start = self.client.resyncs();
            let zero = 0u32.to_le_bytes();
            let mut cfg = self.client.map_lookup("quic_config", &zero)?.ok_or_else(|| {
                DeviceError::Other("the attached program has no quic_config entry: not a QUIC program".into())
            })?;
            if cfg.len() < E::NANOBPF_QUIC_CONFIG_SIZE {
                return Err(DeviceError::Other(format!("quic_config value of {} bytes", cfg.len())));
            }
            let (h, n) = (E::NANOBPF_QUIC_CONFIG_HOST_IFINDEX_OFF, E::NANOBPF_QUIC_CONFIG_NET_IFINDEX_OFF);
            let host = (E::NANOBPF_IFINDEX_HOST as u32).to_le_bytes();
            let net = (E::NANOBPF_IFINDEX_NET as u32).to_le_bytes();
            if cfg[h..h + 4] != host || cfg[n..n + 4] != net {
                cfg[h..h + 4].copy_from_slice(&host);
                cfg[n..n + 4].copy_from_slice(&net);
                self.client.map_update("quic_config", &zero, &cfg, 0)?;
            }
            for port in self.ports.clone() {
                self.client.map_update("quic_ports", &port.to_le_bytes(), &1u32.to_le_bytes(), 0)?;
            }
            if self.client.resyncs() == start {
                self.configured_at = start;
                return Ok(());
            }
        }
        Err(DeviceError::Other("the device keeps being reset while quic_config is written".into()))
    }

    /// After a control operation: the maps written again if it replayed the session. The
    /// operation's own error comes first; when the operation succeeded (it is in the host table) but
    /// the maps could not be written, that error is returned, since the device would not treat our
    /// port as QUIC, and the next operation tries the maps again.
    fn after<R>(&mut self, r: Result<R, DeviceError>) -> Result<R, DeviceError> {
        let again = if self.prepared && self.client.resyncs() != self.configured_at { self.configure() } else { Ok(()) };
        let out = r?;
        again.map(|_| out)
    }

    /// Sum over cores of a per-CPU u64 counter of the program; `None` without the program or the map.
    fn percpu(&mut self, map: &str, index: u64) -> Result<Option<u64>, DeviceError> {
        match self.client.map_lookup(map, &(index as u32).to_le_bytes()) {
            Ok(v) => Ok(v.map(|v| v.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).sum())),
            Err(e) if matches!(refused_status(&e), Some(s) if s == C::NANOBPF_CTRL_ST_NO_PROG || s == C::NANOBPF_CTRL_ST_NO_MAP) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn stats_inner(&mut self) -> Result<Vec<(String, u64)>, DeviceError> {
        let mut out = self.client.stats()?;
        for (name, index) in [("quic_sealed", E::NANOBPF_QUIC_STAT_SEALED), ("quic_opened", E::NANOBPF_QUIC_STAT_OPENED)] {
            if let Some(v) = self.percpu("quic_stats", index)? {
                out.push((name.to_string(), v));
            }
        }
        for &(name, index) in DROP_REASONS {
            if let Some(n) = self.percpu("quic_drops", index)? {
                if n > 0 {
                    out.push((format!("quic_drop_{name}"), n));
                }
            }
        }
        Ok(out)
    }

    // ------------------------------------------------------------ data path
    /// Our addresses and the next hop's MAC towards `ip` on the DPU link (the kernel's routing and
    /// neighbour tables: the kernel resolved the hop when the handshake went through the UDP socket).
    fn route(&mut self, ip: IpAddr) -> io::Result<Route> {
        if let Some(r) = self.routes.get(&ip) {
            return Ok(*r);
        }
        let got = ip_json(&["route", "get", &ip.to_string()])?;
        let dev = json_str(&got, "dev");
        if dev.as_deref() != Some(self.ifname.as_str()) {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("{ip} is not reached through {} (route: {})",
                                                                       self.ifname, dev.unwrap_or_default())));
        }
        let src = json_str(&got, "prefsrc").and_then(|s| s.parse::<IpAddr>().ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no source address towards {ip} on {}", self.ifname)))?;
        let hop = json_str(&got, "gateway").unwrap_or_else(|| ip.to_string());
        let neigh = ip_json(&["neigh", "show", &hop, "dev", &self.ifname])?;
        let mac = neigh.split('}').filter_map(|o| json_str(o, "lladdr")).next().and_then(|m| parse_mac(&m))
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no neighbour entry for {hop} on {}", self.ifname)))?;
        // a socket bound to one address sends from it; one bound to the wildcard from the route's
        let src = match (self.local.ip(), src) {
            (IpAddr::V4(a), IpAddr::V4(_)) if !a.is_unspecified() => IpAddr::V4(a),
            (IpAddr::V6(a), IpAddr::V6(_)) if !a.is_unspecified() && a.to_ipv4_mapped().is_none() => IpAddr::V6(a),
            _ => src,
        };
        let r = Route { src_mac: self.tx.mac(), dst_mac: mac, src };
        self.routes.insert(ip, r);
        Ok(r)
    }

    fn recv_udp(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        match self.udp.recv_from(buf) {
            Ok((len, peer)) => {
                self.counters.rx_udp += 1;
                Ok(Some(Received { len, peer, opened: false }))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn recv_device(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        loop {
            let Some(r) = self.rx.recv(&mut self.frame)? else { return Ok(None) };
            if r.truncated {
                self.counters.rx_truncated += 1;
                continue;
            }
            match parse_opened(&self.frame[..r.len], self.local) {
                Ok((range, peer)) => {
                    if range.len() > buf.len() {
                        self.counters.rx_truncated += 1;
                        continue;
                    }
                    buf[..range.len()].copy_from_slice(&self.frame[range.clone()]);
                    self.counters.rx_opened += 1;
                    return Ok(Some(Received { len: range.len(), peer, opened: true }));
                }
                Err(Reject::BadFrame) => self.counters.rx_bad_frame += 1,
                Err(Reject::NotOurs) => self.counters.rx_not_ours += 1,
            }
        }
    }
}

impl Control for PacketDevice {
    fn prepare(&mut self, program: Option<&Path>, local_port: u16) -> Result<(), DeviceError> {
        match self.client.prog_info() {
            Ok(_) => {}
            Err(e) if refused_status(&e) == Some(C::NANOBPF_CTRL_ST_NO_PROG) => {
                let path = program.ok_or_else(|| DeviceError::Other(
                    "the device has no program attached and none was given (`make firmware` builds build/firmware/bpf/xdp_quic_hw.nbpf)".into()))?;
                let image = std::fs::read(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
                let name = program_name(path);
                let r = self.client.prog_load(&image, &name);
                self.after(r)?;
                self.counters.program_loaded += 1;
            }
            Err(e) => return Err(e),
        }
        self.ports.insert(local_port);
        self.prepared = true;
        self.configure()
    }

    fn key_add(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<(), DeviceError> {
        let r = self.client.key_add(id, keys).map(|_| ());
        self.after(r)
    }

    fn key_update(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<(), DeviceError> {
        let r = self.client.key_update(id, keys).map(|_| ());
        self.after(r)
    }

    fn key_del(&mut self, id: &KeyId) -> Result<(), DeviceError> {
        let r = self.client.key_del(id);
        self.after(r)
    }

    fn stats(&mut self) -> Result<Vec<(String, u64)>, DeviceError> {
        let r = self.stats_inner();
        self.after(r)
    }
}

impl Datapath for PacketDevice {
    fn local_addr(&self) -> SocketAddr {
        self.local
    }

    fn fds(&self) -> Vec<RawFd> {
        vec![self.udp.as_raw_fd(), self.rx.fd()]
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        // take turns, so a flood on one cannot starve the other
        self.udp_first = !self.udp_first;
        if self.udp_first {
            if let Some(r) = self.recv_udp(buf)? {
                return Ok(Some(r));
            }
            self.recv_device(buf)
        } else {
            if let Some(r) = self.recv_device(buf)? {
                return Ok(Some(r));
            }
            self.recv_udp(buf)
        }
    }

    fn send(&mut self, dest: SocketAddr, data: &[u8]) -> io::Result<()> {
        let n = self.udp.send_to(data, dest)?;
        if n != data.len() {
            return Err(io::Error::new(io::ErrorKind::WriteZero, format!("sent {n} of {} bytes", data.len())));
        }
        self.counters.tx_udp += 1;
        Ok(())
    }

    fn send_seal(&mut self, dest: SocketAddr, packet: &[u8], cid_len: u8) -> io::Result<()> {
        if usize::from(cid_len) > MAX_CID {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CID length {cid_len}, at most {MAX_CID}")));
        }
        let ip = unmapped(dest.ip());
        let route = self.route(ip)?;
        self.ip_id = self.ip_id.wrapping_add(1);
        let frame = seal_frame(&route, ip, self.local.port(), dest.port(), packet, cid_len, self.ip_id)?;
        self.tx.send(&frame)?;
        self.counters.tx_seal += 1;
        Ok(())
    }
}

/// An IPv4-mapped IPv6 address (a dual-stack socket's view of an IPv4 peer) as IPv4.
fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(IpAddr::V6(a), IpAddr::V4),
        v4 => v4,
    }
}

/// The program's name on the device: the file's stem, cut to the name field.
fn program_name(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "prog".into());
    let mut n = C::NANOBPF_CTRL_NAME_LEN as usize;
    while n < stem.len() && !stem.is_char_boundary(n) {
        n -= 1;
    }
    stem[..n.min(stem.len())].to_string()
}

/// The Internet checksum (RFC 1071) of `data`.
pub fn ip_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 header of a UDP datagram (no options, DF, TTL 64) with its checksum.
pub fn ipv4_header(src: Ipv4Addr, dst: Ipv4Addr, total_len: u16, ident: u16) -> [u8; IPV4_LEN] {
    let mut h = [0u8; IPV4_LEN];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&total_len.to_be_bytes());
    h[4..6].copy_from_slice(&ident.to_be_bytes());
    h[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // don't fragment
    h[8] = TTL;
    h[9] = IPPROTO_UDP;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let c = ip_checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

fn ipv6_header(src: Ipv6Addr, dst: Ipv6Addr, payload_len: u16) -> [u8; IPV6_LEN] {
    let mut h = [0u8; IPV6_LEN];
    h[0] = 0x60;
    h[4..6].copy_from_slice(&payload_len.to_be_bytes());
    h[6] = IPPROTO_UDP;
    h[7] = TTL;
    h[8..24].copy_from_slice(&src.octets());
    h[24..40].copy_from_slice(&dst.octets());
    h
}

/// The frame asking the device to seal `packet`: Ethernet with the ENCRYPT shim and the CID length,
/// IP, UDP with checksum 0 (the device computes it over the sealed payload).
fn seal_frame(r: &Route, dst: IpAddr, sport: u16, dport: u16, packet: &[u8], cid_len: u8, ident: u16) -> io::Result<Vec<u8>> {
    let too_long = || io::Error::new(io::ErrorKind::InvalidInput, format!("packet of {} bytes: too long for one datagram", packet.len()));
    let udp_len = u16::try_from(UDP_LEN + packet.len()).map_err(|_| too_long())?;
    let (inner, ip): (u16, Vec<u8>) = match (r.src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let total = u16::try_from(IPV4_LEN + usize::from(udp_len)).map_err(|_| too_long())?;
            (ETHERTYPE_IPV4, ipv4_header(s, d, total, ident).to_vec())
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => (ETHERTYPE_IPV6, ipv6_header(s, d, udp_len).to_vec()),
        _ => return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("source {} and destination {dst} of two families", r.src))),
    };
    let mut f = Vec::with_capacity(ETH_LEN + SHIM_LEN + ip.len() + UDP_LEN + packet.len());
    f.extend_from_slice(&r.dst_mac);
    f.extend_from_slice(&r.src_mac);
    f.extend_from_slice(&C::NANOBPF_SHIM_ETHERTYPE.to_be_bytes());
    f.push(C::NANOBPF_SHIM_F_ENCRYPT as u8);
    f.push(cid_len);
    f.extend_from_slice(&inner.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(packet);
    Ok(f)
}

/// Why a shim frame from the device was not delivered.
#[derive(Debug, PartialEq, Eq)]
enum Reject {
    BadFrame,
    NotOurs,
}

/// A frame from the device's host port with a shim: the UDP payload's place and the peer, when it is
/// a datagram the device opened (DECRYPTED, CID length 0, IPv4 without fragmentation or IPv6 UDP,
/// lengths consistent) for `local` (its port; its address unless the wildcard). The device verified
/// the tag and computed the UDP checksum, as a NIC's checksum offload: it is not checked here.
fn parse_opened(f: &[u8], local: SocketAddr) -> Result<(std::ops::Range<usize>, SocketAddr), Reject> {
    let l3 = ETH_LEN + SHIM_LEN;
    if f.len() < l3 || u16::from_be_bytes([f[12], f[13]]) != C::NANOBPF_SHIM_ETHERTYPE
        || u32::from(f[14]) != C::NANOBPF_SHIM_F_DECRYPTED || f[15] != 0 {
        return Err(Reject::BadFrame);
    }
    let et = u16::from_be_bytes([f[16], f[17]]);
    let (l4, end, src, dst) = if et == ETHERTYPE_IPV4 && f.len() >= l3 + IPV4_LEN && f[l3] >> 4 == 4 {
        let ihl = usize::from(f[l3] & 0xF) * 4;
        let total = usize::from(u16::from_be_bytes([f[l3 + 2], f[l3 + 3]]));
        let frag = u16::from_be_bytes([f[l3 + 6], f[l3 + 7]]) & 0x3FFF; // MF or an offset: a fragment
        if ihl < IPV4_LEN || total < ihl || l3 + total > f.len() || f[l3 + 9] != IPPROTO_UDP || frag != 0 {
            return Err(Reject::BadFrame);
        }
        let a = |o: usize| IpAddr::V4(Ipv4Addr::new(f[o], f[o + 1], f[o + 2], f[o + 3]));
        (l3 + ihl, l3 + total, a(l3 + 12), a(l3 + 16))
    } else if et == ETHERTYPE_IPV6 && f.len() >= l3 + IPV6_LEN && f[l3] >> 4 == 6 {
        let plen = usize::from(u16::from_be_bytes([f[l3 + 4], f[l3 + 5]]));
        if f[l3 + 6] != IPPROTO_UDP || l3 + IPV6_LEN + plen > f.len() {
            return Err(Reject::BadFrame);
        }
        let a = |o: usize| {
            let mut b = [0u8; 16];
            b.copy_from_slice(&f[o..o + 16]);
            IpAddr::V6(Ipv6Addr::from(b))
        };
        (l3 + IPV6_LEN, l3 + IPV6_LEN + plen, a(l3 + 8), a(l3 + 24))
    } else {
        return Err(Reject::BadFrame);
    };
    if l4 + UDP_LEN > end {
        return Err(Reject::BadFrame);
    }
    let sport = u16::from_be_bytes([f[l4], f[l4 + 1]]);
    let dport = u16::from_be_bytes([f[l4 + 2], f[l4 + 3]]);
    let ulen = usize::from(u16::from_be_bytes([f[l4 + 4], f[l4 + 5]]));
    if ulen < UDP_LEN || l4 + ulen > end {
        return Err(Reject::BadFrame);
    }
    let ours = dport == local.port() && (local.ip().is_unspecified() || unmapped(local.ip()) == dst);
    let family_ok = matches!((local.ip(), dst), (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), _));
    if !ours || !family_ok {
        return Err(Reject::NotOurs);
    }
    // the peer as this socket's family reports it (a dual-stack socket sees IPv4 peers mapped)
    let peer = match (local.ip(), src) {
        (IpAddr::V6(_), IpAddr::V4(a)) => SocketAddr::new(IpAddr::V6(a.to_ipv6_mapped()), sport),
        _ => SocketAddr::new(src, sport),
    };
    Ok((l4 + UDP_LEN..l4 + ulen, peer))
}

/// `ip -j ARGS...`'s output.
fn ip_json(args: &[&str]) -> io::Result<String> {
    let out = Command::new("ip").arg("-j").args(args).output()
        .map_err(|e| io::Error::new(e.kind(), format!("ip -j {}: {e}", args.join(" "))))?;
    if !out.status.success() {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("ip -j {}: {}", args.join(" "),
                                                                   String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The first string value of `"key"` in ip's JSON (its values are addresses and names, without
/// escapes, so this is enough and spares a JSON parser).
fn json_str(json: &str, key: &str) -> Option<String> {
    let pat = format!("\"{key}\":\"");
    let at = json.find(&pat)? + pat.len();
    let end = json[at..].find('"')?;
    Some(json[at..at + end].to_string())
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    let mut m = [0u8; 6];
    for (b, p) in m.iter_mut().zip(parts) {
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_checksum() {
        // the classic example header (RFC 1071 arithmetic): 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7
        let h = ipv4_header(Ipv4Addr::new(192, 168, 0, 1), Ipv4Addr::new(192, 168, 0, 199), 0x73, 0);
        assert_eq!(h[10..12], [0xb8, 0x61]);
        assert_eq!(ip_checksum(&h), 0, "a header with its checksum sums to 0xffff");
        // carries folded more than once
        let h = ipv4_header(Ipv4Addr::new(255, 255, 255, 255), Ipv4Addr::new(255, 255, 255, 254), 0xffff, 0xffff);
        assert_eq!(ip_checksum(&h), 0);
        assert_eq!(ip_checksum(&[0x01]), !0x0100);
    }

    fn route4() -> Route {
        Route { src_mac: [2, 0, 0, 0, 0, 1], dst_mac: [2, 0, 0, 0, 0, 2], src: "10.0.0.2".parse().unwrap() }
    }

    #[test]
    fn seal_frames() {
        let f = seal_frame(&route4(), "10.0.0.1".parse().unwrap(), 443, 50000, b"\x41abcdpayload", 4, 7).unwrap();
        assert_eq!(&f[12..18], &[0x88, 0xB6, C::NANOBPF_SHIM_F_ENCRYPT as u8, 4, 0x08, 0x00]);
        assert_eq!(ip_checksum(&f[18..38]), 0);
        assert_eq!(u16::from_be_bytes([f[20], f[21]]) as usize, f.len() - 18);
        assert_eq!(&f[38..46], &[0x01, 0xbb, 0xc3, 0x50, 0, 20, 0, 0]);
        let r6 = Route { src: "fd00::2".parse().unwrap(), ..route4() };
        let f = seal_frame(&r6, "fd00::1".parse().unwrap(), 443, 50000, b"\x40x", 0, 1).unwrap();
        assert_eq!(&f[16..18], &[0x86, 0xDD]);
        assert_eq!((f[18] >> 4, u16::from_be_bytes([f[22], f[23]]), f[24]), (6, 10, 17));
        assert!(seal_frame(&route4(), "fd00::1".parse().unwrap(), 1, 2, b"x", 0, 1).is_err());
        assert!(seal_frame(&route4(), "10.0.0.1".parse().unwrap(), 1, 2, &vec![0; 65530], 0, 1).is_err());
    }

    /// A frame as the device delivers one it opened: the seal frame's layout with the DECRYPTED shim.
    fn opened(src: &str, dst: &str, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let r = Route { src: src.parse().unwrap(), ..route4() };
        let mut f = seal_frame(&r, dst.parse().unwrap(), sport, dport, payload, 0, 1).unwrap();
        f[14] = C::NANOBPF_SHIM_F_DECRYPTED as u8;
        f
    }

    #[test]
    fn only_opened_datagrams_for_us_are_delivered() {
        let local: SocketAddr = "10.0.0.2:443".parse().unwrap();
        let f = opened("10.0.0.1", "10.0.0.2", 50000, 443, b"hello");
        let (range, peer) = parse_opened(&f, local).unwrap();
        assert_eq!((&f[range], peer), (&b"hello"[..], "10.0.0.1:50000".parse().unwrap()));
        // Ethernet padding after the datagram is not part of it
        let mut padded = f.clone();
        padded.extend_from_slice(&[0; 20]);
        assert_eq!(&padded[parse_opened(&padded, local).unwrap().0], b"hello");
        // a dual-stack socket sees the IPv4 peer mapped
        let (_, peer) = parse_opened(&f, "[::]:443".parse().unwrap()).unwrap();
        assert_eq!(peer, "[::ffff:10.0.0.1]:50000".parse().unwrap());
        let f6 = opened("fd00::1", "fd00::2", 50000, 443, b"six");
        assert_eq!(&f6[parse_opened(&f6, "[::]:443".parse().unwrap()).unwrap().0], b"six");
        assert_eq!(parse_opened(&f6, local).unwrap_err(), Reject::NotOurs, "an IPv4 socket takes no IPv6");
        assert_eq!(parse_opened(&f, "10.0.0.2:444".parse().unwrap()).unwrap_err(), Reject::NotOurs);
        assert_eq!(parse_opened(&f, "10.0.0.3:443".parse().unwrap()).unwrap_err(), Reject::NotOurs);
        assert!(parse_opened(&f, "0.0.0.0:443".parse().unwrap()).is_ok());
        let bad = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut g = f.clone();
            edit(&mut g);
            parse_opened(&g, local).unwrap_err()
        };
        assert_eq!(bad(&|g| g[14] = C::NANOBPF_SHIM_F_ENCRYPT as u8), Reject::BadFrame); // our own kind
        assert_eq!(bad(&|g| g[14] |= C::NANOBPF_SHIM_F_ENCRYPT as u8), Reject::BadFrame);
        assert_eq!(bad(&|g| g[15] = 4), Reject::BadFrame);                  // a CID length
        assert_eq!(bad(&|g| g[27] = 6), Reject::BadFrame);                  // TCP
        assert_eq!(bad(&|g| g[24] = 0x20), Reject::BadFrame);               // more fragments
        assert_eq!(bad(&|g| g[18] = 0x44), Reject::BadFrame);               // IHL 4
        assert_eq!(bad(&|g| { g.pop(); }), Reject::BadFrame);               // IP length beyond the frame
        assert_eq!(bad(&|g| g[43] = 99), Reject::BadFrame);                 // UDP length beyond the IP's
        assert_eq!(bad(&|g| g[43] = 7), Reject::BadFrame);                  // UDP length below its header
        assert_eq!(bad(&|g| g.truncate(30)), Reject::BadFrame);
        assert_eq!(bad(&|g| { g[16] = 0x08; g[17] = 0x06; }), Reject::BadFrame); // ARP
    }

    #[test]
    fn helpers() {
        assert_eq!(DROP_REASONS.len() as u64, E::NANOBPF_QUIC_DROP_COUNT);
        assert!(DROP_REASONS.iter().enumerate().all(|(i, (_, n))| *n == i as u64));
        let route = r#"[{"dst":"10.0.0.1","gateway":"10.0.0.254","dev":"eth1","prefsrc":"10.0.0.2","metrics":[{"mtu":1500}],"flags":[],"uid":0,"cache":[]}]"#;
        assert_eq!(json_str(route, "dev").as_deref(), Some("eth1"));
        assert_eq!(json_str(route, "gateway").as_deref(), Some("10.0.0.254"));
        assert_eq!(json_str(route, "lladdr"), None);
        assert_eq!(parse_mac("02:4e:42:00:00:0a"), Some([2, 0x4e, 0x42, 0, 0, 10]));
        assert_eq!(parse_mac("02:4e:42:00:00"), None);
        assert_eq!(program_name(Path::new("/x/xdp_quic_hw.nbpf")), "xdp_quic_hw");
        assert_eq!(program_name(Path::new(&"a".repeat(40))).len(), C::NANOBPF_CTRL_NAME_LEN as usize);
        assert_eq!(unmapped("::ffff:10.0.0.1".parse().unwrap()), "10.0.0.1".parse::<IpAddr>().unwrap());
    }
}
