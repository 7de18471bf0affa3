//! An in-process stand-in for the DPU, for the tests: a [`Control`] and a [`Datapath`] over a UDP
//! socket sharing one key table, that really seal and open QUIC 1-RTT packets with the 80-byte values
//! they were given (AES-128-GCM and header protection per RFC 9001, with ring), with the device's
//! rules: the seal entry by the packet's destination CID (or the address when the CID length is 0),
//! its key phase bit choosing the current or the second slot, packet numbers that only go up; open
//! entries looked up at each installed CID length, longest first, then by address; a packet whose tag
//! does not verify is dropped, one without an entry passes as it is. Nothing here trusts the host:
//! what it opens it opened itself.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ring::aead::{self, quic, Aad, LessSafeKey, Nonce, UnboundKey};

use crate::counters::Counters;
use crate::defs::ebpf as E;
use crate::device::{Control, Datapath, DeviceError, KeyId, Received, KEYS_SIZE, OPEN, SEAL};
use crate::keys::{parse_value, PacketKeys};
use crate::plain::PlainUdp;

pub struct Entry {
    pub keys: [u8; KEYS_SIZE],
    /// Largest packet number sealed or opened with this entry.
    pub pn: Option<u64>,
    /// Open entries: the key phase bit of the current keys the last opened current-phase packet had,
    /// and the smallest number opened in it (the device's `phase`/`phase_pn`): PREV keys open only
    /// packets below it, or any before the first packet of a new current phase.
    pub phase: Option<(u8, u64)>,
}

/// The device's state: key table and counters (sealed, opened, drop_<reason>, key_add, ...).
#[derive(Default)]
pub struct Table {
    pub entries: HashMap<KeyId, Entry>,
    pub counters: Counters,
    /// Refuse every KEY_UPDATE (the test of the fallback).
    pub refuse_key_update: bool,
    /// Mark every n-th short-header datagram that has no entry (or a bad tag) as opened: a lying
    /// data path, whose "opened" datagrams the offload must not trust.
    pub forge_opened_every: u64,
    forged_seen: u64,
    pub ports: Vec<u16>,
}

pub type Shared = Arc<Mutex<Table>>;

fn table(t: &Shared) -> std::sync::MutexGuard<'_, Table> {
    t.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct FakeControl(pub Shared);
pub struct FakeDatapath {
    sock: PlainUdp,
    t: Shared,
}

/// A fake device on a UDP socket bound to `addr`.
pub fn fake_device(addr: SocketAddr) -> io::Result<(FakeControl, FakeDatapath, Shared)> {
    let t: Shared = Arc::new(Mutex::new(Table::default()));
    let sock = PlainUdp::bind(addr)?;
    Ok((FakeControl(t.clone()), FakeDatapath { sock, t: t.clone() }, t))
}

fn invalid(m: &str) -> DeviceError {
    DeviceError::Refused { status: Some(crate::defs::ctrl::NANOBPF_CTRL_ST_INVALID as u8), message: m.into() }
}

fn check_value(id: &KeyId, v: &[u8; KEYS_SIZE]) -> Result<(), DeviceError> {
    let (phase, flags, cid_len, _, _) = parse_value(v);
    if phase > 1 {
        return Err(invalid("key_phase"));
    }
    if cid_len != id.cid_len {
        return Err(invalid("cid_len"));
    }
    let (next, prev) = (E::NANOBPF_QUIC_KEY_NEXT as u8, E::NANOBPF_QUIC_KEY_PREV as u8);
    if flags != 0 && flags != next && flags != prev {
        return Err(invalid("flags"));
    }
    if flags == prev && id.dir == SEAL {
        return Err(invalid("PREV in a seal entry"));
    }
    Ok(())
}

