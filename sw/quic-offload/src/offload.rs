//! The offload inside quinn: rustls configurations and keys wrapped so that, per connection, the
//! 1-RTT packets can be left unprotected for the device to seal, and packets the device opened skip
//! quinn's own header protection and AEAD (docs/offload.md "What the offload does").
//!
//! quinn-proto keeps the keys behind `crypto::Session`; the wrappers here see every key it gets
//! (Initial and Handshake keys only to know that a datagram holds a long-header packet; the 1-RTT
//! keys of the handshake and of every `next_1rtt_keys`, numbered by generation), and each session's
//! own rustls `KeyLog` captures the 1-RTT traffic secrets, from which [`crate::keys`] derives what the
//! device's entries hold. The event loop ([`crate::endpoint`]) owns the device; the wrappers only
//! record what happened in the connection's [`Shared`] state, and read from it what to do.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::BytesMut;
use quinn_proto::crypto::{self, CryptoError, ExportKeyingMaterialError, HeaderKey, KeyPair, Keys, PacketKey};
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::{ConnectError, ConnectionId, Side};

use crate::keys::{Secret, TAG_LEN};

/// First bytes of a packet left unprotected, kept to recognise it in the datagram quinn hands out.
pub const CLEAR_PREFIX: usize = 24;

/// The per-connection state the key wrappers and the event loop share.
#[derive(Default)]
pub struct Shared {
    /// The side of this connection (whose traffic secret is ours).
    pub is_server: bool,
    /// CLIENT_TRAFFIC_SECRET_0 / SERVER_TRAFFIC_SECRET_0 as the KeyLog saw them.
    pub client_secret: Option<Secret>,
    pub server_secret: Option<Secret>,

    // ---- set by the event loop
    /// 1-RTT packets are left unprotected for the device (keys installed, not failed).
    pub active: bool,
    /// The generations the device's SEAL entries hold (current, current + 1 in the NEXT slot):
    /// only a packet of one of them may be left unprotected.
    pub seal_gen: Option<u64>,
    /// The device's OPEN entries, now and before their last change ((current, second slot)): a
    /// device-opened packet must be one quinn opens with the generation the device used.
    pub open_states: VecDeque<(u64, Option<u64>)>,
    /// The datagram being handled was opened by the device.
    pub device_opened: bool,
    /// Inside `Connection::handle_event` (a key update now is the peer's).
    pub in_receive: bool,
    /// Our CID length (the DCID length of the short headers we receive).
    pub local_cid_len: usize,

    // ---- the datagram quinn is building (reset before each poll_transmit)
    pub long_in_datagram: bool,
    /// (length, first bytes) of each 1-RTT packet left unprotected in this datagram.
    pub clear: Vec<(usize, Vec<u8>)>,
    skip_header: bool,

    // ---- recorded by the wrappers, taken by the event loop
    handshake_key_changes: u32,
    next_calls: u64,
    /// quinn's current 1-RTT generation (both directions move together).
    pub gen: u64,
    /// Key updates quinn made since the loop last looked: true = the peer's.
    pub updates: Vec<bool>,
    /// A packet of the current generation was opened since the last update.
    pub current_seen: bool,
    /// DCIDs of short-header packets quinn opened itself (candidates for OPEN entries).
    pub sw_dcids: Vec<Vec<u8>>,

    pub c: Counts,
}

/// What the wrappers count (added to the connection's counters by the event loop).
#[derive(Default, Clone, Copy, Debug)]
pub struct Counts {
    pub rx_device: u64,
    pub rx_software: u64,
    /// 1-RTT packets quinn opened itself while the offload was active.
    pub rx_software_active: u64,
    /// Device-opened packets refused because quinn would open them with another generation than the
    /// device used (the two disagree on the key phase).
    pub rx_phase_mismatch: u64,
    pub tx_1rtt_clear: u64,
    pub tx_1rtt_software: u64,
    /// 1-RTT packets quinn protected itself while the offload was active (coalesced behind a long
    /// header, or of a generation the device does not hold).
    pub tx_1rtt_software_active: u64,
    /// Key updates quinn made, started by this side or by the peer (with or without a device).
    pub quinn_updates_local: u64,
    pub quinn_updates_peer: u64,
}

pub type State = Arc<Mutex<Shared>>;

