//! The host side of the control protocol in user space: the algorithm of nanobpf.ko and of
//! sw/python/nanobpf/ctrl.py's `Client`, ported.
//!
//! One request in flight, retransmitted unchanged (same nonce, same ciphertext) after 50 ms, the wait
//! doubling up to 800 ms, 6 times (hw/defs/ctrl.toml), then `DeviceError::Timeout`. The host's own
//! state (its key table entries and the program it loaded, if any) is authoritative: a change enters
//! it once the device acknowledged it, and after a new epoch (`STALE_EPOCH`, `NEED_HELLO`,
//! `STALE_SEQ`), a timeout or a failed send the next exchange first replays it all (`HELLO`,
//! `KEY_FLUSH`, the program, every key), so the device converges whatever it applied before. Map
//! contents are the program's and are not replayed: callers watch [`Client::resyncs`] and write their
//! maps again (as `PacketDevice` does with quic_config and quic_ports).

use std::collections::HashMap;
use std::io;
use std::time::{Duration, Instant};

use crate::ctrlproto::{self as P, DeviceKey, FrameError, Header, Limits, ProgInfo, BROADCAST, NONCE_LEN};
use crate::defs::ctrl as C;
use crate::device::{DeviceError, KeyId, KEYS_SIZE};

/// Where control frames go and come from (an AF_PACKET socket on the DPU link; a fake in tests).
pub trait Transport {
    /// The source MAC address of our frames (the device answers to it).
    fn mac(&self) -> [u8; 6];
    fn send(&mut self, frame: &[u8]) -> io::Result<()>;
    /// One frame received within `timeout`, `None` when none came. Frames we sent ourselves are not
    /// returned.
    fn recv(&mut self, timeout: Duration) -> io::Result<Option<Vec<u8>>>;
}

/// Retransmission settings (defaults: hw/defs/ctrl.toml; the simulated DPU needs longer ones).
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    pub first: Duration,
    pub max: Duration,
    pub retries: u32,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            first: Duration::from_millis(u64::from(C::NANOBPF_CTRL_RETRY_MS)),
            max: Duration::from_millis(u64::from(C::NANOBPF_CTRL_RETRY_MAX_MS)),
            retries: C::NANOBPF_CTRL_RETRIES,
        }
    }
}

/// The client's own counters (the driver's `NANOBPF_DRV_STAT_CTRL_*` of the user-space path).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCounters {
    pub tx: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub rx: u64,
    /// Authentic answers that matched nothing in flight (late duplicates, replays of older answers).
    pub unmatched: u64,
    /// Frames whose tag did not verify: never believed.
    pub auth_fail: u64,
    pub malformed: u64,
    pub resyncs: u64,
}

fn resync_status(s: u8) -> bool {
    [C::NANOBPF_CTRL_ST_STALE_EPOCH, C::NANOBPF_CTRL_ST_NEED_HELLO, C::NANOBPF_CTRL_ST_STALE_SEQ].contains(&u32::from(s))
}

/// The status of a refusal, when it was the device's.
pub fn refused_status(e: &DeviceError) -> Option<u32> {
    match e {
        DeviceError::Refused { status: Some(s), .. } => Some(u32::from(*s)),
        _ => None,
    }
}

fn refused(status: u32, message: &str) -> DeviceError {
    DeviceError::Refused { status: Some(status as u8), message: message.to_string() }
}

pub struct Client<T: Transport> {
    link: T,
    key: DeviceKey,
    retry: Retry,
    seq: u32,
    epoch: u32,
    version: Option<u16>,
    peer: [u8; 6],
    synced: bool,
    limits: Limits,
    keys: HashMap<KeyId, [u8; KEYS_SIZE]>,
    slots: HashMap<KeyId, u32>,
    program: Option<(String, Vec<u8>)>,
    counters: ClientCounters,
}

/// What one exchange got back: (status, flags, body).
type Answer = (u8, u8, Vec<u8>);

