//! The codecs: sans-IO decoding and encoding of AMQP 1.0 and AMQP 0-9-1.
//!
//! Nothing in here does I/O, spawns tasks or reads a clock. Input is `bytes::Bytes`; payloads
//! are zero-copy slices of it. Decoding never panics, never allocates more than the input's
//! length justifies, and never recurses deeper than a fixed bound; every error is a typed
//! [`DecodeError`] positioned at an absolute byte offset with a field path.

pub mod amqp091;
pub mod amqp10;
pub mod credential;
pub mod error;
pub mod head;
pub mod limits;
pub mod masking;
pub mod reader;
pub mod resync;
pub mod sniff;
pub mod spans;

pub use error::{DecodeError, ErrorKind};
pub use limits::Limits;
pub use reader::Reader;
pub use sniff::{NamedHeader, ProtocolHeader};
pub use spans::PAYLOAD_SPAN;
