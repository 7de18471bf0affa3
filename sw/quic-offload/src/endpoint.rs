//! A sans-I/O event loop over quinn-proto's `Endpoint` and its connections on one [`Datapath`], with
//! the offload when a [`Control`] is given: server and client alike.
//!
//! Per connection, after anything quinn did (a datagram, a timer, the application), the loop lets the
//! device follow ([`OffloadConn::sync`]) and then takes quinn's datagrams one at a time
//! (`poll_transmit(now, 1, ..)`, no GSO): a datagram quinn protected goes out as it is; one whose
//! 1-RTT packet the wrappers left in clear goes to the device to be sealed if it is exactly that one
//! short-header packet, and is dropped (`unsealable`) otherwise: never sent in clear.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::{
    ClientConfig, ConnectionHandle, DatagramEvent, EndpointConfig, Event, RandomConnectionIdGenerator,
    ServerConfig, TransportConfig, VarInt,
};

use crate::conn::OffloadConn;
use crate::counters::Counters;
use crate::device::{Control, Datapath};
use crate::keys::TAG_LEN;
use crate::offload::{self, lock, Hub, KeyLogFile};

/// Set (from a signal handler) to end `Endpoint::run` at once; the entries are removed.
pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// SIGINT and SIGTERM end the loop cleanly: every key this process installed leaves the device.
pub fn stop_on_signals() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// What the application does with the connections (the transfer server and client).
pub trait App {
    /// Every event quinn reports (Connected, streams, ConnectionLost).
    fn on_event(&mut self, ch: ConnectionHandle, conn: &mut quinn_proto::Connection, ev: Event, now: Instant);
    /// After events: write what can be written.
    fn drive(&mut self, ch: ConnectionHandle, conn: &mut quinn_proto::Connection, now: Instant);
    /// The connection is gone (drained; its entries removed).
    fn on_closed(&mut self, ch: ConnectionHandle, report: &ConnReport);
    /// Stop the loop once no connection is left.
    fn finished(&self) -> bool;
}

/// What one connection did, when it ends.
#[derive(Clone)]
pub struct ConnReport {
    pub peer: SocketAddr,
    pub offloaded: bool,
    pub counters: Counters,
    /// CPU seconds of this process from the connection's first packet to its end (getrusage).
    pub cpu_s: f64,
    pub wall_s: f64,
    /// The device's counters (`Control::stats`) when the connection ended, for offloaded ones.
    pub device: Option<Vec<(String, u64)>>,
}

pub struct Options {
    /// Connection ID length of this endpoint (0..=20; 0: zero-length CIDs).
    pub cid_len: usize,
    /// Force a key update every N datagrams a connection sends (0: quinn's own schedule only).
    pub key_update_every: u64,
    /// Receive window (connection and stream), bytes.
    pub window: Option<u64>,
    pub keylog: KeyLogFile,
    pub idle_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options { cid_len: 8, key_update_every: 0, window: None, keylog: None, idle_timeout: Duration::from_secs(30) }
    }
}

struct Conn {
    conn: quinn_proto::Connection,
    /// The key wrappers' state (with or without a device: it also counts what quinn did).
    st: Option<offload::State>,
    off: Option<OffloadConn>,
    counters: Counters,
    sent_since_update: u64,
    cpu0: f64,
    t0: Instant,
}

pub struct Endpoint {
    ep: quinn_proto::Endpoint,
    dp: Box<dyn Datapath>,
    ctl: Option<Box<dyn Control>>,
    hub: Hub,
    conns: HashMap<ConnectionHandle, Conn>,
    client_cfg: Option<ClientConfig>,
    opts: Options,
    local_port: u16,
    /// Counters of the endpoint: datagrams not of a connection, and the sum of the ended connections.
    pub counters: Counters,
    rx: Vec<u8>,
    tx: Vec<u8>,
}

impl Drop for Endpoint {
    /// No entry of this process stays on the device after it.
    fn drop(&mut self) {
        self.remove_all_entries();
    }
}

