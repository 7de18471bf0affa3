//! The nanobpf.ko backend (docs/control.md "nanobpf.ko"): keys and program settings through
//! libnanobpf (generic netlink), data on an ordinary UDP socket: a datagram sent with `SO_MARK` =
//! encrypt mark base | CID length leaves with the ENCRYPT shim (sealed by the device or dropped), a
//! datagram the device opened arrives with `SO_RCVMARK` = the decrypt mark.
//!
//! The device is attached beforehand (`nanobpfctl dev attach IF key FILE`); the UDP socket must be
//! bound where the driver's virtual netdev (nbpf0) carries the peer's traffic. SO_MARK needs
//! CAP_NET_ADMIN.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::io;
use std::mem::{size_of, MaybeUninit};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;

use crate::defs::{ctrl as C, ebpf as E};
use crate::device::{Control, Datapath, DeviceError, KeyId, Received, KEYS_SIZE, MAX_CID};

/// `struct nanobpf_key_id` (sw/lib/include/nanobpf.h).
#[repr(C)]
struct RawKeyId {
    dir: u8,
    cid_len: u8,
    id: [u8; MAX_CID],
}

/// `struct nanobpf_stats`: counts from the generated definitions.
#[repr(C)]
struct RawStats {
    dev_present: u64,
    drv_present: u64,
    dev: [u64; C::NANOBPF_STAT_COUNT as usize],
    drv: [u64; C::NANOBPF_DRV_STAT_COUNT as usize],
    unknown: c_uint,
}

#[link(name = "nanobpf", kind = "static")]
extern "C" {
    fn nanobpf_open(hp: *mut *mut c_void, errbuf: *mut c_char, errlen: usize) -> c_int;
    fn nanobpf_close(h: *mut c_void);
    fn nanobpf_errmsg(h: *const c_void) -> *const c_char;
    fn nanobpf_dev_status(h: *const c_void) -> c_int;
    fn nanobpf_key_add(h: *mut c_void, id: *const RawKeyId, keys: *const c_void, len: usize) -> c_int;
    fn nanobpf_key_update(h: *mut c_void, id: *const RawKeyId, keys: *const c_void, len: usize) -> c_int;
    fn nanobpf_key_del(h: *mut c_void, id: *const RawKeyId) -> c_int;
    fn nanobpf_prog_get(h: *mut c_void, info: *mut c_void) -> c_int;
    fn nanobpf_prog_load(h: *mut c_void, image: *const c_void, len: usize, name: *const c_char) -> c_int;
    fn nanobpf_map_lookup(h: *mut c_void, name: *const c_char, key: *const c_void, key_len: usize, value: *mut c_void,
                          cap: usize, value_len: *mut usize) -> c_int;
    fn nanobpf_map_update(h: *mut c_void, name: *const c_char, key: *const c_void, key_len: usize, value: *const c_void,
                          value_len: usize, flags: u64) -> c_int;
    fn nanobpf_stats_get(h: *mut c_void, st: *mut RawStats) -> c_int;
}

/// The driver's control side: one libnanobpf handle.
pub struct DriverControl {
    h: *mut c_void,
}

impl Drop for DriverControl {
    fn drop(&mut self) {
        // SAFETY: h came from nanobpf_open and is closed once.
        unsafe { nanobpf_close(self.h) }
    }
}

fn raw_id(id: &KeyId) -> RawKeyId {
    RawKeyId { dir: id.dir, cid_len: id.cid_len, id: id.id }
}

impl DriverControl {
    pub fn open() -> Result<DriverControl, DeviceError> {
        let mut h: *mut c_void = std::ptr::null_mut();
        let mut err = [0 as c_char; 256];
        // SAFETY: h and err are valid for writing; err's length is passed.
        let rc = unsafe { nanobpf_open(&mut h, err.as_mut_ptr(), err.len()) };
        if rc < 0 {
            // SAFETY: libnanobpf NUL-terminates errbuf.
            let msg = unsafe { CStr::from_ptr(err.as_ptr()) }.to_string_lossy().into_owned();
            return Err(DeviceError::Io(io::Error::new(io::Error::from_raw_os_error(-rc).kind(),
                format!("nanobpf.ko: {msg} (the device is attached with `nanobpfctl dev attach IF key FILE`)"))));
        }
        Ok(DriverControl { h })
    }

