//! The data path without a DPU: a plain UDP socket (IPv4 or IPv6; `[::]` takes IPv4 too, as mapped
//! addresses). Nothing is sealed or opened by a device here.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use crate::device::{Datapath, Received};

pub struct PlainUdp {
    sock: UdpSocket,
    local: SocketAddr,
}

impl PlainUdp {
    pub fn bind(addr: SocketAddr) -> io::Result<PlainUdp> {
        let sock = UdpSocket::bind(addr)?;
        sock.set_nonblocking(true)?;
        let local = sock.local_addr()?;
        Ok(PlainUdp { sock, local })
    }
    pub fn socket(&self) -> &UdpSocket {
        &self.sock
    }
}

impl Datapath for PlainUdp {
    fn local_addr(&self) -> SocketAddr {
        self.local
    }
    fn fds(&self) -> Vec<RawFd> {
        vec![self.sock.as_raw_fd()]
    }
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        match self.sock.recv_from(buf) {
            Ok((len, peer)) => Ok(Some(Received { len, peer, opened: false })),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn send(&mut self, dest: SocketAddr, data: &[u8]) -> io::Result<()> {
        match self.sock.send_to(data, dest) {
            Ok(_) => Ok(()),
            // A full socket buffer loses the datagram, as the network would; quinn resends.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(e),
        }
    }
    fn send_seal(&mut self, _dest: SocketAddr, _packet: &[u8], _cid_len: u8) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "no DPU on a plain UDP socket"))
    }
}
