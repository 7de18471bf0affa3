//! The DPU link from user space: AF_PACKET sockets on the interface that leads to the device's host
//! port, one per EtherType (control frames 0x88B5, shim frames 0x88B6), and one that only sends.
//! Needs root or CAP_NET_RAW.

use std::ffi::CString;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use crate::ctrlproto_client::Transport;

/// One AF_PACKET raw socket bound to an interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ifname: String,
    ifindex: i32,
    mac: [u8; 6],
}

/// A frame read from a [`PacketSocket`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// Bytes in the buffer.
    pub len: usize,
    /// The frame was longer than the buffer (the rest is lost).
    pub truncated: bool,
}

fn os_err(what: &str, ifname: &str) -> io::Error {
    let e = io::Error::last_os_error();
    let hint = if e.raw_os_error() == Some(libc::EPERM) { " (root or CAP_NET_RAW needed)" } else { "" };
    io::Error::new(e.kind(), format!("{ifname}: {what}: {e}{hint}"))
}

/// The interface's index and MAC address.
pub fn interface(ifname: &str) -> io::Result<(i32, [u8; 6])> {
    let c = CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name with a NUL"))?;
    // SAFETY: c is a valid NUL-terminated string
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if index == 0 {
        return Err(os_err("no such interface", ifname));
    }
    let text = std::fs::read_to_string(format!("/sys/class/net/{ifname}/address"))
        .map_err(|e| io::Error::new(e.kind(), format!("{ifname}: its MAC address: {e}")))?;
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = text.trim().split(':').collect();
    if parts.len() != 6 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{ifname}: not an Ethernet interface ({})", text.trim())));
    }
    for (m, p) in mac.iter_mut().zip(parts) {
        *m = u8::from_str_radix(p, 16).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("{ifname}: MAC {}", text.trim())))?;
    }
    Ok((index as i32, mac))
}

impl PacketSocket {
    /// A socket receiving the frames of `ethertype` that arrive on `ifname` (and able to send any
    /// frame on it); `ethertype` 0: one that only sends.
    pub fn open(ifname: &str, ethertype: u16) -> io::Result<PacketSocket> {
        let (ifindex, mac) = interface(ifname)?;
        // Protocol 0 until bound: a socket created with a protocol receives from every interface
        // until its bind, and those frames would be read as the DPU's.
        // SAFETY: plain socket(2)
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(os_err("AF_PACKET socket", ifname));
        }
        // SAFETY: fd is a new descriptor we own
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let s = PacketSocket { fd, ifname: ifname.to_string(), ifindex, mac };
        // our own frames are of no interest (the kernel's copies of what we send); kernels before
        // 4.20 lack the option, and recv() skips PACKET_OUTGOING anyway
        let one: libc::c_int = 1;
        // SAFETY: valid option pointer and length
        unsafe {
            libc::setsockopt(s.fd.as_raw_fd(), libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING,
                             &one as *const _ as *const libc::c_void, mem::size_of::<libc::c_int>() as libc::socklen_t);
        }
        if ethertype != 0 {
            // a burst of the device's answers or opened packets must not be lost to a small queue
            let size: libc::c_int = 4 << 20;
            // SAFETY: valid option pointer and length
            unsafe {
                libc::setsockopt(s.fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF,
                                 &size as *const _ as *const libc::c_void, mem::size_of::<libc::c_int>() as libc::socklen_t);
            }
        }
        let sa = s.sockaddr(ethertype);
        // SAFETY: sa is a valid sockaddr_ll
        let r = unsafe {
            libc::bind(s.fd.as_raw_fd(), &sa as *const libc::sockaddr_ll as *const libc::sockaddr,
                       mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t)
        };
        if r < 0 {
            return Err(os_err("bind", ifname));
        }
        Ok(s)
    }

    fn sockaddr(&self, ethertype: u16) -> libc::sockaddr_ll {
        // SAFETY: sockaddr_ll is plain data; all-zero is valid
        let mut sa: libc::sockaddr_ll = unsafe { mem::zeroed() };
        sa.sll_family = libc::AF_PACKET as u16;
        sa.sll_protocol = ethertype.to_be();
        sa.sll_ifindex = self.ifindex;
        sa
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }
    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// One whole frame (without FCS) out on the interface.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: frame is a valid buffer of its length
        let n = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr() as *const libc::c_void, frame.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n as usize != frame.len() {
            return Err(io::Error::new(io::ErrorKind::WriteZero, format!("{}: sent {n} of {} bytes", self.ifname, frame.len())));
        }
        Ok(())
    }

    /// One received frame, never blocking: `None` when nothing waits. Our own outgoing frames are
    /// skipped.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<Read>> {
        loop {
            // SAFETY: sockaddr_ll is plain data
            let mut sa: libc::sockaddr_ll = unsafe { mem::zeroed() };
            let mut salen = mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: buf and sa are valid for their lengths
            let n = unsafe {
                libc::recvfrom(self.fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len(),
                               libc::MSG_DONTWAIT | libc::MSG_TRUNC, &mut sa as *mut _ as *mut libc::sockaddr, &mut salen)
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            if sa.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            let n = n as usize;
            return Ok(Some(Read { len: n.min(buf.len()), truncated: n > buf.len() }));
        }
    }

    /// Wait until a frame may be read or `timeout` passed: whether one may be.
    pub fn wait(&self, timeout: Duration) -> io::Result<bool> {
        let mut p = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // round up: a sub-millisecond wait must not become a busy loop of zero-timeout polls
        let ms = if ms == 0 && !timeout.is_zero() { 1 } else { ms };
        // SAFETY: one valid pollfd
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
        }
        Ok(r > 0)
    }
}

/// The control channel: a [`PacketSocket`] of the control EtherType as the client's transport.
#[derive(Debug)]
pub struct CtrlLink {
    sock: PacketSocket,
    buf: Vec<u8>,
}

impl CtrlLink {
    pub fn open(ifname: &str) -> io::Result<CtrlLink> {
        Ok(CtrlLink { sock: PacketSocket::open(ifname, crate::ctrlproto::ETHERTYPE)?, buf: vec![0; 2048] })
    }
    pub fn socket(&self) -> &PacketSocket {
        &self.sock
    }
}

impl Transport for CtrlLink {
    fn mac(&self) -> [u8; 6] {
        self.sock.mac()
    }

    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.sock.send(frame)
    }

    fn recv(&mut self, timeout: Duration) -> io::Result<Option<Vec<u8>>> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(r) = self.sock.recv(&mut self.buf)? {
                if !r.truncated {
                    return Ok(Some(self.buf[..r.len].to_vec()));
                }
                continue; // longer than any control frame: not one
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() || !self.sock.wait(left)? {
                return Ok(None);
            }
        }
    }
}
