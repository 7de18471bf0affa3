//! The control protocol's frames (docs/control.md, docs/control-protocol.md): the device key, frame
//! build and parse with their authentication, and the wire bodies the user-space client sends.
//!
//! A request is `eth | ctrl_hdr | nonce | AES-128-GCM_{K_req}(nonce, aad = ctrl_hdr, body) | tag`, a
//! response `eth | ctrl_hdr | the request's nonce | body | AES-CMAC_{K_resp}(ctrl_hdr | nonce | body)`.
//! The Python reference is sw/python/nanobpf/ctrl.py (`build`, `parse`) and ctrlkey.py; the tests
//! below check that both build the same bytes.

use std::fmt;
use std::io;
use std::path::Path;

use aes::cipher::{BlockEncrypt, KeyInit};
use aes::Aes128;
use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes128Gcm, Nonce, Tag};
use cmac::{Cmac, Mac};

use crate::defs::ctrl as C;
use crate::device::{KeyId, KEYS_SIZE};

pub const ETH_LEN: usize = 14;
pub const HDR_LEN: usize = C::NANOBPF_CTRL_HDR_SIZE;
pub const NONCE_LEN: usize = C::NANOBPF_CTRL_NONCE_LEN as usize;
pub const TAG_LEN: usize = C::NANOBPF_CTRL_TAG_LEN as usize;
pub const KEY_LEN: usize = C::NANOBPF_CTRL_KEY_LEN as usize;
pub const MAX_BODY: usize = C::NANOBPF_CTRL_MAX_BODY as usize;
pub const ETHERTYPE: u16 = C::NANOBPF_CTRL_ETHERTYPE;
pub const BROADCAST: [u8; 6] = [0xff; 6];

/// The device key and the two keys derived from it ("The device key": one per direction).
pub struct DeviceKey {
    gcm: Aes128Gcm,
    resp: [u8; KEY_LEN],
    id: String,
}

impl fmt::Debug for DeviceKey {
    // never the key itself
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceKey(id {})", self.id)
    }
}

fn aes_block(key: &[u8; KEY_LEN], block: &[u8; 16]) -> [u8; 16] {
    let mut b = aes::Block::clone_from_slice(block);
    Aes128::new(key.into()).encrypt_block(&mut b);
    b.into()
}

impl DeviceKey {
    pub fn new(key: &[u8; KEY_LEN]) -> DeviceKey {
        let req = aes_block(key, C::NANOBPF_CTRL_AUTH_REQ_LABEL);
        let resp = aes_block(key, C::NANOBPF_CTRL_AUTH_RESP_LABEL);
        let mut k = DeviceKey { gcm: Aes128Gcm::new((&req).into()), resp, id: String::new() };
        k.id = hex(&k.cmac(&[&[]])[..4]);
        k
    }

    /// The key of a key file (docs/control.md "Provisioning"): 32 hex digits, `#` lines and whitespace
    /// ignored. A missing or unreadable file is `Io` naming the file; anything else is `Other`.
    pub fn from_file(path: &Path) -> Result<DeviceKey, crate::device::DeviceError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            io::Error::new(e.kind(), format!("device key {}: {e} (`nanobpf-ctrl-key new FILE` makes one; docs/control.md \"The device key\")",
                                             path.display()))
        })?;
        parse_key_text(&text, &path.display().to_string()).map(|k| DeviceKey::new(&k))
            .map_err(crate::device::DeviceError::Other)
    }

    /// A name of the key that gives nothing of it away: the first 4 bytes of K_resp's CMAC of nothing,
    /// as hex (what the board prints at boot, `nanobpf-ctrl-key id`).
    pub fn id(&self) -> &str {
        &self.id
    }

    fn cmac(&self, parts: &[&[u8]]) -> [u8; TAG_LEN] {
        let mut m = <Cmac<Aes128> as Mac>::new((&self.resp).into());
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes().into()
    }

    fn cmac_ok(&self, parts: &[&[u8]], tag: &[u8]) -> bool {
        let mut m = <Cmac<Aes128> as Mac>::new((&self.resp).into());
        for p in parts {
            m.update(p);
        }
        m.verify_slice(tag).is_ok() // constant time
    }
}

