//! Transfers over loopback without a device: IPv4 and IPv6, CID lengths 0/4/8/20, key updates forced
//! by both sides, the payload's SHA-256 checked.

mod common;
use common::{transfer, Side};

fn plain(cid_len: usize, key_update_every: u64) -> Side {
    Side { cid_len, key_update_every, ..Side::default() }
}

#[test]
fn plain_transfers() {
    for v6 in [false, true] {
        for cid in [0, 4, 8, 20] {
            let o = transfer(v6, plain(cid, 40), plain(cid, 55), 400_000);
            let c = &o.client;
            assert_eq!(c.error, None, "v6={v6} cid={cid}");
            assert_eq!((c.ok, c.got), (Some(true), 400_000), "v6={v6} cid={cid}");
            let (bytes, r) = &o.server;
            assert_eq!(*bytes, 400_000);
            assert!(!r.offloaded);
            let cr = c.report.as_ref().unwrap();
            // no device: nothing left in clear, nothing for the device
            for rep in [r, cr] {
                assert_eq!(rep.counters.get("tx_device") + rep.counters.get("unsealable"), 0, "{:?}", rep.counters);
                assert!(rep.counters.get("tx_software") > 0);
                // a key update at least (quinn starts the next one only 3 PTO after the peer
                // answered the last: these short transfers have room for one or two)
                assert!(rep.counters.get("key_generation") >= 1, "{:?}", rep.counters);
            }
        }
    }
}

#[test]
fn mixed_cid_lengths() {
    // a client with zero-length CIDs against a server with 20-byte ones, and the other way round
    for (s, c) in [(20, 0), (0, 8)] {
        let o = transfer(false, plain(s, 0), plain(c, 30), 200_000);
        assert_eq!(o.client.ok, Some(true), "{s}/{c}: {:?}", o.client.error);
    }
}

#[test]
fn key_updates_both_ways() {
    // long enough for several updates, started by each side
    let o = transfer(false, plain(8, 60), plain(8, 20), 32_000_000);
    assert_eq!(o.client.ok, Some(true), "{:?}", o.client.error);
    let (s, c) = (&o.server.1.counters, &o.client.report.as_ref().unwrap().counters);
    assert!(s.get("key_generation") >= 2 && c.get("key_generation") >= 2, "{:?} {:?}", s.0, c.0);
    assert!(s.get("quinn_updates_local") > 0 && c.get("quinn_updates_local") > 0, "{:?} {:?}", s.0, c.0);
}
