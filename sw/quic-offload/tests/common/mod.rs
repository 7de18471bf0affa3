//! Two endpoints over loopback in one process (the server in a thread), each on a plain UDP socket
//! or on the in-process fake device.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use nanobpf_quinn::device::{Control, Datapath};
use nanobpf_quinn::endpoint::{ConnReport, Endpoint, Options};
use nanobpf_quinn::fakedev::{self, Shared};
use nanobpf_quinn::plain::PlainUdp;
use nanobpf_quinn::{tls, transfer};

#[derive(Clone, Copy, Default)]
pub struct Side {
    /// On the fake device (else a plain socket, quinn protects everything).
    pub fake: bool,
    pub refuse_key_update: bool,
    /// Mark every n-th datagram the device did not open as opened (a lying data path).
    pub forge_opened_every: u64,
    pub cid_len: usize,
    pub key_update_every: u64,
    /// Receive window (client): keeps the queues, hence the RTT and quinn's PTO, short, so that
    /// quinn (which starts an update only 3 PTO after the previous one was answered) updates often.
    pub window: Option<u64>,
}

pub struct Outcome {
    pub client: transfer::Client,
    pub server: (u64, ConnReport),
    pub server_dev: Option<Shared>,
    pub client_dev: Option<Shared>,
}

pub fn cert_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn endpoint(side: Side, bind: SocketAddr, server: bool) -> (Endpoint, Option<Shared>) {
    let (dp, ctl, shared): (Box<dyn Datapath>, Option<Box<dyn Control>>, Option<Shared>) = if side.fake {
        let (c, d, t) = fakedev::fake_device(bind).expect("bind");
        {
            let mut t = t.lock().unwrap();
            t.refuse_key_update = side.refuse_key_update;
            t.forge_opened_every = side.forge_opened_every;
        }
        (Box::new(d), Some(Box::new(c)), Some(t))
    } else if side.forge_opened_every > 0 {
        // the fake device's data path without its control: no entries, only lies
        let (_c, d, t) = fakedev::fake_device(bind).expect("bind");
        t.lock().unwrap().forge_opened_every = side.forge_opened_every;
        (Box::new(d), None, Some(t))
    } else {
        (Box::new(PlainUdp::bind(bind).expect("bind")), None, None)
    };
    let opts = Options { cid_len: side.cid_len, key_update_every: side.key_update_every, window: side.window, idle_timeout: Duration::from_secs(10),
                         ..Options::default() };
    let (s, c) = if server {
        (Some(tls::server_config(&cert_dir()).expect("cert")), None)
    } else {
        (None, Some(tls::client_config(&cert_dir()).expect("cert")))
    };
    (Endpoint::new(dp, ctl, s, c, None, opts).expect("endpoint"), shared)
}

pub fn transfer(v6: bool, srv: Side, cli: Side, size: u64) -> Outcome {
    let bind: SocketAddr = if v6 { "[::1]:0" } else { "127.0.0.1:0" }.parse().unwrap();
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        let (mut ep, dev) = endpoint(srv, bind, true);
        tx.send(ep.local_addr()).unwrap();
        let mut app = transfer::Server::new("test", Some(1));
        app.print = false;
        ep.run(&mut app).expect("server loop");
        (app.reports.pop().expect("one report"), dev)
    });
    let addr = rx.recv().unwrap();
    let (mut ep, client_dev) = endpoint(cli, bind, false);
    let mut client = transfer::Client::new(size);
    ep.connect(addr, "localhost").expect("connect");
    ep.run(&mut client).expect("client loop");
    let (server, server_dev) = h.join().expect("server thread");
    Outcome { client, server, server_dev, client_dev }
}

pub fn dev_count(d: &Option<Shared>, name: &str) -> u64 {
    d.as_ref().map_or(0, |t| t.lock().unwrap().counters.get(name))
}

pub fn dev_entries(d: &Option<Shared>) -> usize {
    d.as_ref().map_or(0, |t| t.lock().unwrap().entries.len())
}
