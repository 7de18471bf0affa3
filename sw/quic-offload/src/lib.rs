//! quinn (quinn-proto + rustls) with its 1-RTT packet protection offloaded to the NanoBPF DPU
//! (docs/offload.md).

pub mod defs;
pub mod device;
