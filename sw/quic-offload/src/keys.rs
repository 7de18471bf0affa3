//! QUIC v1 packet protection keys (RFC 9001 5.1, 6.1) for TLS_AES_128_GCM_SHA256, and the key table
//! value the device takes (`struct nanobpf_quic_keys`, hw/defs/ebpf.toml).
//!
//! The offload derives the keys itself from the TLS traffic secrets it captured (rustls gives quinn
//! opaque key objects), so the device's entries hold exactly what rustls derived for quinn.

use ring::hkdf;

use crate::defs::ebpf as E;
use crate::device::KEYS_SIZE;

pub const KEY_LEN: usize = 16;
pub const IV_LEN: usize = 12;
pub const HP_LEN: usize = 16;
pub const SECRET_LEN: usize = 32;
pub const TAG_LEN: usize = E::NANOBPF_AEAD_TAG_LEN as usize;

/// A traffic secret of TLS_AES_128_GCM_SHA256 (SHA-256: 32 bytes).
pub type Secret = [u8; SECRET_LEN];

struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

/// TLS 1.3 HKDF-Expand-Label (RFC 8446 7.1) with SHA-256 and an empty context.
pub fn expand_label(secret: &[u8], label: &str, out: &mut [u8]) {
    let full = [b"tls13 ".as_slice(), label.as_bytes()].concat();
    let len = (out.len() as u16).to_be_bytes();
    let info: [&[u8]; 5] = [&len, &[full.len() as u8], &full, &[0u8], &[]];
    let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, secret);
    // The lengths here are fixed (16, 12, 32 bytes), far below HKDF's 255 * 32: cannot fail.
    prk.expand(&info, Len(out.len()))
        .and_then(|okm| okm.fill(out))
        .expect("HKDF-Expand of at most 32 bytes");
}

/// The secret of the next key phase (RFC 9001 6.1): HKDF-Expand-Label(secret, "quic ku", "", 32).
pub fn next_secret(secret: &Secret) -> Secret {
    let mut out = [0u8; SECRET_LEN];
    expand_label(secret, "quic ku", &mut out);
    out
}

/// The AES-128-GCM packet protection keys of one direction and key phase.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PacketKeys {
    pub key: [u8; KEY_LEN],
    pub iv: [u8; IV_LEN],
    pub hp: [u8; HP_LEN],
}

impl PacketKeys {
    /// "quic key", "quic iv" and "quic hp" of a traffic secret (RFC 9001 5.1).
    pub fn from_secret(secret: &[u8]) -> PacketKeys {
        let mut k = PacketKeys { key: [0; KEY_LEN], iv: [0; IV_LEN], hp: [0; HP_LEN] };
        expand_label(secret, "quic key", &mut k.key);
        expand_label(secret, "quic iv", &mut k.iv);
        expand_label(secret, "quic hp", &mut k.hp);
        k
    }
}

/// The 1-RTT secrets of one direction of a connection, by generation: generation g is the first
/// secret updated g times, used with key phase g % 2; every generation keeps generation 0's header
/// protection key (RFC 9001 6.1: a key update does not change it).
#[derive(Clone)]
pub struct Generations {
    first: Secret,
    hp: [u8; HP_LEN],
    cache: Vec<Secret>,
}

impl Generations {
    pub fn new(first: Secret) -> Generations {
        let hp = PacketKeys::from_secret(&first).hp;
        Generations { first, hp, cache: vec![first] }
    }
    pub fn secret(&mut self, gen: u64) -> Secret {
        while self.cache.len() as u64 <= gen {
            let last = *self.cache.last().unwrap_or(&self.first);
            self.cache.push(next_secret(&last));
        }
        self.cache[gen as usize]
    }
    pub fn keys(&mut self, gen: u64) -> PacketKeys {
        let mut k = PacketKeys::from_secret(&self.secret(gen));
        k.hp = self.hp;
        k
    }
}

/// What the second key slot of an entry holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Second {
    None,
    /// The next phase's keys (`NANOBPF_QUIC_KEY_NEXT`).
    Next,
    /// The previous phase's keys (`NANOBPF_QUIC_KEY_PREV`, open entries only).
    Prev,
}

/// `struct nanobpf_quic_keys`: key phase `gen % 2`, the keys of generation `gen` as current and,
/// in the second slot, generation gen+1 (Next) or gen-1 (Prev).
pub fn keys_value(gens: &mut Generations, gen: u64, second: Second, cid_len: u8) -> [u8; KEYS_SIZE] {
    let cur = gens.keys(gen);
    let other = match second {
        Second::None => None,
        Second::Next => Some((gens.keys(gen + 1), E::NANOBPF_QUIC_KEY_NEXT as u8)),
        Second::Prev if gen > 0 => Some((gens.keys(gen - 1), E::NANOBPF_QUIC_KEY_PREV as u8)),
        Second::Prev => None,
    };
    value(&cur, other.as_ref().map(|(k, f)| (k, *f)), (gen & 1) as u8, cid_len)
}

