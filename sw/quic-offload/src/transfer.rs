//! The transfer protocol of nanobpf.quic.transfer (sw/python/nanobpf/quic/transfer.py): ALPN
//! "nanobpf-xfer"; the client opens a bidirectional stream and sends "GET N\n"; the server sends N
//! bytes of a fixed pattern and finishes the stream; the client checks their SHA-256 and closes.
//!
//! The pattern is BLOCK repeated, BLOCK = SHA-256("nanobpf-xfer pattern" || i as u32 big-endian) for
//! i = 0..2047 (65,536 bytes), computed the same way in transfer.py (tests/pattern.rs checks both).

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

use quinn_proto::{ConnectionHandle, Dir, Event, StreamEvent, StreamId, VarInt};
use ring::digest;

use crate::counters::{json_object, json_string};
use crate::endpoint::{App, ConnReport};

pub const BLOCK_LEN: usize = 65536;
pub const PATTERN_LABEL: &[u8] = b"nanobpf-xfer pattern";
pub const MAX_SIZE: u64 = 1 << 34;
const MAX_REQUEST: usize = 64;

pub fn block() -> &'static [u8] {
    static BLOCK: OnceLock<Vec<u8>> = OnceLock::new();
    BLOCK.get_or_init(|| {
        let mut out = Vec::with_capacity(BLOCK_LEN);
        for i in 0..(BLOCK_LEN / 32) as u32 {
            let mut ctx = digest::Context::new(&digest::SHA256);
            ctx.update(PATTERN_LABEL);
            ctx.update(&i.to_be_bytes());
            out.extend_from_slice(ctx.finish().as_ref());
        }
        out
    })
}

/// The pattern's bytes at offset `off`, at most `max` of them (up to the end of the block).
pub fn pattern_at(off: u64, max: usize) -> &'static [u8] {
    let b = block();
    let start = (off % BLOCK_LEN as u64) as usize;
    &b[start..(start + max).min(BLOCK_LEN)]
}

/// SHA-256 of the first `size` bytes of the pattern, hex.
pub fn payload_digest(size: u64) -> String {
    let mut ctx = digest::Context::new(&digest::SHA256);
    let mut off = 0u64;
    while off < size {
        let c = pattern_at(off, (size - off).min(BLOCK_LEN as u64) as usize);
        ctx.update(c);
        off += c.len() as u64;
    }
    crate::offload::hex(ctx.finish().as_ref())
}

pub fn parse_request(line: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(line).ok()?;
    let mut parts = s.split_whitespace();
    let (Some("GET"), Some(n), None) = (parts.next(), parts.next(), parts.next()) else { return None };
    if !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse::<u64>().ok().filter(|&n| n <= MAX_SIZE)
}

// ------------------------------------------------------------------------------------ server

#[derive(Default)]
struct Xfer {
    request: Vec<u8>,
    size: Option<u64>,
    sent: u64,
    done: bool,
}

#[derive(Default)]
struct ServerConn {
    streams: HashMap<StreamId, Xfer>,
    bytes: u64,
}

/// Serves one transfer per bidirectional stream; one JSON line per connection when it ends.
pub struct Server {
    conns: HashMap<ConnectionHandle, ServerConn>,
    pub max_conns: Option<u64>,
    pub closed: u64,
    pub proto: String,
    /// Print the JSON line of each connection (off in tests, which read `reports`).
    pub print: bool,
    pub reports: Vec<(u64, ConnReport)>,
}

impl Server {
    pub fn new(proto: &str, max_conns: Option<u64>) -> Server {
        Server { conns: HashMap::new(), max_conns, closed: 0, proto: proto.into(), print: true, reports: Vec::new() }
    }
}

impl App for Server {
    fn on_event(&mut self, ch: ConnectionHandle, conn: &mut quinn_proto::Connection, ev: Event, _now: Instant) {
        let sc = self.conns.entry(ch).or_default();
        match ev {
            Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                while let Some(id) = conn.streams().accept(Dir::Bi) {
                    sc.streams.insert(id, Xfer::default());
                    read_request(conn, id, sc.streams.get_mut(&id));
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => read_request(conn, id, sc.streams.get_mut(&id)),
            Event::Stream(StreamEvent::Stopped { id, .. }) => {
                sc.streams.remove(&id);
            }
            _ => {}
        }
    }

    fn drive(&mut self, ch: ConnectionHandle, conn: &mut quinn_proto::Connection, _now: Instant) {
        let Some(sc) = self.conns.get_mut(&ch) else { return };
        for (&id, x) in sc.streams.iter_mut() {
            let Some(size) = x.size else { continue };
            if x.done {
                continue;
            }
            while x.sent < size {
                let chunk = pattern_at(x.sent, (size - x.sent).min(BLOCK_LEN as u64) as usize);
                match conn.send_stream(id).write(chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        x.sent += n as u64;
                        sc.bytes += n as u64;
                    }
                    Err(_) => break, // blocked (Writable comes later) or stopped by the peer
                }
            }
            if x.sent == size {
                let _ = conn.send_stream(id).finish();
                x.done = true;
            }
        }
    }