/// The key file's text -> the 16 key bytes, or why not (`what` names the file in the message).
pub fn parse_key_text(text: &str, what: &str) -> Result<[u8; KEY_LEN], String> {
    let digits: String = text.lines().filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| l.split_whitespace()).collect();
    if digits.len() % 2 != 0 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("device key {what}: not hexadecimal (expected {} hex digits)", 2 * KEY_LEN));
    }
    if digits.len() != 2 * KEY_LEN {
        return Err(format!("device key {what}: {} bytes, a device key is {KEY_LEN} ({} hex digits)",
                           digits.len() / 2, 2 * KEY_LEN));
    }
    let mut k = [0u8; KEY_LEN];
    for (i, b) in k.iter_mut().enumerate() {
        *b = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).map_err(|e| format!("device key {what}: {e}"))?;
    }
    Ok(k)
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `struct nanobpf_ctrl_hdr` (big-endian on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    pub version: u8,
    pub type_: u8,
    pub flags: u8,
    pub status: u8,
    pub seq: u32,
    pub epoch: u32,
    pub length: u16,
    pub reserved: u16,
}

impl Header {
    pub fn pack(&self) -> [u8; HDR_LEN] {
        let mut h = [0u8; HDR_LEN];
        h[C::NANOBPF_CTRL_HDR_VERSION_OFF] = self.version;
        h[C::NANOBPF_CTRL_HDR_TYPE_OFF] = self.type_;
        h[C::NANOBPF_CTRL_HDR_FLAGS_OFF] = self.flags;
        h[C::NANOBPF_CTRL_HDR_STATUS_OFF] = self.status;
        put_u32(&mut h, C::NANOBPF_CTRL_HDR_SEQ_OFF, self.seq);
        put_u32(&mut h, C::NANOBPF_CTRL_HDR_EPOCH_OFF, self.epoch);
        put_u16(&mut h, C::NANOBPF_CTRL_HDR_LENGTH_OFF, self.length);
        put_u16(&mut h, C::NANOBPF_CTRL_HDR_RESERVED_OFF, self.reserved);
        h
    }

    pub fn unpack(h: &[u8]) -> Header {
        Header {
            version: h[C::NANOBPF_CTRL_HDR_VERSION_OFF],
            type_: h[C::NANOBPF_CTRL_HDR_TYPE_OFF],
            flags: h[C::NANOBPF_CTRL_HDR_FLAGS_OFF],
            status: h[C::NANOBPF_CTRL_HDR_STATUS_OFF],
            seq: get_u32(h, C::NANOBPF_CTRL_HDR_SEQ_OFF),
            epoch: get_u32(h, C::NANOBPF_CTRL_HDR_EPOCH_OFF),
            length: get_u16(h, C::NANOBPF_CTRL_HDR_LENGTH_OFF),
            reserved: get_u16(h, C::NANOBPF_CTRL_HDR_RESERVED_OFF),
        }
    }

    pub fn is_response(&self) -> bool {
        u32::from(self.flags) & C::NANOBPF_CTRL_F_RESPONSE != 0
    }
}

/// A parsed, authenticated control frame (a request's body decrypted).
#[derive(Debug, Clone)]
pub struct Frame {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    pub hdr: Header,
    pub nonce: [u8; NONCE_LEN],
    pub body: Vec<u8>,
}

/// Why a control frame was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Short, a body beyond the frame or the limit, reserved bits set, version 0.
    Malformed(String),
    /// Its tag does not verify under the device key: forged, altered or another device's.
    Auth,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Malformed(m) => write!(f, "malformed control frame: {m}"),
            FrameError::Auth => write!(f, "control frame: tag does not verify under the device key"),
        }
    }
}

fn eth_header(dst: &[u8; 6], src: &[u8; 6]) -> Vec<u8> {
    let mut f = Vec::with_capacity(ETH_LEN + HDR_LEN + NONCE_LEN + MAX_BODY + TAG_LEN);
    f.extend_from_slice(dst);
    f.extend_from_slice(src);
    f.extend_from_slice(&ETHERTYPE.to_be_bytes());
    f
}

fn body_len(body: &[u8]) -> Result<u16, FrameError> {
    if body.len() > MAX_BODY {
        return Err(FrameError::Malformed(format!("body of {} bytes, at most {MAX_BODY}", body.len())));
    }
    Ok(body.len() as u16)
}