impl<T: Transport> Client<T> {
    /// A client that has not spoken yet: the first request says HELLO first.
    pub fn new(link: T, key: DeviceKey, retry: Retry) -> Self {
        Client {
            link, key, retry, seq: 0, epoch: 0, version: None, peer: BROADCAST, synced: false,
            limits: Limits::default(), keys: HashMap::new(), slots: HashMap::new(), program: None,
            counters: ClientCounters::default(),
        }
    }

    pub fn counters(&self) -> ClientCounters {
        self.counters
    }
    /// Replays so far: map contents the caller wrote must be written again when this changed.
    pub fn resyncs(&self) -> u64 {
        self.counters.resyncs
    }
    pub fn limits(&self) -> Limits {
        self.limits
    }
    pub fn epoch(&self) -> u32 {
        self.epoch
    }
    /// The host's key table: what a replay sends.
    pub fn host_keys(&self) -> &HashMap<KeyId, [u8; KEYS_SIZE]> {
        &self.keys
    }
    pub fn slot(&self, id: &KeyId) -> Option<u32> {
        self.slots.get(id).copied()
    }
    pub fn link(&self) -> &T {
        &self.link
    }

    // ------------------------------------------------------------ transport
    /// Send one request and wait for its answer. Only an answer whose tag verifies and whose nonce, seq
    /// and type are the request's is believed.
    fn exchange(&mut self, type_: u32, body: &[u8]) -> Result<Answer, DeviceError> {
        self.seq = self.seq.wrapping_add(1).max(1);
        let hello = type_ == C::NANOBPF_CTRL_MSG_HELLO;
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::getrandom(&mut nonce).map_err(|e| DeviceError::Other(format!("no random nonce: {e}")))?;
        let hdr = Header {
            version: self.version.unwrap_or(C::NANOBPF_CTRL_VERSION) as u8,
            type_: type_ as u8,
            seq: self.seq,
            epoch: if hello { 0 } else { self.epoch },
            ..Default::default()
        };
        let frame = P::build_request(&self.peer, &self.link.mac(), hdr, &nonce, body, &self.key)
            .map_err(|e| DeviceError::Other(e.to_string()))?;
        let mut wait = self.retry.first;
        for attempt in 0..=self.retry.retries {
            if attempt > 0 {
                self.counters.retransmits += 1;
            }
            self.link.send(&frame)?;
            self.counters.tx += 1;
            let end = Instant::now() + wait;
            loop {
                let left = end.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                let Some(raw) = self.link.recv(left)? else { break };
                let f = match P::parse(&raw, &self.key) {
                    Ok(Some(f)) => f,
                    Ok(None) => continue,
                    Err(FrameError::Auth) => {
                        self.counters.auth_fail += 1; // forged or another device's: never believed
                        continue;
                    }
                    Err(FrameError::Malformed(_)) => {
                        self.counters.malformed += 1;
                        continue;
                    }
                };
                if !f.hdr.is_response() {
                    continue;
                }
                self.counters.rx += 1;
                if f.hdr.seq != self.seq || u32::from(f.hdr.type_) != type_ || f.nonce != nonce {
                    self.counters.unmatched += 1;
                    continue;
                }
                self.peer = f.src;
                if u32::from(f.hdr.status) == C::NANOBPF_CTRL_ST_OK || hello {
                    self.epoch = f.hdr.epoch;
                }
                return Ok((f.hdr.status, f.hdr.flags, f.body));
            }
            wait = (wait * 2).min(self.retry.max);
        }
        self.counters.timeouts += 1;
        let hint = if self.counters.auth_fail > 0 {
            format!("{} answers failed authentication: check the device key (id {})", self.counters.auth_fail, self.key.id())
        } else {
            format!("a device with another key drops the requests unanswered: check the device key (id {})", self.key.id())
        };
        Err(DeviceError::Timeout(format!("{} seq {}: no answer after {} retransmissions ({hint})",
                                         P::msg_name(type_ as u8), self.seq, self.retry.retries)))
    }

