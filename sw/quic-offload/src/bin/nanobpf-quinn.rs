//! nanobpf-quinn: the transfer server and client of nanobpf.quic.transfer, on quinn, with the 1-RTT
//! packet protection offloaded to the NanoBPF DPU (sw/quic-offload/README.md).

use std::fs::OpenOptions;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use nanobpf_quinn::counters::{json_object, json_string};
use nanobpf_quinn::device::{Control, Datapath};
use nanobpf_quinn::endpoint::{Endpoint, Options};
use nanobpf_quinn::offload::KeyLogFile;
use nanobpf_quinn::{driver, plain, tls, transfer};

const HELP: &str = "\
nanobpf-quinn: file transfers over QUIC (quinn + rustls), the protocol of nanobpf.quic.transfer, with
1-RTT packet protection (AES-128-GCM + header protection) offloaded to the NanoBPF DPU.

usage:
  nanobpf-quinn serve [--listen ADDR:PORT] --cert-dir D [--offload none|driver|packet:IFNAME]
                      [--program FILE] [--key-file FILE] [--cid-len N] [--keylog FILE]
                      [--key-update-every N] [--max-conns N]
  nanobpf-quinn get --host HOST [--port PORT] --size N --cert-dir D [--cid-len N] [--keylog FILE]
                    [--key-update-every N] [--window BYTES] [--offload none|driver|packet:IFNAME]
                    [--program FILE] [--key-file FILE]
  nanobpf-quinn crypto-cost [--packets N]
                    what the offload takes off quinn: rustls's (ring's) 1-RTT seal and open with header
                    protection of 1,207-byte packets, CPU ns per byte, measured here (JSON)