    fn error(&self, what: &str, rc: c_int) -> DeviceError {
        // SAFETY: errmsg returns a NUL-terminated string owned by the handle, valid until the next call.
        let msg = unsafe { CStr::from_ptr(nanobpf_errmsg(self.h)) }.to_string_lossy().into_owned();
        // SAFETY: a plain getter on a valid handle.
        let status = unsafe { nanobpf_dev_status(self.h) };
        let message = format!("{what}: {msg}");
        if status >= 0 {
            DeviceError::Refused { status: Some(status as u8), message }
        } else if -rc == libc::ETIMEDOUT {
            DeviceError::Timeout(message)
        } else {
            DeviceError::Refused { status: None, message: format!("{message} ({})", io::Error::from_raw_os_error(-rc)) }
        }
    }

    fn lookup(&mut self, map: &str, key: &[u8]) -> Result<Option<Vec<u8>>, DeviceError> {
        let name = CString::new(map).map_err(|_| DeviceError::Other("map name".into()))?;
        let mut v = vec![0u8; C::NANOBPF_CTRL_MAX_MAP_VALUE as usize];
        let mut n = 0usize;
        // SAFETY: pointers and lengths describe live buffers.
        let rc = unsafe { nanobpf_map_lookup(self.h, name.as_ptr(), key.as_ptr().cast(), key.len(), v.as_mut_ptr().cast(), v.len(), &mut n) };
        if rc == -libc::ENOENT {
            return Ok(None);
        }
        if rc < 0 {
            return Err(self.error(&format!("MAP_LOOKUP {map}"), rc));
        }
        v.truncate(n);
        Ok(Some(v))
    }

    fn update(&mut self, map: &str, key: &[u8], value: &[u8]) -> Result<(), DeviceError> {
        let name = CString::new(map).map_err(|_| DeviceError::Other("map name".into()))?;
        // SAFETY: pointers and lengths describe live buffers.
        let rc = unsafe { nanobpf_map_update(self.h, name.as_ptr(), key.as_ptr().cast(), key.len(), value.as_ptr().cast(), value.len(), 0) };
        if rc < 0 {
            return Err(self.error(&format!("MAP_UPDATE {map}"), rc));
        }
        Ok(())
    }

    fn key_op(&mut self, what: &str, id: &KeyId, keys: Option<&[u8; KEYS_SIZE]>) -> Result<(), DeviceError> {
        let raw = raw_id(id);
        // SAFETY: raw and keys are live for the call; keys is exactly KEYS_SIZE bytes.
        let rc = unsafe {
            match (what, keys) {
                ("KEY_ADD", Some(k)) => nanobpf_key_add(self.h, &raw, k.as_ptr().cast(), k.len()),
                ("KEY_UPDATE", Some(k)) => nanobpf_key_update(self.h, &raw, k.as_ptr().cast(), k.len()),
                _ => nanobpf_key_del(self.h, &raw),
            }
        };
        if rc < 0 {
            return Err(self.error(&format!("{what} {id:?}"), rc));
        }
        Ok(())
    }
}

/// Sum of a per-core array value's u64 counters.
fn sum_u64(v: &[u8]) -> u64 {
    v.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).sum()
}