    /// An exchange whose answer must be OK: its body, else `Refused` with the device's text.
    fn checked(&mut self, type_: u32, body: &[u8]) -> Result<Vec<u8>, DeviceError> {
        let (status, _, rbody) = self.exchange(type_, body)?;
        if u32::from(status) != C::NANOBPF_CTRL_ST_OK {
            let text = String::from_utf8_lossy(&rbody);
            let message = if text.is_empty() { P::status_name(status) } else { format!("{}: {text}", P::status_name(status)) };
            return Err(DeviceError::Refused { status: Some(status), message });
        }
        Ok(rbody)
    }

    /// A new session (HELLO). A device still in a session of an earlier instance of this host answers
    /// STALE_SEQ with its last number: the next HELLO continues after it.
    pub fn hello(&mut self) -> Result<Limits, DeviceError> {
        let req = P::hello_req();
        let (mut status, _, mut body) = self.exchange(C::NANOBPF_CTRL_MSG_HELLO, &req)?;
        if u32::from(status) == C::NANOBPF_CTRL_ST_STALE_SEQ && body.len() == C::NANOBPF_STALE_SEQ_SIZE {
            self.seq = P::get_u32(&body, C::NANOBPF_STALE_SEQ_LAST_SEQ_OFF);
            (status, _, body) = self.exchange(C::NANOBPF_CTRL_MSG_HELLO, &req)?;
        }
        if u32::from(status) != C::NANOBPF_CTRL_ST_OK {
            return Err(DeviceError::Refused { status: Some(status),
                                              message: format!("HELLO: {}: {}", P::status_name(status), String::from_utf8_lossy(&body)) });
        }
        self.limits = P::parse_hello_resp(&body)
            .ok_or_else(|| DeviceError::Other(format!("HELLO answer of {} bytes", body.len())))?;
        self.version = Some(self.limits.version);
        Ok(self.limits)
    }

    /// HELLO, then the host's whole state: the device converges to it.
    fn resync(&mut self) -> Result<(), DeviceError> {
        self.counters.resyncs += 1;
        self.hello()?;
        self.checked(C::NANOBPF_CTRL_MSG_KEY_FLUSH, &[])?;
        if let Some((name, image)) = self.program.clone() {
            self.send_program(&name, &image)?;
        }
        self.slots.clear();
        let keys: Vec<(KeyId, [u8; KEYS_SIZE])> = self.keys.iter().map(|(k, v)| (*k, *v)).collect();
        for (id, keys) in keys {
            let body = self.checked(C::NANOBPF_CTRL_MSG_KEY_ADD, &P::key_msg(&id, &keys))?;
            if let Some(slot) = P::parse_key_resp(&body) {
                self.slots.insert(id, slot);
            }
        }
        self.synced = true;
        Ok(())
    }

    /// `step` in the session, replaying first when out of sync. An answer saying the session is gone
    /// marks the link out of sync and `step` runs again (at most 3 times); a timeout or a host I/O error
    /// marks it out of sync and is returned (the device may or may not have applied the request).
    fn in_session<R>(&mut self, mut step: impl FnMut(&mut Self) -> Result<R, DeviceError>) -> Result<R, DeviceError> {
        for _ in 0..3 {
            let r = if self.synced { step(self) } else { self.resync().and_then(|_| step(self)) };
            match r {
                Err(e @ (DeviceError::Timeout(_) | DeviceError::Io(_))) => {
                    self.synced = false;
                    return Err(e);
                }
                Err(DeviceError::Refused { status: Some(s), .. }) if resync_status(s) => {
                    self.synced = false; // STALE_SEQ: another instance used these numbers; HELLO moves on
                }
                other => return other,
            }
        }
        Err(refused(C::NANOBPF_CTRL_ST_STALE_EPOCH, "the device keeps changing epochs"))
    }

    /// A request in the session: the answer's body, or the refusal.
    pub fn call(&mut self, type_: u32, body: &[u8]) -> Result<Vec<u8>, DeviceError> {
        self.in_session(|c| c.checked(type_, body))
    }

    /// Say HELLO now if the link is out of sync (replaying the host state).
    pub fn sync(&mut self) -> Result<(), DeviceError> {
        self.in_session(|_| Ok(()))
    }