options:
  --listen ADDR:PORT     where the server listens (default [::]:4435; [::] takes IPv4 too)
  --host, --port         the server (get; port default 4435)
  --size N               bytes to fetch (1..2^34)
  --cert-dir D           cert.pem and key.pem (the server's); the client pins cert.pem
  --offload MODE         none (default): quinn protects every packet; driver: nanobpf.ko (keys over
                         its netlink family, SO_MARK/SO_RCVMARK; needs CAP_NET_ADMIN and an attached
                         device); packet:IFNAME: the user-space control path on the DPU link
  --program FILE         QUIC program image loaded when the device has none (xdp_quic_hw.nbpf)
  --key-file FILE        the device key (packet backend; the driver has it from `dev attach`)
  --cid-len N            length of this endpoint's connection IDs, 0..20 (0: zero-length; default 8)
  --keylog FILE          append the TLS secrets (NSS key log format) to FILE
  --key-update-every N   start a key update after N datagrams sent since the last one quinn made (asked
                         again on each datagram while quinn still keeps the previous keys; 0: quinn's own
                         schedule only)
  --max-conns N          serve: exit after N connections
  --window BYTES         get: the receive window (connection and stream)

output: serve prints one JSON line per connection (proto, bytes, cpu_s, wall_s, offloaded, offload
counters, device counters); get prints one JSON line (proto, bytes, seconds, mbit_s, ok) and exits
1 when the SHA-256 of the payload does not match or the transfer failed.
";

struct Args {
    cmd: String,
    listen: SocketAddr,
    host: Option<String>,
    port: u16,
    size: Option<u64>,
    cert_dir: Option<PathBuf>,
    offload: String,
    program: Option<PathBuf>,
    key_file: Option<PathBuf>,
    cid_len: usize,
    keylog: Option<PathBuf>,
    key_update_every: u64,
    max_conns: Option<u64>,
    window: Option<u64>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let cmd = it.next().ok_or("a command: serve or get (--help)")?;
    if cmd == "--help" || cmd == "-h" || cmd == "help" {
        print!("{HELP}");
        std::process::exit(0);
    }
    if cmd == "crypto-cost" {
        let packets = match (it.next().as_deref(), it.next()) {
            (None, _) => 200_000,
            (Some("--packets"), Some(n)) => n.parse::<u64>().ok().filter(|&n| n > 0)
                .ok_or_else(|| format!("--packets: a positive number, got {n:?}"))?,
            (Some(o), _) => return Err(format!("crypto-cost: unknown option {o:?} (--help)")),
        };
        println!("{}", crypto_cost(packets));
        std::process::exit(0);
    }
    if cmd != "serve" && cmd != "get" {
        return Err(format!("unknown command {cmd:?}: serve, get or crypto-cost (--help)"));
    }
    let mut a = Args {
        cmd, listen: "[::]:4435".parse().map_err(|e| format!("{e}"))?, host: None, port: 4435, size: None,
        cert_dir: None, offload: "none".into(), program: None, key_file: None, cid_len: 8, keylog: None,
        key_update_every: 0, max_conns: None, window: None,
    };
    while let Some(opt) = it.next() {
        if opt == "--help" || opt == "-h" {
            print!("{HELP}");
            std::process::exit(0);
        }
        let mut val = || it.next().ok_or_else(|| format!("{opt} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|_| format!("{opt}: not a number: {v:?}"));
        match opt.as_str() {
            "--listen" => {
                let v = val()?;
                a.listen = v.parse().map_err(|_| format!("--listen: ADDR:PORT expected, got {v:?}"))?
            }
            "--host" => a.host = Some(val()?),
            "--port" => a.port = u16::try_from(num(val()?)?).map_err(|_| "--port: 0..65535".to_string())?,
            "--size" => a.size = Some(num(val()?)?),
            "--cert-dir" => a.cert_dir = Some(val()?.into()),
            "--offload" => a.offload = val()?,
            "--program" => a.program = Some(val()?.into()),
            "--key-file" => a.key_file = Some(val()?.into()),
            "--cid-len" => a.cid_len = num(val()?)? as usize,
            "--keylog" => a.keylog = Some(val()?.into()),
            "--key-update-every" => a.key_update_every = num(val()?)?,
            "--max-conns" => a.max_conns = Some(num(val()?)?),
            "--window" => a.window = Some(num(val()?)?),
            _ => return Err(format!("unknown option {opt:?} (--help)")),
        }
    }
    if a.cid_len > 20 {
        return Err(format!("--cid-len {}: 0..20", a.cid_len));
    }
    Ok(a)
}

type Device = (Box<dyn Datapath>, Option<Box<dyn Control>>);

fn open_device(a: &Args, bind: SocketAddr) -> Result<Device, String> {
    match a.offload.as_str() {
        "none" => Ok((Box::new(plain::PlainUdp::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?), None)),
        "driver" => {
            let ctl = driver::DriverControl::open().map_err(|e| e.to_string())?;
            let dp = driver::DriverUdp::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
            Ok((Box::new(dp), Some(Box::new(ctl))))
        }
        m if m.starts_with("packet:") => open_packet(&m["packet:".len()..], a, bind),
        m => Err(format!("--offload {m:?}: none, driver or packet:IFNAME")),
    }
}

/// The user-space backend (src/packet.rs): control protocol and shim frames over AF_PACKET on the
/// DPU link, in front of our UDP socket; one object for both halves.
fn open_packet(ifname: &str, a: &Args, bind: SocketAddr) -> Result<Device, String> {
    let key = a.key_file.as_deref().ok_or("--offload packet:IF needs --key-file (the device key)")?;
    let udp = std::net::UdpSocket::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
    let dev = nanobpf_quinn::packet::PacketDevice::open(ifname, key, udp, Default::default())
        .map_err(|e| format!("the DPU behind {ifname}: {e}"))?;
    let (ctl, dp) = nanobpf_quinn::split::split(dev);
    Ok((Box::new(dp), Some(Box::new(ctl))))
}

fn keylog(a: &Args) -> Result<KeyLogFile, String> {
    match &a.keylog {
        None => Ok(None),
        Some(p) => {
            let f = OpenOptions::new().create(true).append(true).open(p).map_err(|e| format!("--keylog {}: {e}", p.display()))?;
            Ok(Some(Arc::new(Mutex::new(f))))
        }
    }
}

fn serve(a: &Args) -> Result<(), String> {
    let dir = a.cert_dir.as_ref().ok_or("serve needs --cert-dir")?;
    let tlscfg = tls::server_config(dir)?;
    let (dp, ctl) = open_device(a, a.listen)?;
    let offloaded = ctl.is_some();
    let opts = Options { cid_len: a.cid_len, key_update_every: a.key_update_every, window: None, keylog: keylog(a)?, ..Options::default() };
    let mut ep = Endpoint::new(dp, ctl, Some(tlscfg), None, a.program.as_deref(), opts)?;
    eprintln!("nanobpf-quinn: serving on {} (offload {})", ep.local_addr(), a.offload);
    let proto = if offloaded { "quic-offload" } else { "quic" };
    let mut app = transfer::Server::new(proto, a.max_conns);
    ep.run(&mut app)
}

fn get(a: &Args) -> Result<bool, String> {
    let host = a.host.as_ref().ok_or("get needs --host")?;
    let size = a.size.ok_or("get needs --size")?;
    if size == 0 || size > transfer::MAX_SIZE {
        return Err(format!("--size: 1..{}", transfer::MAX_SIZE));
    }
    let dir = a.cert_dir.as_ref().ok_or("get needs --cert-dir")?;
    let server = (host.as_str(), a.port).to_socket_addrs().map_err(|e| format!("{host}: {e}"))?
        .next().ok_or_else(|| format!("{host}: no address"))?;
    let bind: SocketAddr = if server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().map_err(|e| format!("{e}"))?;
    let tlscfg = tls::client_config(dir)?;
    let (dp, ctl) = open_device(a, bind)?;
    let opts = Options { cid_len: a.cid_len, key_update_every: a.key_update_every, window: a.window, keylog: keylog(a)?, ..Options::default() };
    let mut ep = Endpoint::new(dp, ctl, None, Some(tlscfg), a.program.as_deref(), opts)?;
    let mut app = transfer::Client::new(size);
    ep.connect(server, "localhost")?;
    ep.run(&mut app)?;
    let secs = app.elapsed.unwrap_or_else(|| app.t0.elapsed().as_secs_f64());
    let ok = app.ok == Some(true);
    let mut items = vec![
        ("proto", json_string(if ep.has_device() { "quic-offload" } else { "quic" })),
        ("bytes", app.got.to_string()),
        ("seconds", format!("{secs:.6}")),
        ("mbit_s", format!("{:.3}", if secs > 0.0 { app.got as f64 * 8.0 / secs / 1e6 } else { 0.0 })),
        ("ok", ok.to_string()),
    ];
    if let Some(r) = &app.report {
        items.push(("offloaded", r.offloaded.to_string()));
        items.push(("offload", r.counters.to_json()));
    }
    if let Some(e) = &app.error {
        items.push(("error", json_string(e)));
    }
    println!("{}", json_object(items));
    if let Some(e) = &app.error {
        eprintln!("nanobpf-quinn: {e}");
    } else if !ok {
        eprintln!("nanobpf-quinn: the payload's SHA-256 does not match ({} of {size} bytes)", app.got);
    }
    Ok(ok)
}

/// rustls's 1-RTT packet protection as quinn uses it (the ring provider; AES-128-GCM and AES header
/// protection), per byte of a packet, in this process: the CPU the offload takes off quinn when the
/// device seals and opens instead. Initial keys stand in for 1-RTT ones (the same algorithms).
fn crypto_cost(packets: u64) -> String {
    use rustls::quic::Version;
    use rustls::Side;
    use std::hint::black_box;
    use std::time::Instant;
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256.tls13().expect("a TLS 1.3 suite");
    let quic = suite.quic_suite().expect("its QUIC suite");
    let cid = [0x4e, 0x42, 0, 0, 0, 0, 0, 1];
    let (client, server) = (quic.keys(&cid, Side::Client, Version::V1), quic.keys(&cid, Side::Server, Version::V1));
    let mut header = vec![0x41u8];
    header.extend_from_slice(&cid);
    header.extend_from_slice(&[0x00, 0x01]);                 // a 2-byte packet number
    let payload_len = 1180usize;
    let bytes = (header.len() + payload_len + 16) as f64;
    let sample = 4 - 2;                                       // RFC 9001 5.4.2: pn offset + 4, in the payload
    let mut buf = vec![0x5au8; payload_len];
    let t0 = Instant::now();
    for pn in 0..packets {
        let tag = client.local.packet.encrypt_in_place(pn, &header, &mut buf).expect("seal");
        let (mut first, mut pnb) = (header[0], [0u8, 1]);
        client.local.header.encrypt_in_place(&buf[sample..sample + 16], &mut first, &mut pnb).expect("mask");
        black_box((tag, first, pnb));
    }
    let seal = t0.elapsed().as_secs_f64() * 1e9 / (packets as f64 * bytes);
    let mut sealed = vec![0x5au8; payload_len];
    let tag = client.local.packet.encrypt_in_place(7, &header, &mut sealed).expect("seal");
    sealed.extend_from_slice(tag.as_ref());
    let mut work = sealed.clone();
    let t0 = Instant::now();
    for _ in 0..packets {
        work.copy_from_slice(&sealed);
        let (mut first, mut pnb) = (header[0], [0u8, 1]);
        server.remote.header.decrypt_in_place(&work[sample..sample + 16], &mut first, &mut pnb).expect("unmask");
        black_box(server.remote.packet.decrypt_in_place(7, &header, &mut work).expect("open").len());
    }
    let open = t0.elapsed().as_secs_f64() * 1e9 / (packets as f64 * bytes);
    json_object(vec![("seal_ns_per_byte", format!("{seal:.3}")), ("open_ns_per_byte", format!("{open:.3}")),
                     ("packet_bytes", format!("{}", bytes as u64)), ("packets", format!("{packets}"))])
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("nanobpf-quinn: {e}");
            return ExitCode::from(2);
        }
    };
    nanobpf_quinn::endpoint::stop_on_signals();
    let r = if a.cmd == "serve" {
        // SIGINT/SIGTERM end a server normally (its keys removed), as transfer.py's does
        match serve(&a) {
            Err(e) if e == "interrupted" => Ok(true),
            r => r.map(|_| true),
        }
    } else {
        get(&a)
    };
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("nanobpf-quinn: {e}");
            ExitCode::from(1)
        }
    }
}
