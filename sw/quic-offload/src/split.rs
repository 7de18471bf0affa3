//! One object that is both the device's [`Control`] and its [`Datapath`] (the user-space backend,
//! [`crate::packet::PacketDevice`]) handed to the event loop as the two halves it takes.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::path::Path;
use std::rc::Rc;

use crate::device::{Control, Datapath, DeviceError, KeyId, Received, KEYS_SIZE};

pub struct Half<T>(Rc<RefCell<T>>);

/// The two halves of `dev`: (control, data path).
pub fn split<T: Control + Datapath>(dev: T) -> (Half<T>, Half<T>) {
    let rc = Rc::new(RefCell::new(dev));
    (Half(rc.clone()), Half(rc))
}

impl<T: Control> Control for Half<T> {
    fn prepare(&mut self, program: Option<&Path>, local_port: u16) -> Result<(), DeviceError> {
        self.0.borrow_mut().prepare(program, local_port)
    }
    fn key_add(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<(), DeviceError> {
        self.0.borrow_mut().key_add(id, keys)
    }
    fn key_update(&mut self, id: &KeyId, keys: &[u8; KEYS_SIZE]) -> Result<(), DeviceError> {
        self.0.borrow_mut().key_update(id, keys)
    }
    fn key_del(&mut self, id: &KeyId) -> Result<(), DeviceError> {
        self.0.borrow_mut().key_del(id)
    }
    fn stats(&mut self) -> Result<Vec<(String, u64)>, DeviceError> {
        self.0.borrow_mut().stats()
    }
}

impl<T: Datapath> Datapath for Half<T> {
    fn local_addr(&self) -> SocketAddr {
        self.0.borrow().local_addr()
    }
    fn fds(&self) -> Vec<RawFd> {
        self.0.borrow().fds()
    }
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        self.0.borrow_mut().recv(buf)
    }
    fn send(&mut self, dest: SocketAddr, data: &[u8]) -> io::Result<()> {
        self.0.borrow_mut().send(dest, data)
    }
    fn send_seal(&mut self, dest: SocketAddr, packet: &[u8], cid_len: u8) -> io::Result<()> {
        self.0.borrow_mut().send_seal(dest, packet, cid_len)
    }
}
