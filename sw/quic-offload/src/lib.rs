//! quinn (quinn-proto + rustls) with its 1-RTT packet protection offloaded to the NanoBPF DPU
//! (docs/offload.md).

pub mod defs;
pub mod device;
pub mod ctrlproto;
pub mod ctrlproto_client;
pub mod ctrlproto_link;
pub mod packet;
