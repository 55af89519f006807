//! AMQP 0-9-1 (with RabbitMQ's extensions): frames, every class and method, field tables,
//! content headers, SASL responses, content assembly, and an encoder for all of it.
//!
//! Sans-IO and panic-free on any input: `decode_frame` takes exactly one delimited frame
//! (`frame_size` delimits), and every failure is a typed [`DecodeError`](crate::codec::DecodeError) at an absolute offset.
//! The static class/method table is generated from RabbitMQ's JSON spec by
//! `tools/gen_amqp091.py` into `generated.rs`.
//!
//! For the state trackers: [`Frame::kind`] is a [`FrameKind`]; a [`Method`] has
//! [`Method::kind`] (a [`MethodKind`] to `match` on), [`Method::def`] (ids, names,
//! synchronous/content flags, argument list), [`Method::arg`] by spec name and typed
//! accessors (`delivery_tag`, `multiple`, `requeue`, `consumer_tag`, `frame_max`, ...).

mod assembler;
mod auth;
mod content;
mod field_table;
mod frame;
mod generated;
mod inplace;
mod lists;
pub mod mask;
mod method;
mod render;
mod table;

pub use assembler::{ContentAssembler, Message};
pub use auth::{AuthResponse, decode_response};
pub use content::{BASIC_CLASS_ID, ContentHeader};
pub use field_table::{FieldTable, FieldValue, MAX_DEPTH};
pub use frame::{
    FRAME_END_OCTET, FRAME_HEADER_LEN, FRAME_OVERHEAD, Frame, FrameKind, decode_frame,
    decode_frame_ref, encode_frame, frame_size,
};
pub use generated::{Arg, CLASSES, METHODS, MethodKind, arg_index, class_def, method_def};
pub use lists::{Args, Properties};
pub use method::{BuildError, Method, Value};
pub use render::{field_value_json, table_json, value_json};
pub use table::{ArgDef, ClassDef, DefaultValue, MethodDef, WireType};

/// The spec's constants (frame types, FRAME-END, reply codes).
pub mod constants {
    pub use super::generated::{
        ACCESS_REFUSED, CHANNEL_ERROR, COMMAND_INVALID, CONNECTION_FORCED, CONTENT_TOO_LARGE,
        FRAME_BODY, FRAME_END, FRAME_ERROR, FRAME_HEADER, FRAME_HEARTBEAT, FRAME_METHOD,
        FRAME_MIN_SIZE, INTERNAL_ERROR, INVALID_PATH, NO_CONSUMERS, NO_ROUTE, NOT_ALLOWED,
        NOT_FOUND, NOT_IMPLEMENTED, PRECONDITION_FAILED, REPLY_SUCCESS, RESOURCE_ERROR,
        RESOURCE_LOCKED, SYNTAX_ERROR, UNEXPECTED_FRAME,
    };
}

impl Frame {
    /// One summary line, e.g. `basic.publish exchange="x" routing-key="a.b" mandatory=false`.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        self.summary_into(&mut out);
        out
    }

    /// [`Frame::summary`], appended to `out`.
    pub fn summary_into(&self, out: &mut String) {
        render::frame_summary_into(self, out);
    }

    /// The method's arguments (or the header's properties) keyed by the spec's names.
    pub fn fields_json(&self) -> serde_json::Value {
        crate::json::to_value(|o| self.write_fields_json(o))
    }

    /// [`Frame::fields_json`], written to `o`.
    pub fn write_fields_json<O: crate::json::JsonOut + ?Sized>(&self, o: &mut O) {
        render::write_frame_fields(o, self);
    }
}
