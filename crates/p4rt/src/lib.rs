//! P4Runtime v1 for sluice: the protocol's messages and gRPC service,
//! generated at build time from the vendored protos in `proto/`.

/// The generated protobuf and gRPC code, one module per proto package.
/// The protos' comments are kept as docs; lints are off for generated code.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod proto {
    /// `google.rpc` (the `Status` carried in per-update errors).
    pub mod google {
        pub mod rpc {
            tonic::include_proto!("google.rpc");
        }
    }
    pub mod p4 {
        /// `p4.v1`: the P4Runtime service and its messages.
        pub mod v1 {
            tonic::include_proto!("p4.v1");
        }
        pub mod config {
            /// `p4.config.v1`: P4Info.
            pub mod v1 {
                tonic::include_proto!("p4.config.v1");
            }
        }
    }
}

pub mod batch;
pub mod convert;
pub mod device;
pub mod digest;
pub mod idle;
pub mod pipeline;
pub mod read;
pub mod resources;
pub mod server;
pub mod stream;
pub mod write;

pub use device::{Device, DeviceConfig};
/// The rustls of [`server::serve_with`]'s TLS configuration.
pub use rustls;