/// The raw value: `cur` in the first slot, `second` (keys, NEXT or PREV flag) in the second.
pub fn value(cur: &PacketKeys, second: Option<(&PacketKeys, u8)>, phase: u8, cid_len: u8) -> [u8; KEYS_SIZE] {
    let mut v = [0u8; KEYS_SIZE];
    v[E::NANOBPF_QUIC_KEYS_KEY_PHASE_OFF] = phase & 1;
    v[E::NANOBPF_QUIC_KEYS_CID_LEN_OFF] = cid_len;
    let k = E::NANOBPF_QUIC_KEYS_KEY_OFF;
    let iv = E::NANOBPF_QUIC_KEYS_IV_OFF;
    let hp = E::NANOBPF_QUIC_KEYS_HP_OFF;
    v[k..k + KEY_LEN].copy_from_slice(&cur.key);
    v[iv..iv + IV_LEN].copy_from_slice(&cur.iv);
    v[hp..hp + HP_LEN].copy_from_slice(&cur.hp);
    if let Some((s, flag)) = second {
        v[E::NANOBPF_QUIC_KEYS_FLAGS_OFF] = flag;
        v[k + KEY_LEN..k + 2 * KEY_LEN].copy_from_slice(&s.key);
        v[iv + IV_LEN..iv + 2 * IV_LEN].copy_from_slice(&s.iv);
    }
    v
}

/// A key table value read back: (phase, flags, cid_len, current keys, second slot keys).
pub fn parse_value(v: &[u8; KEYS_SIZE]) -> (u8, u8, u8, PacketKeys, PacketKeys) {
    let k = E::NANOBPF_QUIC_KEYS_KEY_OFF;
    let iv = E::NANOBPF_QUIC_KEYS_IV_OFF;
    let hp = E::NANOBPF_QUIC_KEYS_HP_OFF;
    let mut a = PacketKeys { key: [0; KEY_LEN], iv: [0; IV_LEN], hp: [0; HP_LEN] };
    a.key.copy_from_slice(&v[k..k + KEY_LEN]);
    a.iv.copy_from_slice(&v[iv..iv + IV_LEN]);
    a.hp.copy_from_slice(&v[hp..hp + HP_LEN]);
    let mut b = a;
    b.key.copy_from_slice(&v[k + KEY_LEN..k + 2 * KEY_LEN]);
    b.iv.copy_from_slice(&v[iv + IV_LEN..iv + 2 * IV_LEN]);
    (v[E::NANOBPF_QUIC_KEYS_KEY_PHASE_OFF], v[E::NANOBPF_QUIC_KEYS_FLAGS_OFF], v[E::NANOBPF_QUIC_KEYS_CID_LEN_OFF], a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// RFC 9001 Appendix A.1: the client's Initial secret and keys for DCID 0x8394c8f03e515708.
    #[test]
    fn rfc9001_client_initial() {
        let salt = hex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a");
        let initial = hkdf::Salt::new(hkdf::HKDF_SHA256, &salt).extract(&hex("8394c8f03e515708"));
        let mut client = [0u8; 32];
        initial
            .expand(&[&32u16.to_be_bytes()[..], &[15], b"tls13 client in", &[0]], Len(32))
            .unwrap()
            .fill(&mut client)
            .unwrap();
        assert_eq!(client.to_vec(), hex("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea"));
        let k = PacketKeys::from_secret(&client);
        assert_eq!(k.key.to_vec(), hex("1f369613dd76d5467730efcbe3b1a22d"));
        assert_eq!(k.iv.to_vec(), hex("fa044b2f42a3fd3b46fb255c"));
        assert_eq!(k.hp.to_vec(), hex("9f50449e04a0e810283a1e9933adedd2"));
    }

    /// "quic ku" of the RFC's client initial secret, and the keys of that next generation. Computed
    /// with sw/python/nanobpf/quic/keys.py (next_secret, PacketKeys.from_secret), an independent
    /// implementation (hmac/hashlib).
    #[test]
    fn quic_ku_vector() {
        let mut first = [0u8; 32];
        first.copy_from_slice(&hex("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea"));
        let next = next_secret(&first);
        assert_eq!(next.to_vec(), hex("4428ffa195ad665b9ebf9456945b99e8ff848512cab93d0426436409047d666c"));
        let mut g = Generations::new(first);
        let k1 = g.keys(1);
        assert_eq!(k1.key.to_vec(), hex("e85fece7a6f1b06576c46503cabcfa0d"));
        assert_eq!(k1.iv.to_vec(), hex("994107a30fb5ed593e8976f2"));
        assert_eq!(k1.hp.to_vec(), hex("9f50449e04a0e810283a1e9933adedd2"), "a key update keeps hp");
    }

    #[test]
    fn value_layout() {
        let mut first = [0u8; 32];
        first[0] = 7;
        let mut g = Generations::new(first);
        let v = keys_value(&mut g, 3, Second::Prev, 8);
        let (phase, flags, cid_len, cur, second) = parse_value(&v);
        assert_eq!((phase, flags, cid_len), (1, E::NANOBPF_QUIC_KEY_PREV as u8, 8));
        assert_eq!(cur, g.keys(3));
        assert_eq!((second.key, second.iv), (g.keys(2).key, g.keys(2).iv));
        assert_eq!(v[E::NANOBPF_QUIC_KEYS_RESERVED_OFF], 0);
        assert!(v[E::NANOBPF_QUIC_KEYS_PAD_OFF..].iter().all(|&b| b == 0));
        let v = keys_value(&mut g, 0, Second::Next, 0);
        assert_eq!(v[E::NANOBPF_QUIC_KEYS_FLAGS_OFF], E::NANOBPF_QUIC_KEY_NEXT as u8);
        assert_eq!(v.len(), 80);
    }
}