    fn on_closed(&mut self, ch: ConnectionHandle, r: &ConnReport) {
        let bytes = self.conns.remove(&ch).map_or(0, |c| c.bytes);
        self.closed += 1;
        let mut items = vec![
            ("proto", json_string(&self.proto)),
            ("bytes", bytes.to_string()),
            ("cpu_s", format!("{:.6}", r.cpu_s)),
            ("wall_s", format!("{:.6}", r.wall_s)),
            ("peer", json_string(&r.peer.to_string())),
            ("offloaded", r.offloaded.to_string()),
            ("offload", r.counters.to_json()),
        ];
        if let Some(d) = &r.device {
            items.push(("device", json_object(d.iter().map(|(k, n)| (k.as_str(), n.to_string())))));
        }
        if self.print {
            println!("{}", json_object(items));
        }
        self.reports.push((bytes, r.clone()));
    }

    fn finished(&self) -> bool {
        self.max_conns.is_some_and(|m| self.closed >= m)
    }
}

fn read_request(conn: &mut quinn_proto::Connection, id: StreamId, x: Option<&mut Xfer>) {
    let Some(x) = x else { return };
    let mut bad = false;
    {
        let mut rs = conn.recv_stream(id);
        let Ok(mut chunks) = rs.read(true) else { return };
        while x.size.is_none() {
            match chunks.next(MAX_REQUEST) {
                Ok(Some(c)) => {
                    x.request.extend_from_slice(&c.bytes);
                    if let Some(p) = x.request.iter().position(|&b| b == b'\n') {
                        match parse_request(&x.request[..p]) {
                            Some(n) => x.size = Some(n),
                            None => bad = true,
                        }
                        break;
                    }
                    if x.request.len() > MAX_REQUEST {
                        bad = true;
                        break;
                    }
                }
                _ => break,
            }
        }
        let _ = chunks.finalize();
    }
    if bad {
        // as transfer.py: a bad request closes the stream
        x.done = true;
        let _ = conn.send_stream(id).finish();
        let _ = conn.recv_stream(id).stop(VarInt::from_u32(0));
    }
}

// ------------------------------------------------------------------------------------ client

/// Fetches one transfer; closes the connection when the stream ends.
pub struct Client {
    pub size: u64,
    stream: Option<StreamId>,
    hash: digest::Context,
    pub got: u64,
    pub t0: Instant,
    pub elapsed: Option<f64>,
    pub ok: Option<bool>,
    pub error: Option<String>,
    pub report: Option<ConnReport>,
}

impl Client {
    pub fn new(size: u64) -> Client {
        Client { size, stream: None, hash: digest::Context::new(&digest::SHA256), got: 0, t0: Instant::now(),
                 elapsed: None, ok: None, error: None, report: None }
    }
}

impl App for Client {
    fn on_event(&mut self, _ch: ConnectionHandle, conn: &mut quinn_proto::Connection, ev: Event, now: Instant) {
        match ev {
            Event::Connected => {
                let Some(id) = conn.streams().open(Dir::Bi) else {
                    self.error = Some("no stream available".into());
                    conn.close(now, VarInt::from_u32(1), "no stream".into());
                    return;
                };
                let req = format!("GET {}\n", self.size);
                if conn.send_stream(id).write(req.as_bytes()) != Ok(req.len()) {
                    self.error = Some("the request did not fit the stream".into());
                }
                self.stream = Some(id);
            }
            Event::Stream(StreamEvent::Readable { id }) if Some(id) == self.stream => {
                let mut end = false;
                {
                    let mut rs = conn.recv_stream(id);
                    let read = rs.read(true);
                    if let Ok(mut chunks) = read {
                        loop {
                            match chunks.next(usize::MAX) {
                                Ok(Some(c)) => {
                                    self.hash.update(&c.bytes);
                                    self.got += c.bytes.len() as u64;
                                }
                                Ok(None) => {
                                    end = true;
                                    break;
                                }
                                Err(quinn_proto::ReadError::Blocked) => break,
                                Err(e) => {
                                    self.error = Some(format!("stream: {e}"));
                                    break;
                                }
                            }
                        }
                        let _ = chunks.finalize();
                    }
                }
                if end && self.ok.is_none() {
                    self.elapsed = Some(self.t0.elapsed().as_secs_f64());
                    let digest = crate::offload::hex(self.hash.clone().finish().as_ref());
                    self.ok = Some(self.got == self.size && digest == payload_digest(self.size));
                    conn.close(now, VarInt::from_u32(0), "done".into());
                }
            }
            Event::ConnectionLost { reason } => {
                if self.ok.is_none() && self.error.is_none() {
                    self.error = Some(format!("connection lost: {reason}"));
                }
            }
            _ => {}
        }
    }
    fn drive(&mut self, _ch: ConnectionHandle, _conn: &mut quinn_proto::Connection, _now: Instant) {}
    fn on_closed(&mut self, _ch: ConnectionHandle, report: &ConnReport) {
        if self.ok.is_none() && self.error.is_none() {
            self.error = Some("the connection ended before the transfer".into());
        }
        self.report = Some(report.clone());
    }
    fn finished(&self) -> bool {
        self.report.is_some()
    }
}
