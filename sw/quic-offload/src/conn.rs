//! The device's side of one connection: its key table entries and how they follow quinn
//! (docs/offload.md "What the offload does"; the aioquic module's `_Conn`).
//!
//! - Activation (quinn reports the connection established): an OPEN entry for our CID the peer sends
//!   to (the peer's keys) and a SEAL entry for the peer's CID (ours), current generation + NEXT.
//! - Key updates: SEAL entries always hold current + NEXT, so our own update needs no round trip
//!   before its first packet. OPEN entries: after our own update the previous generation (PREV: the
//!   peer sends with it until it sees our new phase), from the peer's first packet of the new phase
//!   on, NEXT; after the peer's update, NEXT at once (quinn may update again soon, and a next-phase
//!   packet the device cannot open would be lost for good).
//! - A short-header packet to seal whose DCID has no SEAL entry gets one first; a packet quinn opened
//!   itself whose DCID has no OPEN entry gets one.
//! - Any refused or unanswered request: the connection goes back to quinn's own protection for good
//!   and its entries are removed.

use std::net::SocketAddr;

use crate::counters::Counters;
use crate::device::{Control, DeviceError, KeyId, KEYS_SIZE, OPEN, SEAL};
use crate::keys::{keys_value, Generations, Second};
use crate::offload::{lock, State};

pub struct OffloadConn {
    pub st: State,
    /// Keys on the device, 1-RTT packets through it.
    pub active: bool,
    /// Was active at some point.
    pub offloaded: bool,
    /// The device could not follow: software for good.
    pub failed: bool,
    /// Our CID (the SCID of the long-header packets we sent) and the peer's (the SCID of those we
    /// received); empty: zero-length, the entry is named by address.
    pub local_cid: Option<Vec<u8>>,
    pub peer_cid: Option<Vec<u8>>,
    open_ids: Vec<KeyId>,
    seal_ids: Vec<KeyId>,
    gen: u64,
    prev_kept: bool,
    ours: Option<Generations>,
    theirs: Option<Generations>,
    peer: SocketAddr,
    local_port: u16,
}

impl OffloadConn {
    pub fn new(st: State, peer: SocketAddr, local_port: u16) -> OffloadConn {
        OffloadConn {
            st, active: false, offloaded: false, failed: false, local_cid: None, peer_cid: None,
            open_ids: Vec::new(), seal_ids: Vec::new(), gen: 0, prev_kept: false, ours: None, theirs: None,
            peer, local_port,
        }
    }

    pub fn peer_cid_len(&self) -> usize {
        self.peer_cid.as_ref().map_or(0, |c| c.len())
    }

    pub fn has_entries(&self) -> bool {
        !self.open_ids.is_empty() || !self.seal_ids.is_empty()
    }

    fn key_id(&self, dir: u8, cid: &[u8]) -> KeyId {
        if cid.is_empty() { KeyId::addr(dir, self.peer, self.local_port) } else { KeyId::cid(dir, cid) }
    }

    fn open_value(&mut self, cid_len: usize) -> [u8; KEYS_SIZE] {
        let second = if self.prev_kept { Second::Prev } else { Second::Next };
        let g = self.theirs.as_mut().expect("secrets known once active");
        keys_value(g, self.gen, second, cid_len as u8)
    }

    fn seal_value(&mut self, cid_len: usize) -> [u8; KEYS_SIZE] {
        let g = self.ours.as_mut().expect("secrets known once active");
        keys_value(g, self.gen, Second::Next, cid_len as u8)
    }

    /// Tell the key wrappers what the device holds now.
    fn publish(&self) {
        let mut s = lock(&self.st);
        s.active = self.active;
        if self.active {
            s.seal_gen = Some(self.gen);
            let second = if self.prev_kept { self.gen.checked_sub(1) } else { Some(self.gen + 1) };
            if s.open_states.back() != Some(&(self.gen, second)) {
                s.open_states.push_back((self.gen, second));
            }
            // the state before the last change still matters for datagrams already opened and
            // waiting in the socket; older ones do not
            while s.open_states.len() > 2 {
                s.open_states.pop_front();
            }
        } else {
            s.seal_gen = None;
            s.open_states.clear();
        }
    }

    /// Install the connection's keys (quinn reported the connection established).
    pub fn activate(&mut self, ctl: &mut dyn Control, c: &mut Counters) {
        if self.active || self.failed {
            return;
        }
        let (mine, peers, gen, local_len) = {
            let mut s = lock(&self.st);
            s.updates.clear();
            s.sw_dcids.clear();
            let (cs, ss) = (s.client_secret, s.server_secret);
            let (mine, peers) = if s.is_server { (ss, cs) } else { (cs, ss) };
            (mine, peers, s.gen, s.local_cid_len)
        };
        let (Some(mine), Some(peers)) = (mine, peers) else {
            return self.fail(ctl, c, "activate_failed", DeviceError::Other("the 1-RTT traffic secrets were not logged".into()));
        };
        let local = match (&self.local_cid, local_len) {
            (_, 0) => Vec::new(),
            (Some(l), n) if l.len() == n => l.clone(),
            _ => return self.fail(ctl, c, "activate_failed", DeviceError::Other("our connection ID is not known".into())),
        };
        let Some(peer) = self.peer_cid.clone() else {
            return self.fail(ctl, c, "activate_failed", DeviceError::Other("the peer's connection ID is not known".into()));
        };
        self.ours = Some(Generations::new(mine));
        self.theirs = Some(Generations::new(peers));
        self.gen = gen;
        self.prev_kept = false;
        let open = self.key_id(OPEN, &local);
        let v = self.open_value(local.len());
        if let Err(e) = self.add(ctl, c, open, &v, true) {
            return self.fail(ctl, c, "activate_failed", e);
        }
        let seal = self.key_id(SEAL, &peer);
        let v = self.seal_value(peer.len());
        if let Err(e) = self.add(ctl, c, seal, &v, false) {
            return self.fail(ctl, c, "activate_failed", e);
        }
        self.active = true;
        self.offloaded = true;
        c.add("activated", 1);
        self.publish();
    }