pub fn lock(s: &State) -> MutexGuard<'_, Shared> {
    // A poisoned lock means a panic elsewhere in this single-threaded loop; the state is still
    // consistent enough to read (plain flags), so keep going rather than panic twice.
    s.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Before each `poll_transmit`: a new datagram.
    pub fn begin_datagram(&mut self) {
        self.long_in_datagram = false;
        self.clear.clear();
        self.skip_header = false;
    }
    fn open_gen_ok(&self, gen: u64, phase: u8) -> bool {
        self.open_states.iter().any(|&(cur, second)| {
            if (cur & 1) as u8 == phase { gen == cur } else { second == Some(gen) }
        })
    }
}

// ------------------------------------------------------------------------------------ keys

enum Kind {
    /// Initial, Handshake or 0-RTT: long-header packets, always quinn's.
    Long,
    /// 1-RTT keys of generation `gen`.
    OneRtt { gen: u64 },
}

struct OffPacketKey {
    inner: Box<dyn PacketKey>,
    st: State,
    kind: Kind,
}

impl PacketKey for OffPacketKey {
    fn encrypt(&self, packet: u64, buf: &mut [u8], header_len: usize) {
        {
            let mut s = lock(&self.st);
            match self.kind {
                Kind::Long => s.long_in_datagram = true,
                Kind::OneRtt { gen } => {
                    let sealable = s.seal_gen.is_some_and(|g| gen == g || gen == g + 1);
                    if s.active && !s.long_in_datagram && sealable && buf.len() >= header_len + TAG_LEN {
                        // In clear for the device: header and payload as they are, the tag room zero
                        // (the device appends the tag; the event loop cuts these 16 bytes off).
                        let n = buf.len();
                        buf[n - TAG_LEN..].fill(0);
                        // quinn greases the fixed bit (RFC 9287) when the peer allows it; the device
                        // seals only packets with the bit set (it drops NO_FIXED_BIT), and setting it
                        // is always allowed. The header is in clear, the device authenticates it as is.
                        buf[0] |= 0x40;
                        s.clear.push((n, buf[..CLEAR_PREFIX.min(n)].to_vec()));
                        s.skip_header = true;
                        s.c.tx_1rtt_clear += 1;
                        return;
                    }
                    s.c.tx_1rtt_software += 1;
                    if s.active {
                        s.c.tx_1rtt_software_active += 1;
                    }
                }
            }
        }
        self.inner.encrypt(packet, buf, header_len)
    }

    fn decrypt(&self, packet: u64, header: &[u8], payload: &mut BytesMut) -> Result<(), CryptoError> {
        let Kind::OneRtt { gen } = self.kind else {
            return self.inner.decrypt(packet, header, payload);
        };
        let mut s = lock(&self.st);
        if s.device_opened {
            // The device removed header protection and verified the tag; the 16 bytes are the
            // zeros the event loop appended for quinn's length checks.
            let phase = header.first().map_or(0, |b| (b >> 2) & 1);
            if header.first().is_none_or(|b| b & 0x80 != 0) || !s.active || payload.len() < TAG_LEN {
                return Err(CryptoError);
            }
            if !s.open_gen_ok(gen, phase) {
                s.c.rx_phase_mismatch += 1;
                return Err(CryptoError);
            }
            let n = payload.len() - TAG_LEN;
            payload.truncate(n);
            s.c.rx_device += 1;
            if gen == s.gen {
                s.current_seen = true;
            }
            return Ok(());
        }
        drop(s);
        self.inner.decrypt(packet, header, payload)?;
        let mut s = lock(&self.st);
        s.c.rx_software += 1;
        if s.active {
            s.c.rx_software_active += 1;
        }
        if gen == s.gen {
            s.current_seen = true;
        }
        // Authentic: the peer sends to this CID of ours; it gets an OPEN entry.
        let n = s.local_cid_len;
        if n > 0 && header.len() > n && header[0] & 0x80 == 0 {
            let dcid = header[1..1 + n].to_vec();
            if !s.sw_dcids.contains(&dcid) {
                s.sw_dcids.push(dcid);
            }
        }
        Ok(())
    }

    fn tag_len(&self) -> usize {
        self.inner.tag_len()
    }
    fn confidentiality_limit(&self) -> u64 {
        self.inner.confidentiality_limit()
    }
    fn integrity_limit(&self) -> u64 {
        self.inner.integrity_limit()
    }
}

struct OffHeaderKey {
    inner: Box<dyn HeaderKey>,
    st: State,
    one_rtt: bool,
}

