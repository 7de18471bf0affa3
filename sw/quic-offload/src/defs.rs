//! The shared definitions, generated from hw/defs/*.toml (never copied by hand).

/// hw/defs/ctrl.toml: the control protocol, the shim, the marks, the netlink family.
#[allow(dead_code)]
pub mod ctrl {
    include!(concat!(env!("NANOBPF_GEN_DIR"), "/rust/nanobpf_ctrl.rs"));
}

/// hw/defs/ebpf.toml: the key table value, directions, flags, the QUIC program's maps and counters.
#[allow(dead_code)]
pub mod ebpf {
    include!(concat!(env!("NANOBPF_GEN_DIR"), "/rust/nanobpf_ebpf_defs.rs"));
}
