//! Content framing on one channel in one direction: a content-bearing method, then its content
//! header, then body frames adding up to exactly body-size, with nothing else on that channel
//! in between (AMQP 0-9-1 §4.2.6).
//!
//! Pure state machine: fed frame kinds, returns the rule broken (if any) with a message. Never
//! reports what it could not see (the `Unknown` state after a gap).

use super::rules;
use crate::state::Rule;

/// Where a channel's content stream (one direction) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContentState {
    /// No content in progress.
    Idle {
        /// The last content had body-size 0: an empty body frame after it is tolerated.
        after_empty: bool,
    },
    /// A content-bearing method was seen; its header must come next.
    AwaitingHeader {
        /// The method's name (for messages).
        method: &'static str,
        /// The method's class id; the header's must match.
        class_id: u16,
    },
    /// The header was seen; `remaining` body bytes must follow.
    AwaitingBody {
        /// The header's body-size.
        size: u64,
        /// Body bytes still to come.
        remaining: u64,
    },
    /// Bytes were missed: content state not known until the next method frame.
    Unknown,
}

impl Default for ContentState {
    fn default() -> Self {
        ContentState::Idle { after_empty: false }
    }
}

/// A broken content rule: which, and the concrete message.
pub type Broken = (&'static Rule, String);

impl ContentState {
    /// A method frame on the channel. `content` is `Some(class_id)` when the method carries
    /// content.
    #[inline]
    pub fn method(&mut self, name: &'static str, content: Option<u16>) -> Option<Broken> {
        if let ContentState::Idle { .. } | ContentState::Unknown = *self {
            *self = ContentState::after_method(name, content);
            return None;
        }
        self.method_interrupts(name, content)
    }

    /// The state a method leaves: awaiting its header when it carries content, else idle.
    #[inline]
    fn after_method(name: &'static str, content: Option<u16>) -> ContentState {
        match content {
            Some(class_id) => ContentState::AwaitingHeader {
                method: name,
                class_id,
            },
            None => ContentState::Idle { after_empty: false },
        }
    }

    /// [`ContentState::method`] with a content in progress.
    #[cold]
    #[inline(never)]
    fn method_interrupts(&mut self, name: &'static str, content: Option<u16>) -> Option<Broken> {
        let broken = match *self {
            ContentState::AwaitingHeader { method, .. } => Some((
                &rules::MISSING_HEADER,
                format!("{method} is followed by {name}, not by its content header"),
            )),
            ContentState::AwaitingBody { size, remaining } => Some((
                &rules::BODY_INCOMPLETE,
                format!(
                    "{name} interrupts a content of body-size {size} with {remaining} body bytes still missing"
                ),
            )),
            ContentState::Idle { .. } | ContentState::Unknown => None,
        };
        *self = ContentState::after_method(name, content);
        broken
    }

    /// A content header frame with `class_id` and `body_size`.
    #[inline]
    pub fn header(&mut self, class_id: u16, body_size: u64) -> Option<Broken> {
        if let ContentState::AwaitingHeader { class_id: want, .. } = *self
            && want == class_id
        {
            *self = ContentState::after_header(body_size);
            return None;
        }
        self.header_out_of_place(class_id, body_size)
    }

    /// The state a header leaves: following its body either way, so its body frames are not
    /// reported again.
    #[inline]
    fn after_header(body_size: u64) -> ContentState {
        if body_size == 0 {
            ContentState::Idle { after_empty: true }
        } else {
            ContentState::AwaitingBody {
                size: body_size,
                remaining: body_size,
            }
        }
    }

    /// [`ContentState::header`] other than after its method.
    #[cold]
    #[inline(never)]
    fn header_out_of_place(&mut self, class_id: u16, body_size: u64) -> Option<Broken> {
        let broken = match *self {
            ContentState::AwaitingHeader {
                method,
                class_id: want,
            } => (class_id != want).then(|| {
                (
                    &rules::CLASS_MISMATCH,
                    format!("content header class-id {class_id} after {method} (class {want})"),
                )
            }),
            ContentState::AwaitingBody { size, remaining } => Some((
                &rules::BODY_INCOMPLETE,
                format!(
                    "a new content header interrupts a content of body-size {size} with {remaining} body bytes still missing"
                ),
            )),
            ContentState::Idle { .. } => Some((
                &rules::UNEXPECTED_HEADER,
                format!(
                    "content header (class-id {class_id}, body-size {body_size}) with no basic.publish/deliver/get-ok/return before it"
                ),
            )),
            ContentState::Unknown => None,
        };
        // Follow the header's body either way, so its body frames are not reported again.
        *self = ContentState::after_header(body_size);
        broken
    }

    /// A content body frame of `len` bytes.
    #[inline]
    pub fn body(&mut self, len: u64) -> Option<Broken> {
        if let ContentState::AwaitingBody { size, remaining } = *self
            && len <= remaining
        {
            let remaining = remaining - len;
            *self = if remaining == 0 {
                ContentState::Idle { after_empty: false }
            } else {
                ContentState::AwaitingBody { size, remaining }
            };
            return None;
        }
        self.body_out_of_place(len)
    }

    /// [`ContentState::body`] other than within its content's body-size.
    #[cold]
    #[inline(never)]
    fn body_out_of_place(&mut self, len: u64) -> Option<Broken> {
        match *self {
            ContentState::AwaitingBody { size, remaining } => {
                if len > remaining {
                    *self = ContentState::Idle { after_empty: false };
                    Some((
                        &rules::BODY_SIZE_MISMATCH,
                        format!(
                            "body frame of {len} bytes with only {remaining} of body-size {size} left ({} bytes too many)",
                            len - remaining
                        ),
                    ))
                } else {
                    let remaining = remaining - len;
                    if remaining == 0 {
                        *self = ContentState::Idle { after_empty: false };
                    } else {
                        *self = ContentState::AwaitingBody { size, remaining };
                    }
                    None
                }
            }
            ContentState::AwaitingHeader { method, .. } => {
                *self = ContentState::Idle { after_empty: false };
                Some((
                    &rules::MISSING_HEADER,
                    format!(
                        "{method} is followed by a body frame of {len} bytes, not by its content header"
                    ),
                ))
            }
            ContentState::Idle { after_empty } => {
                if after_empty && len == 0 {
                    None
                } else {
                    Some((
                        &rules::UNEXPECTED_BODY,
                        format!("body frame of {len} bytes with no content header before it"),
                    ))
                }
            }
            ContentState::Unknown => None,
        }
    }

    /// Whether a content is in progress (method seen, body not yet complete).
    pub fn in_progress(&self) -> bool {
        matches!(
            self,
            ContentState::AwaitingHeader { .. } | ContentState::AwaitingBody { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_content_in_three_bodies_is_clean_and_a_fourth_body_is_not() {
        let mut c = ContentState::default();
        assert!(c.method("basic.publish", Some(60)).is_none());
        assert!(c.header(60, 10).is_none());
        assert!(c.body(4).is_none());
        assert!(c.body(4).is_none());
        assert!(c.in_progress());
        assert!(c.body(2).is_none());
        assert!(!c.in_progress());
        assert_eq!(c.body(1).unwrap().0.id, "amqp091.content.unexpected-body");
    }

    #[test]
    fn too_many_bytes_and_interruptions_are_named() {
        let mut c = ContentState::default();
        c.method("basic.publish", Some(60));
        c.header(60, 3);
        assert_eq!(
            c.body(5).unwrap().0.id,
            "amqp091.content.body-size-mismatch"
        );
        c.method("basic.publish", Some(60));
        assert_eq!(
            c.method("basic.qos", None).unwrap().0.id,
            "amqp091.content.missing-header"
        );
        c.method("basic.publish", Some(60));
        assert_eq!(
            c.header(70, 0).unwrap().0.id,
            "amqp091.content.class-mismatch"
        );
        assert!(c.body(0).is_none(), "an empty body after an empty content");
        let mut u = ContentState::Unknown;
        assert!(u.body(9).is_none());
        assert!(u.header(60, 1).is_none());
    }
}
