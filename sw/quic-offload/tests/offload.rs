//! The offload against the in-process fake device (src/fakedev.rs), which really seals and opens
//! with the key table values the offload gave it: a wrong key, phase or slot, a packet left in clear
//! that is not sealed, or a packet the device did not open trusted as opened, breaks the transfer or
//! the counts below.

mod common;
use common::{dev_count, dev_entries, transfer, Outcome, Side};

fn fake(cid_len: usize, key_update_every: u64) -> Side {
    Side { fake: true, cid_len, key_update_every, ..Side::default() }
}

fn check_ok(o: &Outcome, size: u64, what: &str) {
    assert_eq!(o.client.error, None, "{what}");
    assert_eq!((o.client.ok, o.client.got), (Some(true), size), "{what}");
    assert_eq!(o.server.0, size, "{what}");
}

/// Every 1-RTT packet after activation went through the device, both ways, at both ends.
fn check_offloaded(o: &Outcome, what: &str) {
    let s = &o.server.1;
    let c = o.client.report.as_ref().expect("client report");
    for (name, r, dev) in [("server", s, &o.server_dev), ("client", c, &o.client_dev)] {
        let k = &r.counters;
        let w = format!("{what} {name}: {:?}", k.0);
        assert!(r.offloaded, "{w}");
        assert_eq!(k.get("activated"), 1, "{w}");
        assert!(k.get("tx_device") > 20 || name == "client", "{w}");
        assert!(k.get("rx_device") > 0, "{w}");
        assert_eq!(k.get("unsealable"), 0, "{w}");
        assert_eq!(k.get("rx_phase_mismatch"), 0, "{w}");
        assert_eq!(k.get("rx_unknown"), 0, "{w}");
        // after activation quinn protected no 1-RTT packet itself, except on the client those
        // coalesced behind its last Handshake packets (before the handshake is confirmed)
        let limit = if name == "server" { 0 } else { 3 };
        assert!(k.get("tx_1rtt_software_active") <= limit, "{w}");
        // and opened none itself, except the first packet to each CID of ours the peer moved to
        // (that CID's OPEN entry is added once quinn has opened one packet to it)
        assert!(k.get("rx_software_active") <= k.get("cid_open_added"), "{w}");
        // the device did what the offload counted: every packet sent to be sealed was sealed,
        // every packet delivered as opened was opened by it
        assert_eq!(dev_count(dev, "sealed"), k.get("tx_device"), "{w}");
        assert_eq!(dev_count(dev, "opened"), k.get("rx_device"), "{w}");
        // (no tag mismatch either: on loopback nothing arrives late, so a packet the device could
        // not open means its entry held the wrong keys for the packet's phase)
        for drop in ["drop_no_seal_keys", "drop_pn_reused", "drop_no_keys", "drop_not_sealable", "drop_tag_mismatch"] {
            assert_eq!(dev_count(dev, drop), 0, "{w}: {drop}");
        }
        // keys followed quinn's updates (at least one started here), and left at the end
        assert!(k.get("key_generation") >= 2, "{w}");
        assert!(k.get("key_updates_local") > 0, "{w}");
        assert_eq!(k.get("key_add"), k.get("key_del"), "{w}");
        assert_eq!(dev_entries(dev), 0, "{w}");
    }
}

#[test]
fn offloaded_transfers_with_key_updates() {
    let mut peer_updates = 0;
    for (v6, cid) in [(false, 8), (false, 0), (true, 20)] {
        // long enough for several updates: quinn starts the next one only after discarding the
        // previous keys, 3 PTO (about 100 ms here) after the peer answered in the new phase
        let size = 32_000_000;
        let o = transfer(v6, fake(cid, 60), fake(cid, 20), size);
        let what = format!("v6={v6} cid={cid}");
        check_ok(&o, size, &what);
        check_offloaded(&o, &what);
        peer_updates += o.server.1.counters.get("key_updates_peer") + o.client.report.as_ref().unwrap().counters.get("key_updates_peer");
    }
    // updates the other side started were followed (by the device too: the transfers completed)
    assert!(peer_updates > 0);
}

#[test]
fn offloaded_mixed_cid_lengths() {
    // zero-length CIDs on one side: that side's OPEN entry and the other's SEAL entry by address
    for (s, c) in [(20, 0), (0, 20)] {
        let size = 24_000_000;
        let o = transfer(false, fake(s, 50), fake(c, 20), size);
        let what = format!("server cid {s}, client cid {c}");
        check_ok(&o, size, &what);
        check_offloaded(&o, &what);
    }
}

#[test]
fn one_side_offloaded() {
    // the device opens what a plain quinn sealed, and seals what it opens
    let size = 300_000;
    let o = transfer(false, fake(8, 50), Side { cid_len: 8, key_update_every: 35, ..Side::default() }, size);
    check_ok(&o, size, "server offloaded");
    let k = &o.server.1.counters;
    assert!(k.get("tx_device") > 20 && k.get("rx_device") > 0 && k.get("unsealable") == 0, "{:?}", k.0);
    assert_eq!(dev_count(&o.server_dev, "sealed"), k.get("tx_device"));
}

#[test]
fn refused_key_update_falls_back() {
    let size = 400_000;
    let srv = Side { refuse_key_update: true, ..fake(8, 40) };
    let o = transfer(false, srv, fake(8, 0), size);
    check_ok(&o, size, "refused KEY_UPDATE");
    let k = &o.server.1.counters;
    assert_eq!(k.get("key_update_failed"), 1, "{:?}", k.0);
    assert!(o.server.1.offloaded);
    // the entries were removed at the fallback, quinn protected the rest itself
    assert_eq!(k.get("key_add"), k.get("key_del"), "{:?}", k.0);
    assert_eq!(dev_entries(&o.server_dev), 0);
    assert!(k.get("tx_1rtt_software") > k.get("tx_device"), "{:?}", k.0);
    assert!(k.get("rx_software") > 0);
    // nothing left in clear was sent: what the device did not seal was dropped and counted
    assert_eq!(dev_count(&o.server_dev, "sealed"), k.get("tx_device"));
}

#[test]
fn forged_opened_datagrams_are_dropped() {
    // the client's data path marks every 4th short-header datagram "opened" although no device
    // opened it (and the client has no entries): they must be dropped, not handed to quinn as
    // plaintext (ciphertext taken as frames would break the connection)
    let size = 300_000;
    let cli = Side { cid_len: 8, forge_opened_every: 4, ..Side::default() };
    let o = transfer(false, fake(8, 0), cli, size);
    check_ok(&o, size, "forged opened");
    let c = o.client.report.as_ref().unwrap();
    let forged = dev_count(&o.client_dev, "forged_opened");
    assert!(forged > 10, "forged {forged}");
    assert_eq!(c.counters.get("rx_unknown"), forged, "{:?}", c.counters.0);
    assert_eq!(c.counters.get("rx_device"), 0);
}

#[test]
fn opened_on_an_offloaded_endpoint_without_entries_for_it() {
    // both sides offloaded, but the client's data path also marks datagrams of its own connection
    // that its device did not open: before activation the connection has no entries, so the
    // long-header and early short-header ones are dropped; the transfer still completes
    let size = 200_000;
    let cli = Side { forge_opened_every: 3, ..fake(8, 0) };
    let o = transfer(false, fake(8, 0), cli, size);
    check_ok(&o, size, "forged on an offloaded endpoint");
}