/// The QUIC program's drop reasons (`quic_drops` indices of hw/defs/ebpf.toml) and their names.
pub const QUIC_DROPS: &[(u64, &str)] = &[
    (E::NANOBPF_QUIC_DROP_TRUNCATED, "truncated"), (E::NANOBPF_QUIC_DROP_BAD_IPV4, "bad_ipv4"),
    (E::NANOBPF_QUIC_DROP_BAD_IPV6, "bad_ipv6"), (E::NANOBPF_QUIC_DROP_BAD_UDP_LENGTH, "bad_udp_length"),
    (E::NANOBPF_QUIC_DROP_QUIC_TRUNCATED, "quic_truncated"), (E::NANOBPF_QUIC_DROP_NO_FIXED_BIT, "no_fixed_bit"),
    (E::NANOBPF_QUIC_DROP_BAD_CID_LENGTH, "bad_cid_length"), (E::NANOBPF_QUIC_DROP_TAG_MISMATCH, "tag_mismatch"),
    (E::NANOBPF_QUIC_DROP_NO_KEYS, "no_keys"), (E::NANOBPF_QUIC_DROP_OVERSIZE, "oversize"),
    (E::NANOBPF_QUIC_DROP_BAD_SHIM, "bad_shim"), (E::NANOBPF_QUIC_DROP_NOT_SEALABLE, "not_sealable"),
    (E::NANOBPF_QUIC_DROP_NO_SEAL_KEYS, "no_seal_keys"), (E::NANOBPF_QUIC_DROP_PN_REUSED, "pn_reused"),
    (E::NANOBPF_QUIC_DROP_NO_PN_STATE, "no_pn_state"),
];