/// A request frame (without FCS): the body encrypted and the header authenticated under `nonce`
/// (fresh and random per request; a retransmission resends the same frame). `hdr.length` is set here.
pub fn build_request(dst: &[u8; 6], src: &[u8; 6], mut hdr: Header, nonce: &[u8; NONCE_LEN], body: &[u8],
                     key: &DeviceKey) -> Result<Vec<u8>, FrameError> {
    hdr.length = body_len(body)?;
    hdr.flags &= !(C::NANOBPF_CTRL_F_RESPONSE as u8);
    let h = hdr.pack();
    let mut ct = body.to_vec();
    let tag = key.gcm.encrypt_in_place_detached(Nonce::from_slice(nonce), &h, &mut ct)
        .map_err(|_| FrameError::Malformed("body too long for AES-GCM".into()))?;
    let mut f = eth_header(dst, src);
    f.extend_from_slice(&h);
    f.extend_from_slice(nonce);
    f.extend_from_slice(&ct);
    f.extend_from_slice(&tag);
    Ok(f)
}

/// A response frame (what the device sends; here for tests and tools): the body in clear, the
/// request's nonce, the CMAC tag. `hdr.length` is set and the RESPONSE flag added here.
pub fn build_response(dst: &[u8; 6], src: &[u8; 6], mut hdr: Header, nonce: &[u8; NONCE_LEN], body: &[u8],
                      key: &DeviceKey) -> Result<Vec<u8>, FrameError> {
    hdr.length = body_len(body)?;
    hdr.flags |= C::NANOBPF_CTRL_F_RESPONSE as u8;
    let h = hdr.pack();
    let tag = key.cmac(&[&h, nonce, body]);
    let mut f = eth_header(dst, src);
    f.extend_from_slice(&h);
    f.extend_from_slice(nonce);
    f.extend_from_slice(body);
    f.extend_from_slice(&tag);
    Ok(f)
}

/// A control frame checked and authenticated: `Ok(None)` for another EtherType, `Err` for a malformed
/// one or one whose tag does not verify (nothing of it is read then). Padding after the tag (short
/// Ethernet frames) is ignored.
pub fn parse(frame: &[u8], key: &DeviceKey) -> Result<Option<Frame>, FrameError> {
    if frame.len() < ETH_LEN || get_u16(frame, 12) != ETHERTYPE {
        return Ok(None);
    }
    if frame.len() < ETH_LEN + HDR_LEN + NONCE_LEN + TAG_LEN {
        return Err(FrameError::Malformed(format!("{} bytes: shorter than its header, nonce and tag", frame.len())));
    }
    let raw_hdr = &frame[ETH_LEN..ETH_LEN + HDR_LEN];
    let hdr = Header::unpack(raw_hdr);
    let n = hdr.length as usize;
    let body_at = ETH_LEN + HDR_LEN + NONCE_LEN;
    if n > MAX_BODY || body_at + n + TAG_LEN > frame.len() {
        return Err(FrameError::Malformed(format!("body length {n} beyond the frame or the limit")));
    }
    if hdr.reserved != 0 || hdr.version == 0 {
        return Err(FrameError::Malformed("reserved bits set or version 0".into()));
    }
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&frame[ETH_LEN + HDR_LEN..body_at]);
    let body = &frame[body_at..body_at + n];
    let tag = &frame[body_at + n..body_at + n + TAG_LEN];
    let body = if hdr.is_response() {
        if !key.cmac_ok(&[raw_hdr, &nonce, body], tag) {
            return Err(FrameError::Auth);
        }
        body.to_vec()
    } else {
        let mut pt = body.to_vec();
        key.gcm.decrypt_in_place_detached(Nonce::from_slice(&nonce), raw_hdr, &mut pt, Tag::from_slice(tag))
            .map_err(|_| FrameError::Auth)?;
        pt
    };
    let mut dst = [0u8; 6];
    let mut src = [0u8; 6];
    dst.copy_from_slice(&frame[0..6]);
    src.copy_from_slice(&frame[6..12]);
    Ok(Some(Frame { dst, src, hdr, nonce, body }))
}

// ---------------------------------------------------------------- byte helpers
pub(crate) fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_be_bytes());
}
pub(crate) fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}
pub(crate) fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_be_bytes());
}
pub(crate) fn get_u16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}
pub(crate) fn get_u32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}
pub(crate) fn get_u64(b: &[u8], off: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[off..off + 8]);
    u64::from_be_bytes(x)
}