impl HeaderKey for OffHeaderKey {
    fn decrypt(&self, pn_offset: usize, packet: &mut [u8]) {
        if self.one_rtt && lock(&self.st).device_opened {
            return; // the device removed it
        }
        self.inner.decrypt(pn_offset, packet)
    }
    fn encrypt(&self, pn_offset: usize, packet: &mut [u8]) {
        if self.one_rtt {
            let mut s = lock(&self.st);
            if s.skip_header {
                s.skip_header = false; // the packet just left in clear: the device protects it
                return;
            }
        }
        self.inner.encrypt(pn_offset, packet)
    }
    fn sample_size(&self) -> usize {
        self.inner.sample_size()
    }
}

fn wrap_packet(k: Box<dyn PacketKey>, st: &State, kind: Kind) -> Box<dyn PacketKey> {
    Box::new(OffPacketKey { inner: k, st: st.clone(), kind })
}

fn wrap_keys(k: Keys, st: &State, one_rtt: bool) -> Keys {
    let kind = || if one_rtt { Kind::OneRtt { gen: 0 } } else { Kind::Long };
    Keys {
        header: KeyPair {
            local: Box::new(OffHeaderKey { inner: k.header.local, st: st.clone(), one_rtt }),
            remote: Box::new(OffHeaderKey { inner: k.header.remote, st: st.clone(), one_rtt }),
        },
        packet: KeyPair {
            local: wrap_packet(k.packet.local, st, kind()),
            remote: wrap_packet(k.packet.remote, st, kind()),
        },
    }
}

// ------------------------------------------------------------------------------------ session

struct OffSession {
    inner: Box<dyn crypto::Session>,
    st: State,
}

impl crypto::Session for OffSession {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        wrap_keys(self.inner.initial_keys(dst_cid, side), &self.st, false)
    }
    fn handshake_data(&self) -> Option<Box<dyn std::any::Any>> {
        self.inner.handshake_data()
    }
    fn peer_identity(&self) -> Option<Box<dyn std::any::Any>> {
        self.inner.peer_identity()
    }
    fn early_crypto(&self) -> Option<(Box<dyn HeaderKey>, Box<dyn PacketKey>)> {
        let (h, p) = self.inner.early_crypto()?;
        Some((Box::new(OffHeaderKey { inner: h, st: self.st.clone(), one_rtt: false }), wrap_packet(p, &self.st, Kind::Long)))
    }
    fn early_data_accepted(&self) -> Option<bool> {
        self.inner.early_data_accepted()
    }
    fn is_handshaking(&self) -> bool {
        self.inner.is_handshaking()
    }
    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, quinn_proto::TransportError> {
        self.inner.read_handshake(buf)
    }
    fn transport_parameters(&self) -> Result<Option<TransportParameters>, quinn_proto::TransportError> {
        self.inner.transport_parameters()
    }
    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        let keys = self.inner.write_handshake(buf)?;
        // rustls changes keys twice: Handshake, then 1-RTT (generation 0).
        let n = {
            let mut s = lock(&self.st);
            s.handshake_key_changes += 1;
            s.handshake_key_changes
        };
        Some(wrap_keys(keys, &self.st, n >= 2))
    }
    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        let kp = self.inner.next_1rtt_keys()?;
        let gen = {
            let mut s = lock(&self.st);
            // quinn asks once when the 1-RTT keys arrive (generation 1, kept ready), then once per
            // key update, which makes generation next_calls - 1 current in both directions.
            s.next_calls += 1;
            if s.next_calls >= 2 {
                s.gen = s.next_calls - 1;
                let remote = s.in_receive;
                s.updates.push(remote);
                if remote { s.c.quinn_updates_peer += 1 } else { s.c.quinn_updates_local += 1 }
                s.current_seen = false;
            }
            s.next_calls
        };
        Some(KeyPair {
            local: wrap_packet(kp.local, &self.st, Kind::OneRtt { gen }),
            remote: wrap_packet(kp.remote, &self.st, Kind::OneRtt { gen }),
        })
    }
    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
        self.inner.is_valid_retry(orig_dst_cid, header, payload)
    }
    fn export_keying_material(&self, output: &mut [u8], label: &[u8], context: &[u8]) -> Result<(), ExportKeyingMaterialError> {
        self.inner.export_keying_material(output, label, context)
    }
}

// ------------------------------------------------------------------------------------ key log

/// Where the NSS key log lines go (tshark, nanobpf.quic.keylog), shared by every session.
pub type KeyLogFile = Option<Arc<Mutex<File>>>;

/// One session's rustls KeyLog: keeps the 1-RTT traffic secrets for the device, and appends every
/// line to the user's key log file if there is one.
struct SessionKeyLog {
    st: State,
    file: KeyLogFile,
}

impl std::fmt::Debug for SessionKeyLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKeyLog")
    }
}