/// CPU seconds (user + system) of this process.
pub fn cpu_seconds() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn transport(opts: &Options) -> Arc<TransportConfig> {
    let mut t = TransportConfig::default();
    t.max_idle_timeout(Some(opts.idle_timeout.try_into().unwrap_or(VarInt::from_u32(30_000).into())));
    if let Some(w) = opts.window {
        let w = VarInt::from_u64(w).unwrap_or(VarInt::MAX);
        t.receive_window(w);
        t.stream_receive_window(w);
    }
    Arc::new(t)
}

/// The (DCID, SCID) of the first packet of a datagram if it is a long header of a QUIC version
/// (not version negotiation).
pub fn long_header_cids(d: &[u8]) -> Option<(&[u8], &[u8])> {
    if d.len() < 7 || d[0] & 0x80 == 0 || d[1..5] == [0, 0, 0, 0] {
        return None;
    }
    let dl = d[5] as usize;
    let s = 6 + dl;
    if dl > 20 || d.len() < s + 1 {
        return None;
    }
    let sl = d[s] as usize;
    if sl > 20 || d.len() < s + 1 + sl {
        return None;
    }
    Some((&d[6..s], &d[s + 1..s + 1 + sl]))
}

impl Endpoint {
    /// A server (with `server`, the rustls configuration) or a client (`client`), on `dp`, with the
    /// offload when `ctl` is given (`Control::prepare` is called here).
    pub fn new(dp: Box<dyn Datapath>, mut ctl: Option<Box<dyn Control>>, server: Option<rustls::ServerConfig>,
               client: Option<rustls::ClientConfig>, program: Option<&std::path::Path>, opts: Options) -> Result<Endpoint, String> {
        if opts.cid_len > 20 {
            return Err(format!("CID length {}: 0..20", opts.cid_len));
        }
        let local_port = dp.local_addr().port();
        if let Some(c) = ctl.as_mut() {
            c.prepare(program, local_port).map_err(|e| format!("preparing the device: {e}"))?;
        }
        let hub = Hub::default();
        let cid_len = opts.cid_len;
        let mut ecfg = EndpointConfig::default();
        ecfg.cid_generator(move || Box::new(RandomConnectionIdGenerator::new(cid_len)));
        // No fixed-bit greasing towards us: the device opens only packets with the bit set.
        ecfg.grease_quic_bit(false);
        let scfg = match server {
            Some(s) => {
                let crypto = offload::ServerConfig::new(s, hub.clone(), opts.keylog.clone(), cid_len)?;
                let mut sc = ServerConfig::with_crypto(Arc::new(crypto));
                sc.transport_config(transport(&opts));
                Some(Arc::new(sc))
            }
            None => None,
        };
        let client_cfg = match client {
            Some(c) => {
                let crypto = offload::ClientConfig::new(c, hub.clone(), opts.keylog.clone(), cid_len)?;
                let mut cc = ClientConfig::new(Arc::new(crypto));
                cc.transport_config(transport(&opts));
                Some(cc)
            }
            None => None,
        };
        let ep = quinn_proto::Endpoint::new(Arc::new(ecfg), scfg, true, None);
        Ok(Endpoint {
            ep, dp, ctl, hub, conns: HashMap::new(), client_cfg, opts, local_port, counters: Counters::default(),
            rx: vec![0u8; 65536], tx: Vec::with_capacity(65536),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.dp.local_addr()
    }

    /// Start a connection to `server` (client endpoints).
    pub fn connect(&mut self, server: SocketAddr, name: &str) -> Result<ConnectionHandle, String> {
        let cfg = self.client_cfg.clone().ok_or("not a client endpoint")?;
        let (ch, conn) = self.ep.connect(Instant::now(), cfg, server, name).map_err(|e| format!("connect to {server}: {e}"))?;
        self.add_conn(ch, conn, server);
        Ok(ch)
    }

    fn add_conn(&mut self, ch: ConnectionHandle, conn: quinn_proto::Connection, peer: SocketAddr) {
        let st = self.hub.take();
        let off = match (&self.ctl, &st) {
            (Some(_), Some(st)) => Some(OffloadConn::new(st.clone(), peer, self.local_port)),
            _ => None,
        };
        self.conns.insert(ch, Conn { conn, st, off, counters: Counters::default(), sent_since_update: 0, cpu0: cpu_seconds(), t0: Instant::now() });
    }

    /// The device's counters (None without a device, or when it does not answer).
    pub fn device_stats(&mut self) -> Option<Vec<(String, u64)>> {
        self.ctl.as_mut().and_then(|c| c.stats().map_err(|e| eprintln!("nanobpf-quinn: device stats: {e}")).ok())
    }

    pub fn has_device(&self) -> bool {
        self.ctl.is_some()
    }

    /// Run until the application is finished and no connection is left.
    pub fn run(&mut self, app: &mut dyn App) -> Result<(), String> {
        loop {
            let now = Instant::now();
            let handles: Vec<ConnectionHandle> = self.conns.keys().copied().collect();
            for ch in handles {
                if let Some(c) = self.conns.get_mut(&ch) {
                    if c.conn.poll_timeout().is_some_and(|t| t <= now) {
                        c.conn.handle_timeout(now);
                    }
                }
                self.service(ch, app, now);
            }
            if app.finished() && self.conns.is_empty() {
                return Ok(());
            }
            if STOP.load(Ordering::Relaxed) {
                self.remove_all_entries();
                return Err("interrupted".into());
            }
            let next = self.conns.values_mut().filter_map(|c| c.conn.poll_timeout()).min();
            let wait = next.map(|t| t.saturating_duration_since(Instant::now())).unwrap_or(Duration::from_millis(200));
            self.wait(wait.min(Duration::from_millis(200)))?;
            self.receive(app)?;
        }
    }

    fn wait(&self, d: Duration) -> Result<(), String> {
        let mut fds: Vec<libc::pollfd> = self.dp.fds().into_iter().map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
        // round up: a timer due in 0.3 ms must not spin
        let ms = (d.as_micros() as i64 + 999) / 1000;
        // SAFETY: fds is a valid array of pollfd for the duration of the call.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms as libc::c_int) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("poll: {e}"));
            }
        }
        Ok(())
    }