    // ------------------------------------------------------------ keys
    /// A new entry with keys never used before: its slot on the device.
    pub fn key_add(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<u32, DeviceError> {
        if self.keys.contains_key(id) {
            return Err(refused(C::NANOBPF_CTRL_ST_EXIST, &format!("{id:?} is already in the host table")));
        }
        let body = self.call(C::NANOBPF_CTRL_MSG_KEY_ADD, &P::key_msg(id, keys))?;
        let slot = P::parse_key_resp(&body).unwrap_or(0);
        self.keys.insert(*id, *keys);
        self.slots.insert(*id, slot);
        Ok(slot)
    }

    /// The entry's keys replaced (its packet-number state kept): its slot.
    pub fn key_update(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<u32, DeviceError> {
        if !self.keys.contains_key(id) {
            return Err(refused(C::NANOBPF_CTRL_ST_NOENT, &format!("{id:?} is not in the host table")));
        }
        let body = self.call(C::NANOBPF_CTRL_MSG_KEY_UPDATE, &P::key_msg(id, keys))?;
        self.keys.insert(*id, *keys);
        Ok(P::parse_key_resp(&body).unwrap_or(0))
    }

    pub fn key_del(&mut self, id: &KeyId) -> Result<(), DeviceError> {
        if !self.keys.contains_key(id) {
            return Err(refused(C::NANOBPF_CTRL_ST_NOENT, &format!("{id:?} is not in the host table")));
        }
        self.call(C::NANOBPF_CTRL_MSG_KEY_DEL, &P::key_del(id))?;
        self.keys.remove(id);
        self.slots.remove(id);
        Ok(())
    }

    // ------------------------------------------------------------ program
    fn send_program(&mut self, name: &str, image: &[u8]) -> Result<ProgInfo, DeviceError> {
        let meta = P::prog_begin(image, name).map_err(DeviceError::Other)?;
        self.checked(C::NANOBPF_CTRL_MSG_PROG_BEGIN, &meta)?;
        for (i, chunk) in image.chunks(C::NANOBPF_CTRL_CHUNK as usize).enumerate() {
            self.checked(C::NANOBPF_CTRL_MSG_PROG_CHUNK, &P::prog_chunk(i * C::NANOBPF_CTRL_CHUNK as usize, chunk))?;
        }
        let body = self.checked(C::NANOBPF_CTRL_MSG_PROG_COMMIT, &meta)?;
        P::parse_prog_info(&body).ok_or_else(|| DeviceError::Other(format!("PROG_COMMIT answer of {} bytes", body.len())))
    }

    /// Load and attach a program image (a .nbpf file's bytes); kept for replays. A refused program
    /// leaves the attached one in place (`Refused` with the verifier's reason).
    pub fn prog_load(&mut self, image: &[u8], name: &str) -> Result<ProgInfo, DeviceError> {
        if image.is_empty() || image.len() > C::NANOBPF_CTRL_MAX_IMAGE as usize {
            return Err(DeviceError::Other(format!("image of {} bytes: 1..{}", image.len(), C::NANOBPF_CTRL_MAX_IMAGE)));
        }
        if name.len() > C::NANOBPF_CTRL_NAME_LEN as usize {
            return Err(DeviceError::Other(format!("program name '{name}' longer than {} bytes", C::NANOBPF_CTRL_NAME_LEN)));
        }
        let info = self.in_session(|c| c.send_program(name, image))?;
        self.program = Some((name.to_string(), image.to_vec()));
        Ok(info)
    }

    /// The attached program; `Refused` NO_PROG when there is none.
    pub fn prog_info(&mut self) -> Result<ProgInfo, DeviceError> {
        let body = self.call(C::NANOBPF_CTRL_MSG_PROG_INFO, &[])?;
        P::parse_prog_info(&body).ok_or_else(|| DeviceError::Other(format!("PROG_INFO answer of {} bytes", body.len())))
    }

    // ------------------------------------------------------------ maps, stats
    /// A map value of the attached program; `None` when the key has none (NOENT).
    pub fn map_lookup(&mut self, name: &str, key: &[u8]) -> Result<Option<Vec<u8>>, DeviceError> {
        let req = P::map_req(name, key, &[], 0).map_err(DeviceError::Other)?;
        match self.call(C::NANOBPF_CTRL_MSG_MAP_LOOKUP, &req) {
            Err(e) if refused_status(&e) == Some(C::NANOBPF_CTRL_ST_NOENT) => Ok(None),
            r => r.map(Some),
        }
    }

    /// flags: Linux's BPF_ANY (0), BPF_NOEXIST, BPF_EXIST.
    pub fn map_update(&mut self, name: &str, key: &[u8], value: &[u8], flags: u64) -> Result<(), DeviceError> {
        let req = P::map_req(name, key, value, flags).map_err(DeviceError::Other)?;
        self.call(C::NANOBPF_CTRL_MSG_MAP_UPDATE, &req).map(|_| ())
    }

    /// The device's counters by name.
    pub fn stats(&mut self) -> Result<Vec<(String, u64)>, DeviceError> {
        self.call(C::NANOBPF_CTRL_MSG_STATS, &[]).map(|b| P::parse_stats(&b))
    }
}

#[cfg(test)]
mod tests {
    //! The client against a scripted device on an in-memory link: retransmission, answers that must not
    //! be believed, and the replay after a new epoch.
    use super::*;
    use std::collections::VecDeque;

    const KEY: [u8; 16] = [0x42; 16];

    /// A device that answers each request with what `answer` says (None: drops it).
    struct Fake {
        key: DeviceKey,
        sent: Vec<P::Frame>,
        inbox: VecDeque<Vec<u8>>,
        answer: Box<dyn FnMut(&P::Frame, &DeviceKey) -> Vec<Vec<u8>>>,
    }

    impl Transport for Fake {
        fn mac(&self) -> [u8; 6] {
            [2, 0, 0, 0, 0, 9]
        }
        fn send(&mut self, frame: &[u8]) -> io::Result<()> {
            let f = P::parse(frame, &self.key).unwrap().unwrap();
            let out = (self.answer)(&f, &self.key);
            self.inbox.extend(out);
            self.sent.push(f);
            Ok(())
        }
        fn recv(&mut self, _timeout: Duration) -> io::Result<Option<Vec<u8>>> {
            Ok(self.inbox.pop_front())
        }
    }

    fn answer(req: &P::Frame, key: &DeviceKey, status: u32, epoch: u32, body: &[u8]) -> Vec<u8> {
        let hdr = Header { status: status as u8, epoch, ..req.hdr };
        P::build_response(&req.src, &C::NANOBPF_CTRL_DEVICE_MAC, hdr, &req.nonce, body, key).unwrap()
    }

    fn hello_body() -> Vec<u8> {
        let mut b = vec![0u8; C::NANOBPF_HELLO_RESP_SIZE];
        P::put_u16(&mut b, C::NANOBPF_HELLO_RESP_VERSION_OFF, C::NANOBPF_CTRL_VERSION);
        b
    }

    fn fast() -> Retry {
        Retry { first: Duration::from_millis(1), max: Duration::from_millis(2), retries: 6 }
    }

    fn types(f: &Fake) -> Vec<u32> {
        f.sent.iter().map(|f| u32::from(f.hdr.type_)).collect()
    }

    #[test]
    fn replays_after_a_new_epoch_and_believes_only_its_answer() {
        let mut epoch = 5;
        let mut n = 0;
        let fake = Fake {
            key: DeviceKey::new(&KEY), sent: vec![], inbox: VecDeque::new(),
            answer: Box::new(move |req, key| {
                n += 1;
                if (5..=11).contains(&n) {
                    epoch = 6; // a device reset: this request and its retransmissions are lost
                    return vec![];
                }
                let t = u32::from(req.hdr.type_);
                if t == C::NANOBPF_CTRL_MSG_HELLO {
                    return vec![answer(req, key, 0, epoch, &hello_body())];
                }
                if req.hdr.epoch != epoch {
                    return vec![answer(req, key, C::NANOBPF_CTRL_ST_STALE_EPOCH, epoch, &[])];
                }
                let mut other_nonce = req.nonce;
                other_nonce[0] ^= 1;
                let hdr = Header { epoch, ..req.hdr };
                vec![answer(req, &DeviceKey::new(&[1; 16]), 0, epoch, &[0, 0, 0, 9]), // another key's
                     P::build_response(&req.src, &C::NANOBPF_CTRL_DEVICE_MAC, hdr, &other_nonce, &[0, 0, 0, 8], key).unwrap(),
                     answer(req, key, 0, epoch, &[0, 0, 0, 3])]
            }),
        };
        let mut c = Client::new(fake, DeviceKey::new(&KEY), fast());
        let a = KeyId::cid(crate::device::OPEN, &[1, 2, 3, 4]);
        let b = KeyId::cid(crate::device::SEAL, &[5, 6]);
        assert_eq!(c.key_add(&a, &[1; KEYS_SIZE]).unwrap(), 3);
        assert_eq!(c.key_add(&b, &[2; KEYS_SIZE]).unwrap(), 3);
        assert_eq!((c.counters().auth_fail, c.counters().unmatched), (3, 3)); // FLUSH and the two adds
        // the 6th request goes unanswered: a timeout, after every retransmission
        let e = c.key_update(&a, &[3; KEYS_SIZE]).unwrap_err();
        assert!(matches!(&e, DeviceError::Timeout(m) if m.contains("device key")), "{e}");
        assert_eq!(c.host_keys()[&a], [1; KEYS_SIZE], "a change enters the host state once acknowledged");
        // the next request replays everything first
        c.key_update(&a, &[3; KEYS_SIZE]).unwrap();
        let t = types(c.link());
        let tail: Vec<u32> = t[t.len() - 5..].to_vec();
        let mut keys_replayed = tail[2..4].to_vec();
        keys_replayed.sort();
        assert_eq!(&tail[..2], &[C::NANOBPF_CTRL_MSG_HELLO, C::NANOBPF_CTRL_MSG_KEY_FLUSH]);
        assert_eq!(keys_replayed, vec![C::NANOBPF_CTRL_MSG_KEY_ADD; 2]);
        assert_eq!(tail[4], C::NANOBPF_CTRL_MSG_KEY_UPDATE);
        assert_eq!((c.epoch(), c.resyncs()), (6, 2));
        assert_eq!((c.counters().retransmits, c.counters().timeouts), (6, 1));
        // the host table refuses what it knows cannot be right, without asking
        assert_eq!(refused_status(&c.key_add(&a, &[1; KEYS_SIZE]).unwrap_err()), Some(C::NANOBPF_CTRL_ST_EXIST));
        c.key_del(&b).unwrap();
        assert_eq!(refused_status(&c.key_del(&b).unwrap_err()), Some(C::NANOBPF_CTRL_ST_NOENT));
    }

    #[test]
    fn refusals_carry_the_devices_text() {
        let fake = Fake {
            key: DeviceKey::new(&KEY), sent: vec![], inbox: VecDeque::new(),
            answer: Box::new(|req, key| {
                if u32::from(req.hdr.type_) == C::NANOBPF_CTRL_MSG_HELLO {
                    return vec![answer(req, key, 0, 1, &hello_body())];
                }
                vec![answer(req, key, C::NANOBPF_CTRL_ST_INVALID, 1, b"key_phase 2")]
            }),
        };
        let mut c = Client::new(fake, DeviceKey::new(&KEY), fast());
        match c.key_add(&KeyId::cid(0, &[1]), &[0; KEYS_SIZE]) {
            Err(DeviceError::Refused { status: Some(s), message }) => {
                assert_eq!(u32::from(s), C::NANOBPF_CTRL_ST_INVALID);
                assert_eq!(message, "invalid: key_phase 2");
            }
            other => panic!("{other:?}"),
        }
        assert!(c.host_keys().is_empty());
    }
}