impl rustls::KeyLog for SessionKeyLog {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        if secret.len() == 32 {
            let mut s = [0u8; 32];
            s.copy_from_slice(secret);
            let mut st = lock(&self.st);
            match label {
                "CLIENT_TRAFFIC_SECRET_0" => st.client_secret = Some(s),
                "SERVER_TRAFFIC_SECRET_0" => st.server_secret = Some(s),
                _ => {}
            }
        }
        if let Some(f) = &self.file {
            let line = format!("{label} {} {}\n", hex(client_random), hex(secret));
            let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
            // A key log that cannot be written loses lines for the user's tools, not the transfer.
            let _ = f.write_all(line.as_bytes()).and_then(|_| f.flush());
        }
    }
    fn will_log(&self, _label: &str) -> bool {
        true
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

// ------------------------------------------------------------------------------------ configs

/// The sessions a configuration started since the event loop last looked: it takes the state of the
/// connection `Endpoint::connect`/`accept` just created.
#[derive(Default, Clone)]
pub struct Hub {
    started: Arc<Mutex<Vec<State>>>,
}

impl Hub {
    pub fn take(&self) -> Option<State> {
        self.started.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }
    fn push(&self, st: State) {
        self.started.lock().unwrap_or_else(|p| p.into_inner()).push(st)
    }
}

fn new_state(is_server: bool, local_cid_len: usize) -> State {
    Arc::new(Mutex::new(Shared { is_server, local_cid_len, ..Default::default() }))
}

/// quinn's `crypto::ServerConfig` with the offload's wrappers around each session.
pub struct ServerConfig {
    base: rustls::ServerConfig,
    plain: QuicServerConfig,
    hub: Hub,
    keylog: KeyLogFile,
    local_cid_len: usize,
}

impl ServerConfig {
    pub fn new(base: rustls::ServerConfig, hub: Hub, keylog: KeyLogFile, local_cid_len: usize) -> Result<Self, String> {
        let plain = QuicServerConfig::try_from(base.clone()).map_err(|e| format!("TLS configuration: {e}"))?;
        Ok(ServerConfig { base, plain, hub, keylog, local_cid_len })
    }
}

impl crypto::ServerConfig for ServerConfig {
    fn initial_keys(&self, version: u32, dst_cid: &ConnectionId) -> Result<Keys, crypto::UnsupportedVersion> {
        self.plain.initial_keys(version, dst_cid)
    }
    fn retry_tag(&self, version: u32, orig_dst_cid: &ConnectionId, packet: &[u8]) -> [u8; 16] {
        self.plain.retry_tag(version, orig_dst_cid, packet)
    }
    fn start_session(self: Arc<Self>, version: u32, params: &TransportParameters) -> Box<dyn crypto::Session> {
        let st = new_state(true, self.local_cid_len);
        let mut cfg = self.base.clone();
        cfg.key_log = Arc::new(SessionKeyLog { st: st.clone(), file: self.keylog.clone() });
        // The same rustls configuration as `plain`, which converted: cannot fail.
        let q = Arc::new(QuicServerConfig::try_from(cfg).expect("checked in ServerConfig::new"));
        let inner = crypto::ServerConfig::start_session(q, version, params);
        self.hub.push(st.clone());
        Box::new(OffSession { inner, st })
    }
}

/// quinn's `crypto::ClientConfig` with the offload's wrappers around each session.
pub struct ClientConfig {
    base: rustls::ClientConfig,
    hub: Hub,
    keylog: KeyLogFile,
    local_cid_len: usize,
}

impl ClientConfig {
    pub fn new(base: rustls::ClientConfig, hub: Hub, keylog: KeyLogFile, local_cid_len: usize) -> Result<Self, String> {
        QuicClientConfig::try_from(base.clone()).map_err(|e| format!("TLS configuration: {e}"))?;
        Ok(ClientConfig { base, hub, keylog, local_cid_len })
    }
}

impl crypto::ClientConfig for ClientConfig {
    fn start_session(self: Arc<Self>, version: u32, server_name: &str, params: &TransportParameters) -> Result<Box<dyn crypto::Session>, ConnectError> {
        let st = new_state(false, self.local_cid_len);
        let mut cfg = self.base.clone();
        cfg.key_log = Arc::new(SessionKeyLog { st: st.clone(), file: self.keylog.clone() });
        let q = Arc::new(QuicClientConfig::try_from(cfg).map_err(|_| ConnectError::UnsupportedVersion)?);
        let inner = crypto::ClientConfig::start_session(q, version, server_name, params)?;
        self.hub.push(st.clone());
        Ok(Box::new(OffSession { inner, st }))
    }
}