    fn receive(&mut self, app: &mut dyn App) -> Result<(), String> {
        for _ in 0..256 {
            let r = match self.dp.recv(&mut self.rx) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    // ICMP errors and the like: the datagram is lost, the socket keeps working
                    self.counters.add("rx_error", 1);
                    eprintln!("nanobpf-quinn: receive: {e}");
                    break;
                }
            };
            let now = Instant::now();
            let data = &self.rx[..r.len];
            if r.opened && (data.is_empty() || data[0] & 0x80 != 0) {
                self.counters.add("rx_unknown", 1); // the device opens 1-RTT (short-header) packets only
                continue;
            }
            let long = long_header_cids(data).map(|(_, s)| s.to_vec());
            let mut buf = BytesMut::with_capacity(r.len + TAG_LEN);
            buf.extend_from_slice(data);
            if r.opened {
                // the tag room the device removed, so quinn's length checks see a whole packet
                buf.extend_from_slice(&[0u8; TAG_LEN]);
            }
            let mut resp = Vec::new();
            match self.ep.handle(now, r.peer, None, None, buf, &mut resp) {
                Some(DatagramEvent::ConnectionEvent(ch, ev)) => {
                    let Some(c) = self.conns.get_mut(&ch) else { continue };
                    if r.opened && !c.off.as_ref().is_some_and(|o| o.active && o.has_entries()) {
                        c.counters.add("rx_unknown", 1); // not from an entry of this connection: not trusted
                        continue;
                    }
                    if let (Some(o), Some(scid)) = (c.off.as_mut(), long) {
                        if !o.active {
                            o.peer_cid = Some(scid);
                        }
                    }
                    if let Some(o) = &c.off {
                        let mut s = lock(&o.st);
                        s.in_receive = true;
                        s.device_opened = r.opened;
                    }
                    c.conn.handle_event(ev);
                    if let Some(o) = &c.off {
                        let mut s = lock(&o.st);
                        s.in_receive = false;
                        s.device_opened = false;
                    }
                    c.counters.add(if r.opened { "rx_datagrams_device" } else { "rx_datagrams" }, 1);
                    self.service(ch, app, now);
                }
                Some(DatagramEvent::NewConnection(incoming)) => {
                    if r.opened {
                        self.ep.ignore(incoming);
                        self.counters.add("rx_unknown", 1);
                        continue;
                    }
                    let mut resp = Vec::new();
                    match self.ep.accept(incoming, now, &mut resp, None) {
                        Ok((ch, conn)) => {
                            self.add_conn(ch, conn, r.peer);
                            if let (Some(c), Some(scid)) = (self.conns.get_mut(&ch), long) {
                                if let Some(o) = c.off.as_mut() {
                                    o.peer_cid = Some(scid);
                                }
                            }
                            self.service(ch, app, now);
                        }
                        Err(e) => {
                            self.counters.add("accept_failed", 1);
                            if let Some(t) = e.response {
                                let _ = self.dp.send(t.destination, &resp[..t.size]);
                            }
                        }
                    }
                }
                Some(DatagramEvent::Response(t)) => {
                    if r.opened {
                        self.counters.add("rx_unknown", 1);
                    } else if let Err(e) = self.dp.send(t.destination, &resp[..t.size]) {
                        eprintln!("nanobpf-quinn: send: {e}");
                    }
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Everything a connection has to do now: endpoint events, application events, the device
    /// following quinn, datagrams out; its end when drained.
    fn service(&mut self, ch: ConnectionHandle, app: &mut dyn App, now: Instant) {
        let Some(c) = self.conns.get_mut(&ch) else { return };
        while let Some(e) = c.conn.poll_endpoint_events() {
            if let Some(ev) = self.ep.handle_event(ch, e) {
                c.conn.handle_event(ev);
            }
        }
        while let Some(ev) = c.conn.poll() {
            if matches!(ev, Event::Connected) {
                if let (Some(o), Some(ctl)) = (c.off.as_mut(), self.ctl.as_mut()) {
                    o.activate(ctl.as_mut(), &mut c.counters);
                }
            }
            app.on_event(ch, &mut c.conn, ev, now);
        }
        app.drive(ch, &mut c.conn, now);
        if let (Some(o), Some(ctl)) = (c.off.as_mut(), self.ctl.as_mut()) {
            o.sync(ctl.as_mut(), &mut c.counters);
        }
        self.transmit(ch, now);
        let Some(c) = self.conns.get_mut(&ch) else { return };
        while let Some(e) = c.conn.poll_endpoint_events() {
            if let Some(ev) = self.ep.handle_event(ch, e) {
                c.conn.handle_event(ev);
            }
        }
        if c.conn.is_drained() {
            let Some(mut c) = self.conns.remove(&ch) else { return };
            if let (Some(o), Some(ctl)) = (c.off.as_mut(), self.ctl.as_mut()) {
                o.remove(ctl.as_mut(), &mut c.counters);
            }
            let offloaded = c.off.as_ref().is_some_and(|o| o.offloaded);
            if let Some(st) = &c.st {
                let (k, gen) = { let s = lock(st); (s.c, s.gen) };
                c.counters.add("key_generation", gen);
                for (n, v) in [("rx_device", k.rx_device), ("rx_software", k.rx_software),
                               ("rx_software_active", k.rx_software_active), ("rx_phase_mismatch", k.rx_phase_mismatch),
                               ("tx_1rtt_clear", k.tx_1rtt_clear), ("tx_1rtt_software", k.tx_1rtt_software),
                               ("tx_1rtt_software_active", k.tx_1rtt_software_active),
                               ("quinn_updates_local", k.quinn_updates_local), ("quinn_updates_peer", k.quinn_updates_peer)] {
                    c.counters.add(n, v);
                }
            }
            let cpu_s = cpu_seconds() - c.cpu0;
            let device = if offloaded { self.device_stats() } else { None };
            let report = ConnReport {
                peer: c.conn.remote_address(), offloaded, counters: c.counters.clone(),
                cpu_s, wall_s: c.t0.elapsed().as_secs_f64(), device,
            };
            self.counters.merge(&c.counters);
            self.counters.add("connections", 1);
            app.on_closed(ch, &report);
        }
    }

    /// Remove every entry of the connections still open (the loop ends early, or on an error).
    pub fn remove_all_entries(&mut self) {
        for c in self.conns.values_mut() {
            if let (Some(o), Some(ctl)) = (c.off.as_mut(), self.ctl.as_mut()) {
                o.remove(ctl.as_mut(), &mut c.counters);
            }
        }
    }

    fn transmit(&mut self, ch: ConnectionHandle, now: Instant) {
        let Some(c) = self.conns.get_mut(&ch) else { return };
        loop {
            if self.opts.key_update_every > 0 && c.sent_since_update >= self.opts.key_update_every {
                // quinn ignores the request while the last update is not done (its previous keys are
                // kept for 3 PTOs): the count restarts only once quinn moved to a new generation, so
                // each side starts its updates however fast the transfer runs
                let gen = |c: &Conn| c.st.as_ref().map(|st| lock(st).gen);
                let before = gen(c);
                c.conn.force_key_update();
                if gen(c) != before {
                    c.sent_since_update = 0;
                }
                if let (Some(o), Some(ctl)) = (c.off.as_mut(), self.ctl.as_mut()) {
                    o.sync(ctl.as_mut(), &mut c.counters);
                }
            }
            if let Some(o) = &c.off {
                lock(&o.st).begin_datagram();
            }
            self.tx.clear();
            let Some(t) = c.conn.poll_transmit(now, 1, &mut self.tx) else { break };
            let data = &self.tx[..t.size];
            c.sent_since_update += 1;
            let clear = match c.off.as_mut() {
                Some(o) => {
                    // a key update quinn made while building this datagram reaches the device first
                    if let Some(ctl) = self.ctl.as_mut() {
                        o.sync(ctl.as_mut(), &mut c.counters);
                    }
                    if !o.active {
                        if let Some((_, scid)) = long_header_cids(data) {
                            o.local_cid = Some(scid.to_vec());
                        }
                    }
                    std::mem::take(&mut lock(&o.st).clear)
                }
                None => Vec::new(),
            };
            if clear.is_empty() {
                c.counters.add("tx_software", 1);
                if let Err(e) = self.dp.send(t.destination, data) {
                    c.counters.add("tx_error", 1);
                    eprintln!("nanobpf-quinn: send to {}: {e}", t.destination);
                }
                continue;
            }
            // An unprotected packet: it leaves only through the device, and only as exactly one
            // short-header packet filling the datagram.
            let Some(o) = c.off.as_mut() else { continue };
            let n = o.peer_cid_len();
            let exact = clear.len() == 1 && clear[0].0 == data.len() && data.starts_with(&clear[0].1)
                && data[0] & 0x80 == 0 && data.len() > 1 + n + TAG_LEN;
            if !o.active || !exact {
                c.counters.add("unsealable", clear.len() as u64);
                continue;
            }
            let Some(ctl) = self.ctl.as_mut() else { continue };
            if !o.seal_for(ctl.as_mut(), &mut c.counters, &data[1..1 + n]) {
                c.counters.add("unsealable", 1);
                continue;
            }
            match self.dp.send_seal(t.destination, &data[..data.len() - TAG_LEN], n as u8) {
                Ok(()) => c.counters.add("tx_device", 1),
                Err(e) => {
                    c.counters.add("tx_error", 1);
                    eprintln!("nanobpf-quinn: send to the device for {}: {e}", t.destination);
                }
            }
        }
    }
}
