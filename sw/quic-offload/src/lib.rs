//! quinn (quinn-proto + rustls) with its 1-RTT packet protection offloaded to the NanoBPF DPU
//! (docs/offload.md).

pub mod conn;
pub mod ctrlproto;
pub mod ctrlproto_client;
pub mod ctrlproto_link;
pub mod counters;
pub mod defs;
pub mod device;
pub mod driver;
pub mod endpoint;
pub mod fakedev;
pub mod keys;
pub mod offload;
pub mod packet;
pub mod plain;
pub mod split;
pub mod tls;
pub mod transfer;