/// CRC-32 (IEEE 802.3, reflected) as PROG_BEGIN/COMMIT carry it (zlib.crc32).
pub fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}

/// A NUL-padded name field (program and map names): at most `NANOBPF_CTRL_NAME_LEN` bytes.
fn put_name(b: &mut [u8], off: usize, name: &str) -> Result<(), String> {
    let n = C::NANOBPF_CTRL_NAME_LEN as usize;
    if name.len() > n {
        return Err(format!("name '{name}' longer than {n} bytes"));
    }
    b[off..off + name.len()].copy_from_slice(name.as_bytes());
    Ok(())
}

// ---------------------------------------------------------------- bodies
pub fn hello_req() -> Vec<u8> {
    let mut b = vec![0u8; C::NANOBPF_HELLO_REQ_SIZE];
    put_u16(&mut b, C::NANOBPF_HELLO_REQ_VER_MIN_OFF, C::NANOBPF_CTRL_MIN_VERSION);
    put_u16(&mut b, C::NANOBPF_HELLO_REQ_VER_MAX_OFF, C::NANOBPF_CTRL_VERSION);
    b
}

/// The device's limits from its HELLO answer (`hello_resp`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub version: u16,
    pub cores: u16,
    pub key_slots: u32,
    pub max_image: u32,
    pub max_body: u16,
}

pub fn parse_hello_resp(b: &[u8]) -> Option<Limits> {
    if b.len() < C::NANOBPF_HELLO_RESP_SIZE {
        return None;
    }
    Some(Limits {
        version: get_u16(b, C::NANOBPF_HELLO_RESP_VERSION_OFF),
        cores: get_u16(b, C::NANOBPF_HELLO_RESP_CORES_OFF),
        key_slots: get_u32(b, C::NANOBPF_HELLO_RESP_KEY_SLOTS_OFF),
        max_image: get_u32(b, C::NANOBPF_HELLO_RESP_MAX_IMAGE_OFF),
        max_body: get_u16(b, C::NANOBPF_HELLO_RESP_MAX_BODY_OFF),
    })
}

fn put_key_name(b: &mut [u8], cid_len_off: usize, dir_off: usize, cid_off: usize, id: &KeyId) {
    b[cid_len_off] = id.cid_len;
    b[dir_off] = id.dir;
    b[cid_off..cid_off + id.id.len()].copy_from_slice(&id.id);
}

pub fn key_msg(id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Vec<u8> {
    let mut b = vec![0u8; C::NANOBPF_KEY_MSG_SIZE];
    put_key_name(&mut b, C::NANOBPF_KEY_MSG_CID_LEN_OFF, C::NANOBPF_KEY_MSG_DIR_OFF, C::NANOBPF_KEY_MSG_CID_OFF, id);
    b[C::NANOBPF_KEY_MSG_KEYS_OFF..C::NANOBPF_KEY_MSG_KEYS_OFF + KEYS_SIZE].copy_from_slice(keys);
    b
}

pub fn key_del(id: &KeyId) -> Vec<u8> {
    let mut b = vec![0u8; C::NANOBPF_KEY_DEL_SIZE];
    put_key_name(&mut b, C::NANOBPF_KEY_DEL_CID_LEN_OFF, C::NANOBPF_KEY_DEL_DIR_OFF, C::NANOBPF_KEY_DEL_CID_OFF, id);
    b
}

pub fn parse_key_resp(b: &[u8]) -> Option<u32> {
    (b.len() >= C::NANOBPF_KEY_RESP_SIZE).then(|| get_u32(b, C::NANOBPF_KEY_RESP_SLOT_OFF))
}

/// `prog_begin`, the body of PROG_BEGIN and PROG_COMMIT.
pub fn prog_begin(image: &[u8], name: &str) -> Result<Vec<u8>, String> {
    let mut b = vec![0u8; C::NANOBPF_PROG_BEGIN_SIZE];
    put_u32(&mut b, C::NANOBPF_PROG_BEGIN_TOTAL_OFF, image.len() as u32);
    put_u32(&mut b, C::NANOBPF_PROG_BEGIN_CRC32_OFF, crc32(image));
    put_name(&mut b, C::NANOBPF_PROG_BEGIN_NAME_OFF, name)?;
    Ok(b)
}

pub fn prog_chunk(offset: usize, bytes: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; C::NANOBPF_PROG_CHUNK_SIZE];
    put_u32(&mut b, C::NANOBPF_PROG_CHUNK_OFFSET_OFF, offset as u32);
    b.extend_from_slice(bytes);
    b
}