impl Control for FakeControl {
    fn prepare(&mut self, _program: Option<&Path>, local_port: u16) -> Result<(), DeviceError> {
        table(&self.0).ports.push(local_port);
        Ok(())
    }
    fn key_add(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<(), DeviceError> {
        check_value(id, keys)?;
        let mut t = table(&self.0);
        if t.entries.contains_key(id) {
            return Err(DeviceError::Refused { status: Some(crate::defs::ctrl::NANOBPF_CTRL_ST_EXIST as u8), message: format!("{id:?} exists") });
        }
        t.entries.insert(*id, Entry { keys: *keys, pn: None, phase: None });
        t.counters.add("key_add", 1);
        Ok(())
    }
    fn key_update(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<(), DeviceError> {
        check_value(id, keys)?;
        let mut t = table(&self.0);
        if t.refuse_key_update {
            t.counters.add("key_update_refused", 1);
            return Err(invalid("refused by the test"));
        }
        let Some(e) = t.entries.get_mut(id) else {
            return Err(DeviceError::Refused { status: Some(crate::defs::ctrl::NANOBPF_CTRL_ST_NOENT as u8), message: format!("{id:?}") });
        };
        e.keys = *keys; // the packet-number state stays
        t.counters.add("key_update", 1);
        Ok(())
    }
    fn key_del(&mut self, id: &KeyId) -> Result<(), DeviceError> {
        let mut t = table(&self.0);
        if t.entries.remove(id).is_none() {
            return Err(DeviceError::Refused { status: Some(crate::defs::ctrl::NANOBPF_CTRL_ST_NOENT as u8), message: format!("{id:?}") });
        }
        t.counters.add("key_del", 1);
        Ok(())
    }
    fn stats(&mut self) -> Result<Vec<(String, u64)>, DeviceError> {
        let t = table(&self.0);
        let mut v: Vec<(String, u64)> = t.counters.0.iter().map(|(k, v)| (k.clone(), *v)).collect();
        v.push(("keys".into(), t.entries.len() as u64));
        Ok(v)
    }
}

/// RFC 9000 A.3.
pub fn decode_pn(truncated: u64, bits: u32, expected: u64) -> u64 {
    let win = 1u64 << bits;
    let hwin = win / 2;
    let mask = win - 1;
    let cand = (expected & !mask) | truncated;
    if cand + hwin <= expected && cand < (1u64 << 62) - win {
        cand + win
    } else if cand > expected + hwin && cand >= win {
        cand - win
    } else {
        cand
    }
}

fn nonce(iv: &[u8; 12], pn: u64) -> Nonce {
    let mut n = *iv;
    for (i, b) in pn.to_be_bytes().iter().enumerate() {
        n[4 + i] ^= b;
    }
    Nonce::assume_unique_for_key(n)
}

fn aead_key(k: &PacketKeys) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&aead::AES_128_GCM, &k.key).expect("16-byte key"))
}

fn hp_mask(hp: &[u8; 16], sample: &[u8]) -> Option<[u8; 5]> {
    quic::HeaderProtectionKey::new(&quic::AES_128, hp).ok()?.new_mask(sample).ok()
}

/// The slot the packet's key phase bit picks (None: the entry has no keys for that phase).
fn slot(v: &[u8; KEYS_SIZE], bit: u8) -> Option<PacketKeys> {
    let (phase, flags, _, cur, second) = parse_value(v);
    if bit == phase {
        Some(cur)
    } else if flags != 0 {
        Some(second)
    } else {
        None
    }
}

impl Table {
    fn drop(&mut self, why: &str) -> Option<Vec<u8>> {
        self.counters.add(&format!("drop_{why}"), 1);
        None
    }

    /// Seal a host packet (header and payload in clear, no tag), or drop it.
    pub fn seal(&mut self, dest: SocketAddr, local_port: u16, p: &[u8], cid_len: usize) -> Option<Vec<u8>> {
        if p.is_empty() || p[0] & 0x80 != 0 || p[0] & 0x40 == 0 || p.len() < 1 + cid_len + 4 {
            return self.drop("not_sealable");
        }
        let id = if cid_len > 0 { KeyId::cid(SEAL, &p[1..1 + cid_len]) } else { KeyId::addr(SEAL, dest, local_port) };
        let Some(e) = self.entries.get(&id) else { return self.drop("no_seal_keys") };
        let pn_off = 1 + cid_len;
        let pn_len = (p[0] & 3) as usize + 1;
        let trunc = p[pn_off..pn_off + pn_len].iter().fold(0u64, |a, &b| a << 8 | b as u64);
        let pn = decode_pn(trunc, 8 * pn_len as u32, e.pn.map_or(0, |x| x + 1));
        if e.pn.is_some_and(|l| pn <= l) {
            return self.drop("pn_reused");
        }
        let Some(k) = slot(&e.keys, (p[0] >> 2) & 1) else { return self.drop("no_keys") };
        let hdr = pn_off + pn_len;
        let mut out = p.to_vec();
        let (h, body) = out.split_at_mut(hdr);
        let tag = aead_key(&k).seal_in_place_separate_tag(nonce(&k.iv, pn), Aad::from(&*h), body).ok()?;
        out.extend_from_slice(tag.as_ref());
        if out.len() < pn_off + 4 + 16 {
            return self.drop("not_sealable");
        }
        let Some(mask) = hp_mask(&k.hp, &out[pn_off + 4..pn_off + 20]) else { return self.drop("not_sealable") };
        out[0] ^= mask[0] & 0x1f;
        for i in 0..pn_len {
            out[pn_off + i] ^= mask[1 + i];
        }
        if let Some(e) = self.entries.get_mut(&id) {
            e.pn = Some(pn);
        }
        self.counters.add("sealed", 1);
        Some(out)
    }