impl Control for DriverControl {
    fn prepare(&mut self, program: Option<&Path>, local_port: u16) -> Result<(), DeviceError> {
        // A buffer larger than struct nanobpf_prog_desc: only the return code matters here.
        let mut desc = [0u64; 64];
        // SAFETY: desc is larger than the struct the library writes.
        let rc = unsafe { nanobpf_prog_get(self.h, desc.as_mut_ptr().cast()) };
        let present = rc >= 0 && (desc[0] as u32) != 0;
        if rc < 0 && rc != -libc::ENOEXEC {
            return Err(self.error("PROG_GET", rc));
        }
        if !present {
            let path = program.ok_or_else(|| DeviceError::Other("the device has no program: name one with --program \
                (make firmware builds build/firmware/bpf/xdp_quic_hw.nbpf)".into()))?;
            let image = std::fs::read(path).map_err(|e| DeviceError::Other(format!("{}: {e}", path.display())))?;
            let stem: String = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
                .chars().take(C::NANOBPF_CTRL_NAME_LEN as usize - 1).collect();
            let name = CString::new(stem).map_err(|_| DeviceError::Other("program name".into()))?;
            // SAFETY: image and name are live for the call.
            let rc = unsafe { nanobpf_prog_load(self.h, image.as_ptr().cast(), image.len(), name.as_ptr()) };
            if rc < 0 {
                return Err(self.error(&format!("PROG_LOAD {}", path.display()), rc));
            }
        }
        // quic_config: the host and network ports, the other fields kept (the device keeps
        // open_cid_lens itself).
        let zero = 0u32.to_le_bytes();
        let mut cfg = self.lookup("quic_config", &zero)?
            .ok_or_else(|| DeviceError::Other("the attached program has no quic_config map: not a QUIC program".into()))?;
        let (h, n) = (E::NANOBPF_QUIC_CONFIG_HOST_IFINDEX_OFF, E::NANOBPF_QUIC_CONFIG_NET_IFINDEX_OFF);
        if cfg.len() < n + 4 {
            return Err(DeviceError::Other(format!("quic_config value of {} bytes", cfg.len())));
        }
        let want_h = (E::NANOBPF_IFINDEX_HOST as u32).to_le_bytes();
        let want_n = (E::NANOBPF_IFINDEX_NET as u32).to_le_bytes();
        if cfg[h..h + 4] != want_h || cfg[n..n + 4] != want_n {
            cfg[h..h + 4].copy_from_slice(&want_h);
            cfg[n..n + 4].copy_from_slice(&want_n);
            self.update("quic_config", &zero, &cfg)?;
        }
        self.update("quic_ports", &local_port.to_le_bytes(), &1u32.to_le_bytes())
    }
    fn key_add(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<(), DeviceError> {
        self.key_op("KEY_ADD", id, Some(keys))
    }
    fn key_update(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<(), DeviceError> {
        self.key_op("KEY_UPDATE", id, Some(keys))
    }
    fn key_del(&mut self, id: &KeyId) -> Result<(), DeviceError> {
        self.key_op("KEY_DEL", id, None)
    }
    fn stats(&mut self) -> Result<Vec<(String, u64)>, DeviceError> {
        let mut st = MaybeUninit::<RawStats>::zeroed();
        // SAFETY: st is a zeroed RawStats, the layout of struct nanobpf_stats.
        let rc = unsafe { nanobpf_stats_get(self.h, st.as_mut_ptr()) };
        if rc < 0 {
            return Err(self.error("STATS", rc));
        }
        // SAFETY: zero-initialised and filled by the library.
        let st = unsafe { st.assume_init() };
        let mut out = Vec::new();
        for &(id, name) in C::NANOBPF_STAT_NAMES {
            if (id as usize) < st.dev.len() && st.dev_present & (1u64 << id) != 0 {
                out.push((name.to_string(), st.dev[id as usize]));
            }
        }
        for &(id, name) in C::NANOBPF_DRV_STAT_NAMES {
            if (id as usize) < st.drv.len() && st.drv_present & (1u64 << id) != 0 {
                out.push((format!("drv_{name}"), st.drv[id as usize]));
            }
        }
        for (name, idx) in [("quic_sealed", E::NANOBPF_QUIC_STAT_SEALED), ("quic_opened", E::NANOBPF_QUIC_STAT_OPENED)] {
            if let Some(v) = self.lookup("quic_stats", &(idx as u32).to_le_bytes())? {
                out.push((name.to_string(), sum_u64(&v)));
            }
        }
        for &(idx, name) in QUIC_DROPS {
            if let Some(v) = self.lookup("quic_drops", &(idx as u32).to_le_bytes())? {
                let n = sum_u64(&v);
                if n > 0 {
                    out.push((format!("quic_drop_{name}"), n));
                }
            }
        }
        Ok(out)
    }
}

// ------------------------------------------------------------------------------------ data path

/// SO_RCVMARK (asm-generic/socket.h, Linux 5.19): the receive mark as a control message.
const SO_RCVMARK: c_int = 75;

fn read_mark(name: &str, default: u32) -> u32 {
    let p = format!("/sys/module/nanobpf/parameters/{name}");
    let Ok(s) = std::fs::read_to_string(&p) else { return default };
    let s = s.trim();
    let v = match s.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    };
    v.unwrap_or(default)
}

/// The UDP socket of a port the driver's device serves.
pub struct DriverUdp {
    sock: UdpSocket,
    local: SocketAddr,
    encrypt_base: u32,
    decrypt_mark: u32,
}

impl DriverUdp {
    pub fn bind(addr: SocketAddr) -> io::Result<DriverUdp> {
        let sock = UdpSocket::bind(addr)?;
        sock.set_nonblocking(true)?;
        let one: c_int = 1;
        // SAFETY: setsockopt with a live c_int.
        let rc = unsafe { libc::setsockopt(sock.as_raw_fd(), libc::SOL_SOCKET, SO_RCVMARK, (&one as *const c_int).cast(), size_of::<c_int>() as u32) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("SO_RCVMARK: {e} (Linux 5.19 or later)")));
        }
        let local = sock.local_addr()?;
        Ok(DriverUdp {
            sock, local,
            encrypt_base: read_mark("encrypt_mark", C::NANOBPF_ENCRYPT_MARK),
            decrypt_mark: read_mark("decrypt_mark", C::NANOBPF_DECRYPT_MARK),
        })
    }

    fn sendmsg(&self, dest: SocketAddr, data: &[u8], mark: Option<u32>) -> io::Result<()> {
        let (mut sa, salen) = sockaddr(dest);
        let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut c_void, iov_len: data.len() };
        let mut cbuf = [0u64; 8];
        // SAFETY: msghdr is plain data; every pointer below refers to a live local.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (&mut sa as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = salen;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if let Some(m) = mark {
            // SAFETY: CMSG_SPACE/CMSG_FIRSTHDR/CMSG_DATA on a buffer of at least CMSG_SPACE(4) bytes.
            unsafe {
                msg.msg_control = cbuf.as_mut_ptr().cast();
                msg.msg_controllen = libc::CMSG_SPACE(4) as _;
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SO_MARK;
                (*c).cmsg_len = libc::CMSG_LEN(4) as _;
                std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u32>(), m);
            }
        }
        // SAFETY: msg is fully initialised above.
        let rc = unsafe { libc::sendmsg(self.sock.as_raw_fd(), &msg, 0) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(()); // a full socket buffer: lost, as on the network; quinn resends
            }
            return Err(e);
        }
        Ok(())
    }
}