    fn add(&mut self, ctl: &mut dyn Control, c: &mut Counters, id: KeyId, v: &[u8; KEYS_SIZE], open: bool) -> Result<(), DeviceError> {
        ctl.key_add(&id, v)?;
        c.add("key_add", 1);
        if open { self.open_ids.push(id) } else { self.seal_ids.push(id) }
        Ok(())
    }

    /// The device could not follow: quinn's own protection from now on, the entries removed.
    pub fn fail(&mut self, ctl: &mut dyn Control, c: &mut Counters, why: &'static str, err: DeviceError) {
        self.failed = true;
        c.add(why, 1);
        eprintln!("nanobpf-quinn: offload of a connection stopped ({why}: {err}); quinn protects it");
        self.remove(ctl, c);
    }

    /// Every entry of this connection off the device.
    pub fn remove(&mut self, ctl: &mut dyn Control, c: &mut Counters) {
        for id in self.open_ids.drain(..).chain(self.seal_ids.drain(..)) {
            match ctl.key_del(&id) {
                Ok(()) => c.add("key_del", 1),
                Err(e) => {
                    c.add("key_del_failed", 1);
                    eprintln!("nanobpf-quinn: KEY_DEL {id:?}: {e}");
                }
            }
        }
        self.active = false;
        self.publish();
    }

    /// Make the device follow what quinn did since the last call: key updates, the peer's first
    /// packet of a new phase, CIDs the peer started sending to.
    pub fn sync(&mut self, ctl: &mut dyn Control, c: &mut Counters) {
        let (updates, seen, dcids, gen) = {
            let mut s = lock(&self.st);
            let u = std::mem::take(&mut s.updates);
            let d = std::mem::take(&mut s.sw_dcids);
            (u, s.current_seen, d, s.gen)
        };
        if !self.active {
            return;
        }
        if let Some(&remote) = updates.last() {
            // quinn moves both directions at once; with one update per step (quinn refuses a
            // second before the first is done) the last one says who started it.
            self.gen = gen;
            self.prev_kept = !remote;
            if let Err(e) = self.update_entries(ctl, c, true) {
                return self.fail(ctl, c, "key_update_failed", e);
            }
            c.add(if remote { "key_updates_peer" } else { "key_updates_local" }, 1);
        }
        if self.prev_kept && seen && updates.is_empty() {
            // the peer sends in the new phase: PREV gives way to NEXT
            self.prev_kept = false;
            if let Err(e) = self.update_entries(ctl, c, false) {
                return self.fail(ctl, c, "key_update_failed", e);
            }
        }
        for d in dcids {
            let id = KeyId::cid(OPEN, &d);
            if !self.open_ids.contains(&id) {
                let v = self.open_value(d.len());
                if let Err(e) = self.add(ctl, c, id, &v, true) {
                    return self.fail(ctl, c, "cid_update_failed", e);
                }
                c.add("cid_open_added", 1);
            }
        }
        self.publish();
    }

    fn update_entries(&mut self, ctl: &mut dyn Control, c: &mut Counters, seal: bool) -> Result<(), DeviceError> {
        for id in self.open_ids.clone() {
            let v = self.open_value(id.cid_len as usize);
            ctl.key_update(&id, &v)?;
            c.add("key_update", 1);
        }
        if seal {
            for id in self.seal_ids.clone() {
                let v = self.seal_value(id.cid_len as usize);
                ctl.key_update(&id, &v)?;
                c.add("key_update", 1);
            }
        }
        Ok(())
    }

    /// A SEAL entry for the DCID of a packet about to be sealed (quinn may move to another of the
    /// peer's CIDs). false: the device could not add it and the connection fell back.
    pub fn seal_for(&mut self, ctl: &mut dyn Control, c: &mut Counters, dcid: &[u8]) -> bool {
        let id = self.key_id(SEAL, dcid);
        if self.seal_ids.contains(&id) {
            return true;
        }
        let v = self.seal_value(dcid.len());
        match self.add(ctl, c, id, &v, false) {
            Ok(()) => {
                c.add("cid_seal_added", 1);
                true
            }
            Err(e) => {
                self.fail(ctl, c, "cid_update_failed", e);
                false
            }
        }
    }
}