    /// Open a packet from the network: None when no entry is for it (it passes as it is),
    /// Some(None) when dropped, Some(Some(plain)) when opened (header unprotected, tag removed).
    pub fn open(&mut self, peer: SocketAddr, local_port: u16, d: &[u8]) -> Option<Option<Vec<u8>>> {
        if d.is_empty() || d[0] & 0x80 != 0 {
            return None;
        }
        let mut lens: Vec<u8> = self.entries.keys().filter(|k| k.dir == OPEN).map(|k| k.cid_len).collect();
        lens.sort_unstable_by(|a, b| b.cmp(a));
        lens.dedup();
        let mut found = None;
        for n in lens {
            let id = if n > 0 {
                if d.len() <= n as usize {
                    continue;
                }
                KeyId::cid(OPEN, &d[1..1 + n as usize])
            } else {
                KeyId::addr(OPEN, peer, local_port)
            };
            if self.entries.contains_key(&id) {
                found = Some(id);
                break;
            }
        }
        let id = found?;
        Some(self.open_with(&id, d))
    }

    fn open_with(&mut self, id: &KeyId, d: &[u8]) -> Option<Vec<u8>> {
        let e = self.entries.get(id)?;
        let pn_off = 1 + id.cid_len as usize;
        if d.len() < pn_off + 4 + 16 + 1 {
            return self.drop("quic_truncated");
        }
        let mut out = d.to_vec();
        let hp = parse_value(&e.keys).3.hp;
        let Some(mask) = hp_mask(&hp, &d[pn_off + 4..pn_off + 20]) else { return self.drop("quic_truncated") };
        out[0] ^= mask[0] & 0x1f;
        let pn_len = (out[0] & 3) as usize + 1;
        for i in 0..pn_len {
            out[pn_off + i] ^= mask[1 + i];
        }
        let trunc = out[pn_off..pn_off + pn_len].iter().fold(0u64, |a, &b| a << 8 | b as u64);
        let pn = decode_pn(trunc, 8 * pn_len as u32, e.pn.map_or(0, |x| x + 1));
        let bit = (out[0] >> 2) & 1;
        let (key_phase, flags, ..) = parse_value(&e.keys);
        let prev_ok = e.phase.is_none_or(|(p, first)| p != key_phase || pn < first);
        if bit != key_phase && flags == E::NANOBPF_QUIC_KEY_PREV as u8 && !prev_ok {
            return self.drop("no_keys");
        }
        let Some(k) = slot(&e.keys, bit) else { return self.drop("no_keys") };
        let hdr = pn_off + pn_len;
        let (h, body) = out.split_at_mut(hdr);
        let plain_len = match aead_key(&k).open_in_place(nonce(&k.iv, pn), Aad::from(&*h), body) {
            Ok(p) => p.len(),
            Err(_) => return self.drop("tag_mismatch"),
        };
        out.truncate(hdr + plain_len);
        if let Some(e) = self.entries.get_mut(id) {
            e.pn = Some(e.pn.map_or(pn, |x| x.max(pn)));
            if bit == key_phase {
                e.phase = match e.phase {
                    Some((p, first)) if p == key_phase => Some((p, first.min(pn))),
                    _ => Some((key_phase, pn)),
                };
            }
        }
        self.counters.add("opened", 1);
        Some(out)
    }
}

impl Datapath for FakeDatapath {
    fn local_addr(&self) -> SocketAddr {
        self.sock.local_addr()
    }
    fn fds(&self) -> Vec<RawFd> {
        self.sock.fds()
    }
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        let port = self.sock.local_addr().port();
        loop {
            let Some(r) = self.sock.recv(buf)? else { return Ok(None) };
            let mut t = table(&self.t);
            match t.open(r.peer, port, &buf[..r.len]) {
                Some(Some(plain)) => {
                    buf[..plain.len()].copy_from_slice(&plain);
                    return Ok(Some(Received { len: plain.len(), peer: r.peer, opened: true }));
                }
                Some(None) => {
                    if t.forge_opened_every > 0 {
                        return Ok(Some(forge(&mut t, r)));
                    }
                    continue; // dropped by the device
                }
                None => {
                    if t.forge_opened_every > 0 && r.len > 0 && buf[0] & 0x80 == 0 {
                        return Ok(Some(forge(&mut t, r)));
                    }
                    return Ok(Some(r));
                }
            }
        }
    }
    fn send(&mut self, dest: SocketAddr, data: &[u8]) -> io::Result<()> {
        table(&self.t).counters.add("forwarded", 1);
        self.sock.send(dest, data)
    }
    fn send_seal(&mut self, dest: SocketAddr, packet: &[u8], cid_len: u8) -> io::Result<()> {
        let port = self.sock.local_addr().port();
        let sealed = table(&self.t).seal(dest, port, packet, cid_len as usize);
        match sealed {
            Some(s) => self.sock.send(dest, &s),
            None => Ok(()), // dropped and counted by the device, never sent in clear
        }
    }
}

fn forge(t: &mut Table, r: Received) -> Received {
    t.forged_seen += 1;
    if t.forged_seen % t.forge_opened_every == 0 {
        t.counters.add("forged_opened", 1);
        return Received { opened: true, ..r };
    }
    r
}