/// The attached program (`prog_info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgInfo {
    pub name: String,
    pub image_len: u32,
    pub crc32: u32,
    pub insns: u32,
    pub maps: u16,
}

pub fn parse_prog_info(b: &[u8]) -> Option<ProgInfo> {
    if b.len() < C::NANOBPF_PROG_INFO_SIZE {
        return None;
    }
    let raw = &b[C::NANOBPF_PROG_INFO_NAME_OFF..C::NANOBPF_PROG_INFO_NAME_OFF + C::NANOBPF_CTRL_NAME_LEN as usize];
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    Some(ProgInfo {
        name: String::from_utf8_lossy(&raw[..end]).into_owned(),
        image_len: get_u32(b, C::NANOBPF_PROG_INFO_IMAGE_LEN_OFF),
        crc32: get_u32(b, C::NANOBPF_PROG_INFO_CRC32_OFF),
        insns: get_u32(b, C::NANOBPF_PROG_INFO_INSNS_OFF),
        maps: get_u16(b, C::NANOBPF_PROG_INFO_MAPS_OFF),
    })
}

/// `map_req` + key + value (MAP_LOOKUP/UPDATE/DELETE/NEXT).
pub fn map_req(name: &str, key: &[u8], value: &[u8], flags: u64) -> Result<Vec<u8>, String> {
    if key.len() > C::NANOBPF_CTRL_MAX_MAP_KEY as usize || value.len() > C::NANOBPF_CTRL_MAX_MAP_VALUE as usize {
        return Err(format!("map key of {} or value of {} bytes: at most {} and {}", key.len(), value.len(),
                           C::NANOBPF_CTRL_MAX_MAP_KEY, C::NANOBPF_CTRL_MAX_MAP_VALUE));
    }
    let mut b = vec![0u8; C::NANOBPF_MAP_REQ_SIZE];
    put_name(&mut b, C::NANOBPF_MAP_REQ_NAME_OFF, name)?;
    put_u64(&mut b, C::NANOBPF_MAP_REQ_FLAGS_OFF, flags);
    put_u16(&mut b, C::NANOBPF_MAP_REQ_KEY_LEN_OFF, key.len() as u16);
    put_u16(&mut b, C::NANOBPF_MAP_REQ_VALUE_LEN_OFF, value.len() as u16);
    b.extend_from_slice(key);
    b.extend_from_slice(value);
    Ok(b)
}

/// A STATS answer: (counter name, value) in the device's order; an id without a name is `stat<id>`.
pub fn parse_stats(body: &[u8]) -> Vec<(String, u64)> {
    body.chunks_exact(C::NANOBPF_STAT_ENTRY_SIZE).map(|e| {
        let id = get_u32(e, C::NANOBPF_STAT_ENTRY_ID_OFF);
        let name = C::NANOBPF_STAT_NAMES.iter().find(|(i, _)| *i == id).map(|(_, n)| n.to_string())
            .unwrap_or_else(|| format!("stat{id}"));
        (name, get_u64(e, C::NANOBPF_STAT_ENTRY_VALUE_OFF))
    }).collect()
}

/// The name of a status (`NANOBPF_STATUS_NAMES`).
pub fn status_name(status: u8) -> String {
    C::NANOBPF_STATUS_NAMES.iter().find(|(s, _)| *s == u32::from(status)).map(|(_, n)| n.to_string())
        .unwrap_or_else(|| format!("status {status}"))
}

