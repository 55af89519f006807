//! The `error` composite (`amqp:error:list`): its typed view is generated (`views.rs`).

pub use super::views::AmqpError;