fn sockaddr(a: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match a {
        SocketAddr::V4(v) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as _, sin_port: v.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v.ip().octets()) }, sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            (ss, size_of::<libc::sockaddr_in>() as _)
        }
        SocketAddr::V6(v) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as _, sin6_port: v.port().to_be(), sin6_flowinfo: v.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: v.ip().octets() }, sin6_scope_id: v.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            (ss, size_of::<libc::sockaddr_in6>() as _)
        }
    }
}

fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as c_int {
        libc::AF_INET => {
            // SAFETY: the family says it is a sockaddr_in.
            let s: libc::sockaddr_in = unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V4(SocketAddrV4::new(u32::from_be(s.sin_addr.s_addr).into(), u16::from_be(s.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says it is a sockaddr_in6.
            let s: libc::sockaddr_in6 = unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V6(SocketAddrV6::new(s.sin6_addr.s6_addr.into(), u16::from_be(s.sin6_port), s.sin6_flowinfo, s.sin6_scope_id)))
        }
        _ => None,
    }
}

impl Datapath for DriverUdp {
    fn local_addr(&self) -> SocketAddr {
        self.local
    }
    fn fds(&self) -> Vec<RawFd> {
        vec![self.sock.as_raw_fd()]
    }
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        // SAFETY: plain data, filled by recvmsg.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let mut cbuf = [0u64; 16];
        // SAFETY: msghdr is plain data; the pointers refer to live locals.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (&mut ss as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = size_of::<libc::sockaddr_storage>() as _;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = size_of::<[u64; 16]>() as _;
        // SAFETY: msg describes live buffers.
        let n = unsafe { libc::recvmsg(self.sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock { Ok(None) } else { Err(e) };
        }
        let mut mark = None;
        // SAFETY: walking the control messages recvmsg wrote, with the libc macros.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                // the kernel reports the receive mark as SO_MARK (net/socket.c, sock_recv_mark)
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_MARK {
                    mark = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>()));
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let peer = from_sockaddr(&ss).ok_or_else(|| io::Error::other("datagram from an unknown address family"))?;
        let truncated = msg.msg_flags & libc::MSG_TRUNC != 0;
        if truncated {
            return Err(io::Error::other("datagram larger than the receive buffer"));
        }
        Ok(Some(Received { len: n as usize, peer, opened: mark == Some(self.decrypt_mark) }))
    }
    fn send(&mut self, dest: SocketAddr, data: &[u8]) -> io::Result<()> {
        self.sendmsg(dest, data, None)
    }
    fn send_seal(&mut self, dest: SocketAddr, packet: &[u8], cid_len: u8) -> io::Result<()> {
        if cid_len as usize > MAX_CID {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CID length {cid_len}")));
        }
        self.sendmsg(dest, packet, Some(self.encrypt_base | cid_len as u32))
    }
}