/// The name of a message type (`NANOBPF_MSG_NAMES`).
pub fn msg_name(type_: u8) -> String {
    C::NANOBPF_MSG_NAMES.iter().find(|(t, _)| *t == u32::from(type_)).map(|(_, n)| n.to_uppercase())
        .unwrap_or_else(|| format!("type {type_}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::process::Command;

    const KEY: [u8; 16] = *b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff";
    const NONCE: [u8; 12] = [7; 12];
    const HOST: [u8; 6] = [2, 0x4e, 0x42, 0, 0, 2];

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    fn sample_key_msg() -> Vec<u8> {
        let keys: [u8; KEYS_SIZE] = std::array::from_fn(|i| i as u8);
        key_msg(&KeyId::cid(crate::device::SEAL, &[0xa1, 0xa2, 0xa3, 0xa4]), &keys)
    }

    #[test]
    fn request_and_response_round_trip() {
        let k = DeviceKey::new(&KEY);
        let hdr = Header { version: 2, type_: C::NANOBPF_CTRL_MSG_KEY_ADD as u8, seq: 9, epoch: 0x1234, ..Default::default() };
        let body = sample_key_msg();
        let f = build_request(&BROADCAST, &HOST, hdr, &NONCE, &body, &k).unwrap();
        assert_eq!(f.len(), ETH_LEN + HDR_LEN + NONCE_LEN + body.len() + TAG_LEN);
        assert_ne!(&f[ETH_LEN + HDR_LEN + NONCE_LEN..][..body.len()], &body[..], "the body is encrypted");
        let p = parse(&f, &k).unwrap().unwrap();
        assert_eq!((p.hdr.seq, p.hdr.epoch, p.hdr.length as usize, p.body.clone()), (9, 0x1234, body.len(), body.clone()));
        // padded to the Ethernet minimum: still parses
        let mut padded = f.clone();
        padded.extend_from_slice(&[0; 30]);
        assert!(parse(&padded, &k).unwrap().is_some());
        // one bit anywhere after the EtherType: refused
        for i in ETH_LEN..f.len() {
            let mut g = f.clone();
            g[i] ^= 1;
            assert!(parse(&g, &k).is_err(), "bit flipped at {i}");
        }
        // another key
        assert_eq!(parse(&f, &DeviceKey::new(&[1; 16])).unwrap_err(), FrameError::Auth);
        let r = build_response(&HOST, &C::NANOBPF_CTRL_DEVICE_MAC, Header { status: 0, ..hdr }, &NONCE, &[0, 0, 0, 5], &k).unwrap();
        let p = parse(&r, &k).unwrap().unwrap();
        assert!(p.hdr.is_response());
        assert_eq!((p.nonce, p.body), (NONCE, vec![0, 0, 0, 5]));
        let mut g = r.clone();
        let last = g.len() - 1;
        g[last] ^= 0x80;
        assert_eq!(parse(&g, &k).unwrap_err(), FrameError::Auth);
    }

    #[test]
    fn malformed_frames_are_refused() {
        let k = DeviceKey::new(&KEY);
        assert!(parse(&[0u8; 10], &k).unwrap().is_none());
        let mut other = vec![0u8; 60];
        other[12] = 0x08;
        assert!(parse(&other, &k).unwrap().is_none(), "another EtherType is not ours");
        let hdr = Header { version: 2, type_: 3, seq: 1, ..Default::default() };
        let f = build_request(&BROADCAST, &HOST, hdr, &NONCE, b"", &k).unwrap();
        assert!(matches!(parse(&f[..f.len() - 1], &k), Err(FrameError::Malformed(_))));
        let mut long = f.clone();
        put_u16(&mut long, ETH_LEN + C::NANOBPF_CTRL_HDR_LENGTH_OFF, 1);
        assert!(matches!(parse(&long, &k), Err(FrameError::Malformed(_))));
        assert!(build_request(&BROADCAST, &HOST, hdr, &NONCE, &vec![0; MAX_BODY + 1], &k).is_err());
    }

    #[test]
    fn key_text() {
        let good = "# NanoBPF device key\n00112233 44556677\n  8899aabbccddeeff  \n";
        assert_eq!(parse_key_text(good, "f").unwrap(), KEY);
        let e = parse_key_text("0011", "f").unwrap_err();
        assert!(e.contains("2 bytes") && e.contains("32 hex digits"), "{e}");
        let e = parse_key_text("zz112233445566778899aabbccddeeff", "f").unwrap_err();
        assert!(e.contains("not hexadecimal"), "{e}");
        assert!(parse_key_text("001", "f").unwrap_err().contains("not hexadecimal"));
        assert!(parse_key_text("", "f").unwrap_err().contains("0 bytes"));
        assert!(parse_key_text(&format!("{good}00"), "f").unwrap_err().contains("17 bytes"));
    }

    #[test]
    fn key_files() {
        let dir = std::env::temp_dir().join(format!("nanobpf-ctrlproto-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.key");
        std::fs::write(&good, "# a key\n00112233445566778899aabbccddeeff\n").unwrap();
        let k = DeviceKey::from_file(&good).unwrap();
        assert_eq!(k.id(), DeviceKey::new(&KEY).id());
        let bad = dir.join("bad.key");
        std::fs::write(&bad, "00112233445566778899aabbccddee\n").unwrap();
        let e = DeviceKey::from_file(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.key") && e.contains("15 bytes"), "{e}");
        let e = DeviceKey::from_file(&dir.join("missing.key")).unwrap_err().to_string();
        assert!(e.contains("missing.key") && e.contains("nanobpf-ctrl-key new"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn crc32_is_zlibs() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    fn python() -> Option<PathBuf> {
        let p = std::env::var_os("NANOBPF_PYTHON").map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../build/venv/bin/python"));
        p.exists().then_some(p)
    }

    /// Frames built here parse in nanobpf.ctrl (Python) and the reverse; with the same nonce both build
    /// the same bytes. Skipped (with a note) where the build's Python is not there.
    #[test]
    fn interoperates_with_the_python_reference() {
        let Some(py) = python() else {
            eprintln!("skipped: no build/venv/bin/python (set NANOBPF_PYTHON)");
            return;
        };
        let k = DeviceKey::new(&KEY);
        let body = sample_key_msg();
        let hdr = Header { version: 2, type_: C::NANOBPF_CTRL_MSG_KEY_ADD as u8, seq: 0xfffffff0, epoch: 0xdeadbeef, ..Default::default() };
        let mut rnonce = [0u8; NONCE_LEN];
        getrandom::getrandom(&mut rnonce).unwrap();
        let ours = build_request(&BROADCAST, &HOST, hdr, &rnonce, &body, &k).unwrap();
        let ours_resp = build_response(&HOST, &C::NANOBPF_CTRL_DEVICE_MAC, Header { status: 7, ..hdr }, &rnonce, b"exists", &k).unwrap();
        let script = r#"
import sys
import nanobpf_ctrl_defs as D
from nanobpf import ctrl, ctrlkey
key = ctrlkey.DeviceKey(bytes.fromhex(sys.argv[1]))
for arg in sys.argv[2:4]:
    f = ctrl.parse(bytes.fromhex(arg), key)
    h = f.hdr
    print(h["type"], h["seq"], h["epoch"], h["flags"], h["status"], f.nonce.hex(), f.body.hex())
nonce, body = bytes([7] * 12), bytes.fromhex(sys.argv[4])
print(ctrl.build(ctrl.BROADCAST, bytes.fromhex("024e42000002"), D.NANOBPF_CTRL_MSG_KEY_ADD, 0xfffffff0, 0xdeadbeef,
                 body, key=key, nonce=nonce).hex())
print(ctrl.build(bytes.fromhex("024e42000002"), ctrl.DEVICE_MAC, D.NANOBPF_CTRL_MSG_KEY_ADD, 0xfffffff0, 0xdeadbeef,
                 b"exists", flags=D.NANOBPF_CTRL_F_RESPONSE, status=7, key=key, nonce=nonce).hex())
"#;
        let out = Command::new(&py).arg("-c").arg(script).arg(hex(&KEY)).arg(hex(&ours)).arg(hex(&ours_resp)).arg(hex(&body))
            .output().unwrap();
        assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("16 {} {} 0 0 {} {}", 0xfffffff0u32, 0xdeadbeefu32, hex(&rnonce), hex(&body)));
        assert_eq!(lines[1], format!("16 {} {} 1 7 {} {}", 0xfffffff0u32, 0xdeadbeefu32, hex(&rnonce), hex(b"exists")));
        let theirs = unhex(lines[2]);
        assert_eq!(theirs, build_request(&BROADCAST, &HOST, hdr, &NONCE, &body, &k).unwrap(), "same request bytes");
        let p = parse(&theirs, &k).unwrap().unwrap();
        assert_eq!((p.hdr, p.body), (Header { length: body.len() as u16, ..hdr }, body.clone()));
        let theirs = unhex(lines[3]);
        assert_eq!(theirs, build_response(&HOST, &C::NANOBPF_CTRL_DEVICE_MAC, Header { status: 7, ..hdr }, &NONCE, b"exists", &k).unwrap());
        let p = parse(&theirs, &k).unwrap().unwrap();
        assert_eq!((p.hdr.status, p.nonce, p.body), (7, NONCE, b"exists".to_vec()));
    }
}
