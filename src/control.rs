//! The control plane's transport (DESIGN.md §5, `docs/protocol.md`): a Unix socket per
//! coordinator speaking newline-delimited JSON.
//!
//! * `methods`: the typed protocol: one [`methods::Request`] variant per method, typed params,
//!   results and events, and the JSON Schema generated from them.
//! * `protocol`: the line envelope, responses and every transport error code.
//! * `codec`: line framing with a size cap.
//! * `server`: the listener, connection limit, peer check and drain; a [`server::Handler`]
//!   supplies the methods.
//! * `caller`: who a connection speaks for (the operator or one worker generation).
//! * `client`: connect, `hello`, concurrent calls, subscriptions.
//! * `oneshot`: `hello` and one call on a blocking socket, for commands that ask one thing.
//! * `discovery`: the runtime directory, metadata files and finding a coordinator.

pub mod caller;
pub mod client;
pub mod codec;
mod connection;
pub mod discovery;
pub mod methods;
pub mod oneshot;
pub mod protocol;
pub mod server;
pub mod session_routing;
pub mod summary;
pub mod summary_cache;
pub mod table;
pub mod targets;
pub mod typescript;

pub use client::{Client, ClientError, Subscription};
pub use connection::Notices;
pub use discovery::{DiscoveryError, Endpoint, Located, Metadata, RuntimeDir, Selector};
pub use methods::{Method, Notification, PROTOCOL_VERSION, Request};
pub use protocol::ControlError;
pub use server::{BoxFuture, Handler, Server, ServerConfig, ServerError, Session, serve};
pub mod service;
