//! The control plane's transport (DESIGN.md §5, `docs/protocol.md`): a Unix socket per
//! coordinator speaking newline-delimited JSON.
//!
//! * `protocol`: the wire types and every transport error code.
//! * `codec`: line framing with a size cap.
//! * `server`: the listener, connection limit, peer check and drain; a [`server::Handler`]
//!   supplies the methods.
//! * `caller`: who a connection speaks for (the operator or one worker generation).
//! * `client`: connect, `hello`, concurrent calls, subscriptions.
//! * `discovery`: the runtime directory, metadata files and finding a coordinator.

pub mod caller;
pub mod client;
pub mod codec;
mod connection;
pub mod discovery;
pub mod protocol;
pub mod server;
pub mod session_routing;
pub mod summary;

pub use client::{Client, ClientError, Subscription};
pub use discovery::{DiscoveryError, Endpoint, Metadata, RuntimeDir, Selector};
pub use protocol::{ControlError, Notification, PROTOCOL_VERSION};
pub use server::{BoxFuture, Handler, Server, ServerConfig, ServerError, Session, serve};
pub mod service;
