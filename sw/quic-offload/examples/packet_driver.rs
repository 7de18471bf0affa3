//! A test driver of `PacketDevice` (tests/quic/test_quinn_packet.py): opens the device, then obeys
//! one command per line on stdin and answers one line on stdout, `ok ...`, `none` or `err <why>`.
//!
//!     packet_driver IFNAME KEY_FILE BIND_ADDR [RETRY_MS]
//!
//!     prepare PROGRAM                          Control::prepare with the socket's port
//!     key add|update|del open|seal cid HEX [KEYS_HEX]
//!     key add|update|del open|seal addr IP PORT [KEYS_HEX]   (by address: the peer's, our port)
//!     stats | counters                         `ok name=value ...`
//!     seal IP PORT CID_LEN HEX                 Datapath::send_seal
//!     send IP PORT HEX                         Datapath::send
//!     recv TIMEOUT_MS                          `ok opened=0|1 peer=ADDR data=HEX`, or `none`
//!     quit

use std::io::{self, BufRead, Write};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use nanobpf_quinn::ctrlproto::hex;
use nanobpf_quinn::ctrlproto_client::Retry;
use nanobpf_quinn::device::{Control, Datapath, KeyId, KEYS_SIZE, OPEN, SEAL};
use nanobpf_quinn::packet::{PacketDevice, PacketOptions};

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 {
        return Err(format!("odd hex '{s}'"));
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| format!("hex: {e}"))).collect()
}

fn arg<'a>(w: &[&'a str], i: usize) -> Result<&'a str, String> {
    w.get(i).copied().ok_or_else(|| format!("argument {i} missing"))
}

fn key_cmd(dev: &mut PacketDevice, w: &[&str]) -> Result<String, String> {
    let dir = match arg(w, 2)? { "open" => OPEN, "seal" => SEAL, d => return Err(format!("direction {d}")) };
    let (id, rest) = match arg(w, 3)? {
        "cid" => (KeyId::cid(dir, &unhex(arg(w, 4)?)?), 5),
        "addr" => {
            let ip: IpAddr = arg(w, 4)?.parse().map_err(|e| format!("{e}"))?;
            let port: u16 = arg(w, 5)?.parse().map_err(|e| format!("{e}"))?;
            (KeyId::addr(dir, SocketAddr::new(ip, port), dev.local_addr().port()), 6)
        }
        k => return Err(format!("entry kind {k}")),
    };
    let keys = || -> Result<[u8; KEYS_SIZE], String> {
        unhex(arg(w, rest)?)?.try_into().map_err(|v: Vec<u8>| format!("keys of {} bytes, {KEYS_SIZE} expected", v.len()))
    };
    match arg(w, 1)? {
        "add" => dev.key_add(&id, &keys()?),
        "update" => dev.key_update(&id, &keys()?),
        "del" => dev.key_del(&id),
        op => return Err(format!("key operation {op}")),
    }.map_err(|e| e.to_string())?;
    Ok("ok".into())
}

fn recv(dev: &mut PacketDevice, timeout: Duration) -> Result<String, String> {
    let end = Instant::now() + timeout;
    let mut buf = vec![0u8; 65536];
    loop {
        if let Some(r) = dev.recv(&mut buf).map_err(|e| e.to_string())? {
            return Ok(format!("ok opened={} peer={} data={}", u8::from(r.opened), r.peer, hex(&buf[..r.len])));
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok("none".into());
        }
        let mut fds: Vec<libc::pollfd> = dev.fds().into_iter().map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
        // SAFETY: fds is a valid array of pollfd
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, left.as_millis().max(1) as i32) };
    }
}

fn command(dev: &mut PacketDevice, line: &str) -> Result<String, String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let addr = |i: usize| -> Result<SocketAddr, String> {
        let ip: IpAddr = arg(&w, i)?.parse().map_err(|e| format!("{e}"))?;
        Ok(SocketAddr::new(ip, arg(&w, i + 1)?.parse().map_err(|e| format!("{e}"))?))
    };
    let pairs = |v: Vec<(String, u64)>| format!("ok {}", v.iter().map(|(k, n)| format!("{k}={n}")).collect::<Vec<_>>().join(" "));
    match arg(&w, 0)? {
        "prepare" => {
            let port = dev.local_addr().port();
            dev.prepare(Some(Path::new(arg(&w, 1)?)), port).map_err(|e| e.to_string())?;
            Ok("ok".into())
        }
        "key" => key_cmd(dev, &w),
        "stats" => dev.stats().map(pairs).map_err(|e| e.to_string()),
        "counters" => Ok(pairs(dev.counters().into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        "seal" => {
            let cid_len: u8 = arg(&w, 3)?.parse().map_err(|e| format!("{e}"))?;
            dev.send_seal(addr(1)?, &unhex(arg(&w, 4)?)?, cid_len).map_err(|e| e.to_string())?;
            Ok("ok".into())
        }
        "send" => {
            dev.send(addr(1)?, &unhex(arg(&w, 3)?)?).map_err(|e| e.to_string())?;
            Ok("ok".into())
        }
        "recv" => recv(dev, Duration::from_millis(arg(&w, 1)?.parse().map_err(|e| format!("{e}"))?)),
        c => Err(format!("unknown command {c}")),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: packet_driver IFNAME KEY_FILE BIND_ADDR [RETRY_MS]");
        std::process::exit(2);
    }
    let mut opts = PacketOptions::default();
    if let Some(ms) = args.get(4).and_then(|s| s.parse::<u64>().ok()) {
        opts.retry = Retry { first: Duration::from_millis(ms), max: Duration::from_millis(ms * 16), ..Retry::default() };
    }
    let out = io::stdout();
    let mut out = out.lock();
    let mut dev = match UdpSocket::bind(&args[3]).map_err(|e| e.to_string())
        .and_then(|s| PacketDevice::open(&args[1], Path::new(&args[2]), s, opts).map_err(|e| e.to_string())) {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(out, "err {e}");
            std::process::exit(1);
        }
    };
    let _ = writeln!(out, "ready {}", dev.local_addr());
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim() == "quit" {
            break;
        }
        let reply = command(&mut dev, &line).unwrap_or_else(|e| format!("err {e}"));
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
}
