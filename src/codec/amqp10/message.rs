//! Messages: a transfer payload decoded into its sections (header, delivery-annotations,
//! message-annotations, properties, application-properties, data / amqp-sequence / amqp-value,
//! footer), and [`MessageAssembler`], which reassembles deliveries split over several transfers
//! (`more=true`) per (channel, link handle), discarding aborted ones. The typed [`Header`]
//! and [`Properties`] views and the section codes are generated from the spec (`views.rs`).
//!
//! Memory is bounded: a message keeps at most the body bytes `--max-body` asks for plus
//! [`METADATA_BYTES`] for the sections before its body, whatever its size; the rest is counted
//! ([`Message::size`]) and the message marked truncated. Body sections past the body bytes kept
//! are counted, not materialised ([`Message::sections_counted`]). All in-progress deliveries of
//! one direction together hold at most the assembling limit; past it a delivery keeps nothing
//! more.

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::sync::OnceLock;

use crate::hash::{HashMap, HashSet};

use bytes::{Bytes, BytesMut};

use super::Frame;
use super::composite::{check_value, lookup_descriptor};
use super::fields::{FieldList, Map};
use super::performative::Performative;
use super::render::write_fields_entries;
use super::section_check::{self, SectionSpan, SectionSpans};
use super::value::{self, Described, Value, write_fields_map};
use super::views::code::{
    AMQP_SEQUENCE, AMQP_VALUE, APPLICATION_PROPERTIES, DATA, DELIVERY_ANNOTATIONS, FOOTER, HEADER,
    MESSAGE_ANNOTATIONS, PROPERTIES, SECTIONS_BY_NAME,
};
pub use super::views::{Header, Properties};
use crate::base::escape;
use crate::codec::{DecodeError, ErrorKind, Reader};
use crate::json::{JsonOut, to_value};

/// Bytes a message keeps for the sections before its body (header, annotations, properties,
/// application-properties), beyond the body bytes kept.
pub const METADATA_BYTES: usize = 16 * 1024;

/// One message section.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// Section name (`header`, `data` ...).
    pub name: &'static str,
    /// Descriptor code (`views::code::HEADER` ... `FOOTER`).
    pub code: u64,
    /// The section's value (list for header/properties, map, binary, list, any).
    pub value: Value,
    /// Byte span within the message payload.
    pub span: std::ops::Range<usize>,
    /// For a section the held bytes end in: its value's full encoded size (`value` then holds
    /// the start of a binary, string or symbol, and is null for anything else).
    pub cut: Option<u64>,
}

/// Body bytes (or characters) a trace line shows of a message.
pub const SUMMARY_BODY_MAX: usize = 32;

/// The body of a message.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// One or more `data` sections.
    Data(Vec<Bytes>),
    /// One or more `amqp-sequence` sections.
    Sequence(Vec<Vec<Value>>),
    /// An `amqp-value` section.
    Value(Value),
    /// No body section.
    None,
}

/// A complete message, reassembled from one or more transfers.
#[derive(Clone)]
pub struct Message {
    /// Channel of the transfers.
    pub channel: u16,
    /// Link handle.
    pub handle: u32,
    /// From the first transfer.
    pub delivery_id: Option<u32>,
    /// From the first transfer.
    pub delivery_tag: Option<Bytes>,
    /// From the first transfer.
    pub message_format: Option<u32>,
    /// How many transfers carried it.
    pub transfers: usize,
    /// The encoded message as far as it was kept (all of it unless `size` says more).
    pub payload: Bytes,
    /// The encoded message's full size.
    pub size: u64,
    /// The sections, in order (those the kept bytes hold, the last one perhaps cut):
    /// [`Message::sections`].
    sections: Sections,
    /// Body sections in the kept bytes past the body bytes shown: counted, not materialised.
    pub sections_counted: u64,
}

/// A message's sections: decoded already, or — for a whole message the in-place check
/// ([`section_check::scan`]) found valid — decoded from the payload when first asked for,
/// their spans known meanwhile (so asking for one section decodes only that one).
#[derive(Clone, Default)]
struct Sections {
    decoded: OnceLock<Vec<Section>>,
    /// While `decoded` is not set: the codes and spans of the sections to decode.
    spans: SectionSpans,
}

impl Sections {
    fn ready(sections: Vec<Section>) -> Self {
        Sections {
            decoded: OnceLock::from(sections),
            spans: SectionSpans::default(),
        }
    }

    /// All sections, decoded from `payload` on first use (the check made sure they decode).
    fn all(&self, payload: &Bytes) -> &[Section] {
        self.decoded
            .get_or_init(|| self.spans.iter().filter_map(|s| one(payload, &s)).collect())
    }

    /// Whether a section with this code is there (decoding nothing).
    fn has(&self, code: u64) -> bool {
        match self.decoded.get() {
            Some(all) => all.iter().any(|s| s.code == code),
            None => self.spans.has(code),
        }
    }

    /// Each body section (data, amqp-sequence, amqp-value) in order, until `f` breaks: those
    /// already decoded as they are, else each decoded alone from its span (the other sections
    /// stay undecoded).
    fn each_body(&self, payload: &Bytes, mut f: impl FnMut(&Section) -> ControlFlow<()>) {
        let is_body = |code: u64| (DATA..=AMQP_VALUE).contains(&code);
        match self.decoded.get() {
            Some(all) => {
                let _ = all.iter().filter(|s| is_body(s.code)).try_for_each(f);
            }
            None => {
                let _ = self
                    .spans
                    .iter()
                    .filter(|s| is_body(s.code))
                    .filter_map(|s| one(payload, &s))
                    .try_for_each(|s| f(&s));
            }
        }
    }

    /// The value of the first section with this code: borrowed when all are decoded, else
    /// that section alone decoded from its span.
    fn value(&self, payload: &Bytes, code: u64) -> Option<Cow<'_, Value>> {
        match self.decoded.get() {
            Some(all) => all
                .iter()
                .find(|s| s.code == code)
                .map(|s| Cow::Borrowed(&s.value)),
            None => {
                let span = self.spans.find(code)?;
                one(payload, &span).map(|s| Cow::Owned(s.value))
            }
        }
    }
}

/// The section at `s` (a span the in-place check found valid) decoded.
fn one(payload: &Bytes, s: &SectionSpan) -> Option<Section> {
    let def = section_check::def(s.code)?;
    if s.span.start > s.span.end || s.span.end > payload.len() {
        return None;
    }
    let in_place = (s.code == DATA).then(|| data_in_place(payload, &s.span));
    let value = match in_place.flatten() {
        Some(v) => v,
        None => section_value(payload, &s.span)?,
    };
    Some(Section {
        name: def.name,
        code: s.code,
        value,
        span: s.span.clone(),
        cut: None,
    })
}

/// The value of the section at `span` (a described value), decoded.
fn section_value(payload: &Bytes, span: &std::ops::Range<usize>) -> Option<Value> {
    let mut r = Reader::new(payload.slice(span.clone()), 0);
    r.u8().ok()?;
    value::decode_descriptor(&mut r, 1).ok()?;
    value::decode_at(&mut r, 1).ok()
}

/// A data section in its usual encoding (descriptor `smallulong 0x75`, then `vbin8` or
/// `vbin32` filling the rest of `span`): its binary, read in place.
fn data_in_place(payload: &Bytes, span: &std::ops::Range<usize>) -> Option<Value> {
    let b = payload.get(span.clone())?;
    let (head, len) = match *b {
        [0x00, 0x53, 0x75, 0xa0, n, ..] => (5, usize::from(n)),
        [0x00, 0x53, 0x75, 0xb0, n0, n1, n2, n3, ..] => {
            (8, u32::from_be_bytes([n0, n1, n2, n3]) as usize)
        }
        _ => return None,
    };
    (head + len == b.len()).then(|| Value::Binary(payload.slice(span.start + head..span.end)))
}

/// An `amqp-value` body in a few words ([`Message::body_summary_into`]): a string or binary
/// quoted as a data body is (the cut after the closing quote), anything else in Proton's text
/// cut to [`SUMMARY_BODY_MAX`] characters.
fn value_summary_into(out: &mut String, v: &Value) {
    out.push_str("body ");
    match v {
        Value::String(text) => {
            let b = text.as_bytes();
            escape::quoted_cut_into(out, b, SUMMARY_BODY_MAX, b.len() as u64);
        }
        Value::Binary(b) => escape::quoted_cut_into(out, &b[..], SUMMARY_BODY_MAX, b.len() as u64),
        // The rendering escapes every string in it.
        v => {
            let text = v.to_string();
            match text.char_indices().nth(SUMMARY_BODY_MAX) {
                Some((at, _)) => {
                    out.push_str(&text[..at]);
                    escape::cut_mark_into(out, (text.len() - at) as u64);
                }
                None => out.push_str(&text),
            }
        }
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("channel", &self.channel)
            .field("handle", &self.handle)
            .field("delivery_id", &self.delivery_id)
            .field("delivery_tag", &self.delivery_tag)
            .field("message_format", &self.message_format)
            .field("transfers", &self.transfers)
            .field("payload", &self.payload)
            .field("size", &self.size)
            .field("sections", &self.sections())
            .field("sections_counted", &self.sections_counted)
            .finish()
    }
}

/// Equal when every field is, the sections compared decoded (however far each message
/// decoded them yet).
impl PartialEq for Message {
    fn eq(&self, o: &Self) -> bool {
        (
            self.channel,
            self.handle,
            self.delivery_id,
            &self.delivery_tag,
        ) == (o.channel, o.handle, o.delivery_id, &o.delivery_tag)
            && (
                self.message_format,
                self.transfers,
                &self.payload,
                self.size,
            ) == (o.message_format, o.transfers, &o.payload, o.size)
            && self.sections_counted == o.sections_counted
            && self.sections() == o.sections()
    }
}

impl Message {
    /// The sections, in order (those the kept bytes hold, the last one perhaps cut).
    pub fn sections(&self) -> &[Section] {
        self.sections.all(&self.payload)
    }

    /// Replace the sections (e.g. with those of a masked copy of the payload).
    pub fn set_sections(&mut self, sections: Vec<Section>) {
        self.sections = Sections::ready(sections);
    }

    /// Decode `payload` (whose first byte sits at absolute `offset`) into sections.
    pub fn decode_sections(payload: &Bytes, offset: u64) -> Result<Vec<Section>, DecodeError> {
        Self::decode_kept(payload, offset, true, usize::MAX).map(|(s, _)| s)
    }

    /// Decode the kept bytes of a message, `payload` (all of it when `complete`), into
    /// sections: once body sections (data, amqp-sequence, amqp-value) hold `max_body` bytes,
    /// the further ones are only counted (the count is returned with the sections). When the
    /// kept bytes end inside a section, that section is the last one, [`Section::cut`].
    pub fn decode_kept(
        payload: &Bytes,
        offset: u64,
        complete: bool,
        max_body: usize,
    ) -> Result<(Vec<Section>, u64), DecodeError> {
        let mut r = Reader::new(payload.clone(), offset);
        // Most messages are one to three sections.
        let mut sections = Vec::with_capacity(2);
        let (mut body, mut counted) = (0usize, 0u64);
        while !r.is_empty() {
            if !complete {
                let mut probe = r.clone();
                match Self::section_at(&mut probe) {
                    Err(e) if cut_short(&e) => {
                        sections.extend(cut_section(&mut r));
                        break;
                    }
                    _ => {}
                }
            }
            let start = r.position();
            let at = r.offset();
            let not_a_section = || {
                DecodeError::new(
                    at,
                    ErrorKind::UnexpectedType {
                        expected: "message section",
                        found: "other value",
                    },
                )
                .within("message")
            };
            if r.peek_u8()? != value::code::DESCRIBED {
                // Not a described value: decode it (its own errors first), then refuse it.
                value::decode(&mut r).map_err(|e| e.within("message"))?;
                return Err(not_a_section());
            }
            r.u8()?;
            // Decoded in place: descriptor, then the value, with no boxed `Described`.
            let descriptor =
                value::decode_descriptor(&mut r, 1).map_err(|e| e.within("message"))?;
            let def = lookup_descriptor(&descriptor).filter(|def| def.provides("section"));
            let v = value::decode_at(&mut r, 1).map_err(|e| e.within("message"))?;
            let Some(def) = def else {
                return Err(not_a_section());
            };
            check_value(def, &v, at, 1).map_err(|e| e.within(def.name).within("message"))?;
            let span = start..r.position();
            if (DATA..=AMQP_VALUE).contains(&def.code) {
                if body >= max_body {
                    counted += 1;
                    continue;
                }
                body += span.len();
            }
            sections.push(Section {
                name: def.name,
                code: def.code,
                value: v,
                span,
                cut: None,
            });
        }
        Ok((sections, counted))
    }

    /// Read past one section (for telling whether the kept bytes hold all of it).
    fn section_at(r: &mut Reader) -> Result<(), DecodeError> {
        if r.u8()? != value::code::DESCRIBED {
            return Ok(()); // not a section: decoding proper reports it
        }
        value::decode_descriptor(r, 1)?;
        value::decode_at(r, 1).map(drop)
    }

    /// The body bytes its body sections show (decoding the kept bytes again with this limit
    /// materialises the same sections).
    pub fn body_shown(&self) -> usize {
        if self.sections_counted == 0 {
            return usize::MAX;
        }
        self.sections()
            .iter()
            .filter(|s| (DATA..=AMQP_VALUE).contains(&s.code))
            .map(|s| s.span.len())
            .sum::<usize>()
            .max(1)
    }

    /// The first section with this descriptor code.
    pub fn section(&self, code: u64) -> Option<&Section> {
        self.sections().iter().find(|s| s.code == code)
    }

    /// `view` of the fields of a list section (header, properties), decoding only that
    /// section while the others are not decoded.
    fn list_section<T>(&self, code: u64, view: impl FnOnce(&FieldList<'_>) -> T) -> Option<T> {
        match self.sections.value(&self.payload, code)?.as_ref() {
            Value::List(items) => Some(view(&FieldList::Values(items))),
            _ => None,
        }
    }

    /// The header section, the spec's defaults applied.
    pub fn header(&self) -> Option<Header> {
        self.list_section(HEADER, Header::from_fields)
    }

    /// The header's `delivery-count` as [`Message::header`] gives it (`None`: no header
    /// section), read in place from a section not decoded yet.
    ///
    /// Inlined: of sections held in place, a header that comes first (§3.2: it does) or none
    /// is known from the codes at once.
    #[inline(always)]
    pub fn delivery_count(&self) -> Option<u32> {
        if self.sections.decoded.get().is_none() {
            let span = match &self.sections.spans {
                // The codes past `len` are 0, as are those of the sections left out.
                SectionSpans::Few { codes, .. } if !codes.contains(&(HEADER as u8)) => {
                    return None;
                }
                SectionSpans::Few { len, codes, ends } if *len > 0 && codes[0] == HEADER as u8 => {
                    0..ends[0] as usize
                }
                spans => spans.find(HEADER)?.span,
            };
            // The fifth field (§3.2.1), 0 when absent.
            if let Some(n) = section_check::list_uint(&self.payload, &span, 4) {
                return Some(n.unwrap_or(0));
            }
        }
        self.header().map(|h| h.delivery_count)
    }

    /// Whether the message has a section with descriptor code `code` (`views::code::HEADER`
    /// ... `FOOTER`), decoding nothing.
    pub fn has_section(&self, code: u64) -> bool {
        self.sections.has(code)
    }

    /// The properties section.
    pub fn properties(&self) -> Option<Properties> {
        self.list_section(PROPERTIES, Properties::from_fields)
    }

    fn map_section(&self, code: u64) -> Option<&Map> {
        if !self.sections.has(code) {
            return None;
        }
        match &self.section(code)?.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }
    /// delivery-annotations.
    pub fn delivery_annotations(&self) -> Option<&Map> {
        self.map_section(DELIVERY_ANNOTATIONS)
    }
    /// message-annotations.
    pub fn message_annotations(&self) -> Option<&Map> {
        self.map_section(MESSAGE_ANNOTATIONS)
    }
    /// application-properties.
    pub fn application_properties(&self) -> Option<&Map> {
        self.map_section(APPLICATION_PROPERTIES)
    }
    /// footer.
    pub fn footer(&self) -> Option<&Map> {
        self.map_section(FOOTER)
    }

    /// The body.
    pub fn body(&self) -> Body {
        let (mut data, mut seq, mut value) = (Vec::new(), Vec::new(), None);
        self.sections.each_body(&self.payload, |s| {
            match (s.code, &s.value) {
                (DATA, Value::Binary(b)) => data.push(b.clone()),
                (AMQP_SEQUENCE, Value::List(l)) => seq.push(l.clone()),
                (AMQP_VALUE, v) => {
                    value = Some(v.clone());
                    return ControlFlow::Break(());
                }
                _ => {}
            }
            ControlFlow::Continue(())
        });
        if let Some(v) = value {
            Body::Value(v)
        } else if !data.is_empty() {
            Body::Data(data)
        } else if !seq.is_empty() {
            Body::Sequence(seq)
        } else {
            Body::None
        }
    }

    /// The body in a few words for a trace line, as a 0-9-1 content body shows: the first
    /// [`SUMMARY_BODY_MAX`] bytes of the `data` sections (quoted and escaped by
    /// `crate::base::escape`, the cut marked `…(+N bytes)`), an `amqp-value` in Proton's text
    /// cut to as many characters, `amqp-sequence` as a count.
    pub fn body_summary(&self) -> String {
        let mut out = String::new();
        self.body_summary_into(&mut out);
        out
    }

    /// [`Message::body_summary`], appended to `out`.
    pub fn body_summary_into(&self, out: &mut String) {
        // What `body()` decides on, gathered without collecting the sections: the first
        // `data` section and the size of all, how many `amqp-sequence`s, or the `amqp-value`.
        let (mut first, mut total, mut seqs, mut value) = (None, 0u64, 0usize, None);
        self.sections.each_body(&self.payload, |s| {
            match (s.code, &s.value) {
                (DATA, Value::Binary(b)) => {
                    first.get_or_insert_with(|| b.clone());
                    total += b.len() as u64;
                }
                (AMQP_SEQUENCE, Value::List(_)) => seqs += 1,
                (AMQP_VALUE, v) => {
                    value = Some(v.clone());
                    return ControlFlow::Break(());
                }
                _ => {}
            }
            ControlFlow::Continue(())
        });
        match (value, first) {
            (Some(v), _) => value_summary_into(out, &v),
            (None, Some(first)) => {
                out.push_str("body ");
                escape::quoted_cut_into(out, &first, SUMMARY_BODY_MAX, total);
            }
            (None, None) if seqs > 0 => {
                out.push_str("body amqp-sequence x");
                out.push_str(itoa::Buffer::new().format(seqs));
            }
            (None, None) => out.push_str("no body"),
        }
    }

    /// The decoded sections as JSON; bodies longer than `max_body` bytes are truncated and
    /// their full size stated (`len`).
    pub fn to_json(&self, max_body: usize) -> serde_json::Value {
        to_value(|o| {
            o.begin_object();
            self.write_json_entries(o, max_body);
            o.end_object();
        })
    }

    /// The entries of [`Message::to_json`], written into an object open in `o`: each section
    /// under its name, all `data` sections as one array, all `amqp-sequence` sections as one
    /// array, then `size` and `transfers`.
    pub fn write_json_entries<O: JsonOut + ?Sized>(&self, o: &mut O, max_body: usize) {
        for code in SECTIONS_BY_NAME {
            let mut of_code = self.sections().iter().filter(|s| s.code == code).peekable();
            if of_code.peek().is_none() {
                continue;
            }
            match code {
                AMQP_SEQUENCE => {
                    o.key("amqp-sequence");
                    o.begin_array();
                    for s in of_code {
                        write_body_value(o, s, max_body);
                    }
                    o.end_array();
                }
                AMQP_VALUE => {
                    for s in of_code {
                        o.key(s.name);
                        write_body_value(o, s, max_body);
                    }
                }
                DATA => {
                    // Binary data sections make the array; anything else would be shown as a
                    // section of its own, under the same key (so the array wins).
                    let mut binary = false;
                    for s in of_code {
                        if matches!(s.value, Value::Binary(_)) || s.cut.is_some() {
                            binary = true;
                        } else {
                            o.key(s.name);
                            write_section_value(o, s);
                        }
                    }
                    if binary {
                        o.key("data");
                        o.begin_array();
                        for s in self.sections().iter().filter(|s| s.code == DATA) {
                            match &s.value {
                                Value::Binary(b) => write_data(o, b, s.cut, max_body),
                                _ if s.cut.is_some() => write_data(o, &[], s.cut, max_body),
                                _ => {}
                            }
                        }
                        o.end_array();
                    }
                }
                _ => {
                    for s in of_code {
                        o.key(s.name);
                        write_section_value(o, s);
                    }
                }
            }
        }
        if self.sections_counted > 0 {
            o.entry_u64("sections-counted", self.sections_counted);
        }
        o.entry_u64("size", self.size);
        o.entry_u64("transfers", self.transfers as u64);
        if (self.payload.len() as u64) < self.size {
            o.key("truncated");
            o.begin_object();
            o.entry_u64("held", self.payload.len() as u64);
            o.entry_u64("size", self.size);
            o.end_object();
        }
    }
}

/// True for an error that only says the bytes ran out (the kept bytes end inside a section).
fn cut_short(e: &DecodeError) -> bool {
    matches!(
        e.kind,
        ErrorKind::Truncated { .. } | ErrorKind::LengthExceedsInput { .. }
    )
}

/// The section the kept bytes end in, from its descriptor and constructor: a binary, string or
/// symbol value keeps its start, anything else is null; `cut` is its value's full size. `None`
/// when not even its descriptor and constructor are there.
fn cut_section(r: &mut Reader) -> Option<Section> {
    let start = r.position();
    if r.u8().ok()? != value::code::DESCRIBED {
        return None;
    }
    let descriptor = value::decode_descriptor(r, 1).ok()?;
    let def = lookup_descriptor(&descriptor).filter(|def| def.provides("section"))?;
    use value::code::{
        ARRAY8, ARRAY32, LIST8, LIST32, MAP8, MAP32, STR8, STR32, SYM8, SYM32, VBIN8, VBIN32,
    };
    let code = r.u8().ok()?;
    let width = match code {
        VBIN8 | STR8 | SYM8 | LIST8 | MAP8 | ARRAY8 => 1,
        VBIN32 | STR32 | SYM32 | LIST32 | MAP32 | ARRAY32 => 4,
        _ => return None,
    };
    let len = match width {
        1 => u64::from(r.u8().ok()?),
        _ => u64::from(r.u32().ok()?),
    };
    let held = r.rest();
    let value = match code {
        VBIN8 | VBIN32 => Value::Binary(held),
        STR8 | STR32 | SYM8 | SYM32 => match std::str::from_utf8(&held) {
            Ok(_) => Value::Binary(held),
            Err(e) => Value::Binary(held.slice(..e.valid_up_to())),
        },
        _ => Value::Null,
    };
    Some(Section {
        name: def.name,
        code: def.code,
        value,
        span: start..r.position(),
        cut: Some(len),
    })
}
/// A section's value: known composites (header, properties) as objects keyed by field name,
/// symbol/string-keyed maps as objects, anything else as a value.
fn write_section_value<O: JsonOut + ?Sized>(o: &mut O, s: &Section) {
    match &s.value {
        Value::List(items) => match lookup_descriptor(&value::Descriptor::Code(s.code)) {
            Some(def) => {
                o.begin_object();
                write_fields_entries(o, def, items);
                o.end_object();
            }
            None => s.value.write_json(o),
        },
        Value::Map(pairs) => write_fields_map(o, pairs),
        v => v.write_json(o),
    }
}

/// A data section: `{"text"}` when the whole body is UTF-8, else `{"binary"}` (hex) as for
/// any binary; either cut at `max_body` bytes (text on a char boundary), with `"len"` then. The
/// body is shown once: the frame's `raw` holds its exact bytes. `full`: the section's full
/// length when only the start of it, `b`, was kept.
fn write_data<O: JsonOut + ?Sized>(o: &mut O, b: &[u8], full: Option<u64>, max_body: usize) {
    o.begin_object();
    let len = full.unwrap_or(b.len() as u64);
    match std::str::from_utf8(b) {
        Ok(text) => {
            let mut cut = text.len().min(max_body);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            o.entry_str("text", text.get(..cut).unwrap_or_default());
            if (cut as u64) < len {
                o.entry_u64("len", len);
            }
        }
        Err(_) => {
            o.key("binary");
            o.hex(b.get(..max_body).unwrap_or(b));
            if (b.len().min(max_body) as u64) < len {
                o.entry_u64("len", len);
            }
        }
    }
    o.end_object();
}

/// An amqp-value or amqp-sequence section's value, its strings and binaries cut at `max_body`
/// bytes as data sections are (`{"text"}` or `{"binary"}`, with `"len"`); a section the kept
/// bytes end in is shown as far as it was kept.
fn write_body_value<O: JsonOut + ?Sized>(o: &mut O, s: &Section, max_body: usize) {
    match (&s.value, s.cut) {
        (Value::Binary(b), Some(full)) => write_data(o, b, Some(full), max_body),
        (_, Some(full)) => write_data(o, &[], Some(full), max_body),
        (v, None) => write_cut_value(o, v, max_body),
    }
}

/// `v` as JSON, strings and binaries longer than `max_body` cut (lists element by element).
fn write_cut_value<O: JsonOut + ?Sized>(o: &mut O, v: &Value, max_body: usize) {
    match v {
        Value::String(t) if t.as_str().len() > max_body => {
            write_data(o, t.as_str().as_bytes(), None, max_body)
        }
        Value::Binary(b) => {
            o.begin_object();
            value::write_binary_entries(o, b, max_body);
            o.end_object();
        }
        Value::List(items) => {
            o.begin_array();
            for v in items {
                write_cut_value(o, v, max_body);
            }
            o.end_array();
        }
        v => v.write_json(o),
    }
}

/// What a delivery's message takes from its transfers, besides its bytes.
#[derive(Debug)]
struct Delivery {
    delivery_id: Option<u32>,
    delivery_tag: Option<Bytes>,
    message_format: Option<u32>,
    offset: u64,
    /// The encoded message's size so far.
    size: u64,
    transfers: usize,
}

/// An in-progress delivery.
#[derive(Debug)]
struct Partial {
    delivery: Delivery,
    /// The start of the encoded message, copied (never a slice pinning a frame's buffer).
    kept: BytesMut,
}

/// Reassembles deliveries split over several transfers (`more`), per (channel, link handle),
/// for one direction of one connection.
#[derive(Debug)]
pub struct MessageAssembler {
    partial: HashMap<(u16, u32), Partial>,
    total: usize,
    /// Body bytes kept of each message (`--max-body`).
    max_body: usize,
    /// Bytes all in-progress deliveries may keep together.
    max_total: usize,
    /// After a gap: the links (channel, handle) seen starting a delivery since (a transfer with
    /// a delivery-tag, which only a delivery's first transfer must carry); on any other link a
    /// transfer without one continues a delivery whose start was passed over, and makes no
    /// message. `None`: no gap.
    restarted: Option<HashSet<(u16, u32)>>,
}

/// Links an assembler remembers as restarted after a gap; beyond it, it stops being strict.
const MAX_RESTARTED: usize = 4096;

impl Default for MessageAssembler {
    fn default() -> Self {
        let l = crate::codec::Limits::default();
        Self::with_limits(l.body, l.assembling)
    }
}

impl MessageAssembler {
    /// An assembler keeping `max_body` body bytes of each message (and [`METADATA_BYTES`] for
    /// the sections before the body), and at most `max_total` bytes of in-progress deliveries.
    pub fn with_limits(max_body: usize, max_total: usize) -> Self {
        MessageAssembler {
            partial: HashMap::default(),
            total: 0,
            max_body,
            max_total,
            restarted: None,
        }
    }

    /// This assembler for a stream resuming after a gap: a delivery is assembled only from a
    /// transfer that starts it (see `restarted`).
    pub fn after_gap(mut self) -> Self {
        self.restarted = Some(HashSet::default());
        self
    }

    /// After a gap, whether `t` on `key` continues a delivery whose start was not seen.
    fn continues_unseen(&mut self, key: (u16, u32), t: &super::Transfer) -> bool {
        let Some(restarted) = &mut self.restarted else {
            return false;
        };
        if restarted.contains(&key) || self.partial.contains_key(&key) {
            return false;
        }
        if t.delivery_tag.is_none() {
            return true;
        }
        restarted.insert(key);
        if restarted.len() > MAX_RESTARTED {
            self.restarted = None;
        }
        false
    }

    /// Bytes held in in-progress deliveries.
    pub fn buffered(&self) -> usize {
        self.total
    }

    /// Bytes of a message kept.
    fn keep(&self) -> usize {
        self.max_body.saturating_add(METADATA_BYTES)
    }

    /// Feed a frame; returns a message (or why it could not be decoded) when this frame
    /// completes a delivery.
    pub fn push(&mut self, frame: &Frame) -> Option<Result<Message, DecodeError>> {
        let t = match frame.performative() {
            Some(Performative::Transfer(t)) => t,
            Some(Performative::Detach(d)) => {
                self.drop_partial(frame.channel, d.handle);
                return None;
            }
            Some(Performative::End(_)) => {
                let ch = frame.channel;
                let keys: Vec<_> = self.partial.keys().filter(|k| k.0 == ch).copied().collect();
                for k in keys {
                    self.drop_partial(k.0, k.1);
                }
                return None;
            }
            _ => return None,
        };
        let key = (frame.channel, t.handle);
        let payload = frame.payload();
        if t.aborted {
            self.drop_partial(key.0, key.1);
            return None;
        }
        if self.continues_unseen(key, t) {
            return None;
        }
        if !t.more && !self.partial.contains_key(&key) {
            if frame.payload_len() == 0 {
                return None;
            }
            // The common case: a whole message in one transfer, decoded zero-copy (the
            // message is handed on at once, so a slice of the frame pins nothing for long).
            let kept = frame.payload_bytes(self.keep());
            let offset = frame.payload_abs_offset();
            let message = Delivery {
                delivery_id: t.delivery_id,
                delivery_tag: t.delivery_tag.clone(),
                message_format: t.message_format,
                offset,
                size: frame.payload_len(),
                transfers: 1,
            };
            return Some(self.finish(frame.channel, t.handle, message, kept));
        }
        let room = self.keep().min(self.max_total.saturating_sub(self.total));
        let p = self.partial.entry(key).or_insert_with(|| Partial {
            delivery: Delivery {
                delivery_id: t.delivery_id,
                delivery_tag: t.delivery_tag.clone(),
                message_format: t.message_format,
                offset: frame.payload_abs_offset(),
                size: 0,
                transfers: 0,
            },
            kept: BytesMut::new(),
        });
        let d = &mut p.delivery;
        d.transfers += 1;
        d.size = d.size.saturating_add(frame.payload_len());
        // Only while nothing of the message was left out: what is kept is its start.
        if d.size - frame.payload_len() == p.kept.len() as u64 {
            let take = payload.len().min(room.saturating_sub(p.kept.len()));
            p.kept.extend_from_slice(&payload[..take]);
            self.total += take;
        }
        if t.more {
            return None;
        }
        let p = self.partial.remove(&key)?;
        self.total = self.total.saturating_sub(p.kept.len());
        Some(self.finish(frame.channel, t.handle, p.delivery, p.kept.freeze()))
    }

    /// The message of a delivery complete on `channel`, link `handle`, `kept` its start.
    fn finish(
        &self,
        channel: u16,
        handle: u32,
        p: Delivery,
        kept: Bytes,
    ) -> Result<Message, DecodeError> {
        let complete = kept.len() as u64 == p.size;
        let (sections, sections_counted) = match section_check::scan(&kept).filter(|_| complete) {
            Some(spans) => Self::lazy(spans, self.max_body, kept.len()),
            None => {
                let (sections, counted) =
                    Message::decode_kept(&kept, p.offset, complete, self.max_body)?;
                (Sections::ready(sections), counted)
            }
        };
        Ok(Message {
            channel,
            handle,
            delivery_id: p.delivery_id,
            delivery_tag: p.delivery_tag,
            message_format: p.message_format,
            transfers: p.transfers,
            payload: kept,
            size: p.size,
            sections,
            sections_counted,
        })
    }

    /// The sections of a whole message of `len` bytes the in-place check found valid, to
    /// decode when asked for, and how many body sections past `max_body` are counted (as
    /// [`Message::decode_kept`] counts them).
    fn lazy(mut spans: SectionSpans, max_body: usize, len: usize) -> (Sections, u64) {
        let (mut body, mut counted) = (0usize, 0u64);
        // The body sections before any one hold fewer bytes than the message: when that is
        // less than `max_body`, none is left out, and the sections need no look.
        if len >= max_body {
            spans.retain(|s| {
                if (DATA..=AMQP_VALUE).contains(&s.code) {
                    if body >= max_body {
                        counted += 1;
                        return false;
                    }
                    body += s.span.len();
                }
                true
            });
        }
        let sections = Sections {
            decoded: OnceLock::new(),
            spans,
        };
        (sections, counted)
    }

    fn drop_partial(&mut self, channel: u16, handle: u32) {
        if let Some(p) = self.partial.remove(&(channel, handle)) {
            self.total = self.total.saturating_sub(p.kept.len());
        }
    }
}

/// A described section value as a `Described` (for callers that want the generic form).
pub fn section_described(s: &Section) -> Described {
    Described {
        descriptor: value::Descriptor::Code(s.code),
        value: s.value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_by_name_lists_every_section_in_name_order() {
        let names: Vec<&str> = SECTIONS_BY_NAME
            .iter()
            .map(|&c| lookup_descriptor(&value::Descriptor::Code(c)).unwrap().name)
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        let mut codes = SECTIONS_BY_NAME.to_vec();
        codes.sort_unstable();
        let all: Vec<u64> = super::super::tables::ALL
            .iter()
            .filter(|d| d.provides("section"))
            .map(|d| d.code)
            .collect();
        assert_eq!(codes, all);
    }

    /// A data section holding `body`: descriptor `0x53 0x75`, then `vbin8` or `vbin32`, or a
    /// section whose binary claims `claim` bytes instead.
    fn data_section(body: &[u8], wide: bool, claim: Option<usize>) -> Vec<u8> {
        let n = claim.unwrap_or(body.len());
        let mut b = vec![0x00, 0x53, 0x75];
        if wide {
            b.push(0xb0);
            b.extend((n as u32).to_be_bytes());
        } else {
            b.extend([0xa0, n as u8]);
        }
        b.extend_from_slice(body);
        b
    }

    #[test]
    fn a_data_section_read_in_place_is_the_decoded_one() {
        for len in [0usize, 1, 7, 255] {
            for wide in [false, true] {
                let body: Vec<u8> = (0..len).map(|i| i as u8).collect();
                let bytes = data_section(&body, wide, None);
                // The section sits after other bytes, as it does in a message.
                let mut payload = vec![0x00, 0x53, 0x70, 0x45];
                let start = payload.len();
                payload.extend(&bytes);
                let payload = Bytes::from(payload);
                let span = start..payload.len();
                let in_place = data_in_place(&payload, &span);
                assert_eq!(in_place, section_value(&payload, &span), "{len} {wide}");
                assert_eq!(in_place, Some(Value::Binary(Bytes::from(body))));
            }
        }
        // A binary that does not fill its span is left to the decoder.
        for claim in [0, 3, 9] {
            let bytes = Bytes::from(data_section(b"abcd", false, Some(claim)));
            assert_eq!(data_in_place(&bytes, &(0..bytes.len())), None, "{claim}");
        }
    }
}

#[cfg(test)]
impl Message {
    /// A message of one transfer on channel 0, handle 0: all of `payload`, in `sections`.
    fn of(payload: &Bytes, sections: Sections) -> Message {
        Message {
            channel: 0,
            handle: 0,
            delivery_id: None,
            delivery_tag: None,
            message_format: None,
            transfers: 1,
            payload: payload.clone(),
            size: payload.len() as u64,
            sections,
            sections_counted: 0,
        }
    }
}

#[cfg(test)]
mod summary_tests {
    use super::*;

    fn message(sections: Vec<Section>) -> Message {
        Message::of(&Bytes::new(), Sections::ready(sections))
    }

    #[test]
    fn a_body_summary_is_cut_and_escaped_as_a_0_9_1_body_is() {
        let section = |code, value| Section {
            name: "",
            code,
            value,
            span: 0..0,
            cut: None,
        };
        let long = message(vec![section(
            DATA,
            Value::Binary(Bytes::from(vec![b'x'; 40])),
        )]);
        assert_eq!(
            long.body_summary(),
            format!("body \"{}\"…(+8 bytes)", "x".repeat(32))
        );
        let bin = message(vec![section(
            DATA,
            Value::Binary(Bytes::from_static(b"a\x00\"")),
        )]);
        assert_eq!(bin.body_summary(), "body \"a\\x00\\\"\"");
        let text = "hello from amqpeek demo, message 1";
        let string = message(vec![section(
            AMQP_VALUE,
            Value::String(value::Str::from(text)),
        )]);
        assert_eq!(
            string.body_summary(),
            format!("body \"{}\"…(+2 bytes)", &text[..32]),
            "an amqp-value string keeps its closing quote, the cut marked after it"
        );
        let value = message(vec![section(AMQP_VALUE, Value::Uint(7))]);
        assert_eq!(value.body_summary(), "body 7");
        assert_eq!(message(vec![]).body_summary(), "no body");
        // Several data sections: the first shown, the cut counted over all of them.
        let parts = message(vec![
            section(DATA, Value::Binary(Bytes::from_static(b"ab"))),
            section(DATA, Value::Binary(Bytes::from_static(b"cdef"))),
        ]);
        assert_eq!(parts.body_summary(), "body \"ab\"…(+4 bytes)");
        let seqs = message(vec![
            section(AMQP_SEQUENCE, Value::List(vec![Value::Uint(1)])),
            section(AMQP_SEQUENCE, Value::List(vec![])),
        ]);
        assert_eq!(seqs.body_summary(), "body amqp-sequence x2");
    }
}

#[cfg(test)]
mod lazy_tests {
    use super::*;

    /// header, properties (message-id 7, to "/q"), two data sections.
    const MESSAGE: &[u8] = &[
        0x00, 0x53, 0x70, 0xc0, 0x02, 0x01, 0x41, // header: durable
        0x00, 0x53, 0x73, 0xc0, 0x08, 0x03, 0x53, 0x07, 0x40, 0xa1, 0x02, b'/',
        b'q', // properties
        0x00, 0x53, 0x75, 0xa0, 0x02, b'a', b'b', // data
        0x00, 0x53, 0x75, 0xa0, 0x01, b'c', // data
    ];

    #[test]
    fn lazily_decoded_sections_are_those_decoded_at_once() {
        let payload = Bytes::from_static(MESSAGE);
        // 7: the first data section fills the body bytes exactly; 0: none are shown.
        // 34, 33, 14, 13: about the message's length and its data sections' (13 bytes).
        for max_body in [usize::MAX, 34, 33, 14, 13, 8, 7, 1, 0] {
            let spans = section_check::scan(&payload).unwrap();
            let (lazy, counted) = MessageAssembler::lazy(spans, max_body, payload.len());
            let (eager, eager_counted) =
                Message::decode_kept(&payload, 100, true, max_body).unwrap();
            assert_eq!(counted, eager_counted, "max_body {max_body}");
            let eager = Sections::ready(eager);
            // One section alone, before all are decoded.
            let p = &payload;
            assert!(lazy.value(p, HEADER).is_some());
            assert_eq!(lazy.value(p, HEADER), eager.value(p, HEADER));
            assert_eq!(lazy.value(p, PROPERTIES), eager.value(p, PROPERTIES));
            assert!(lazy.decoded.get().is_none());
            assert!(!lazy.has(APPLICATION_PROPERTIES));
            assert_eq!(lazy.has(DATA), max_body > 0, "max_body {max_body}");
            assert_eq!(lazy.all(p), eager.all(p), "max_body {max_body}");
        }
        let (_, counted) = Message::decode_kept(&payload, 0, true, 1).unwrap();
        assert_eq!(counted, 1, "the second data section is counted");
    }

    #[test]
    fn the_delivery_count_read_in_place_is_the_decoded_header_s() {
        const DATA: &[u8] = &[0x00, 0x53, 0x75, 0xa0, 0x01, b'x'];
        // list0; durable only; delivery-count as uint0, smalluint (after a uint0 ttl or
        // not), uint (after a uint ttl) and null; a list32.
        let headers: [&[u8]; 8] = [
            &[0x00, 0x53, 0x70, 0x45],
            &[0x00, 0x53, 0x70, 0xc0, 0x02, 0x01, 0x41],
            &[
                0x00, 0x53, 0x70, 0xc0, 0x06, 0x05, 0x40, 0x40, 0x40, 0x40, 0x43,
            ],
            &[
                0x00, 0x53, 0x70, 0xc0, 0x08, 0x05, 0x41, 0x50, 0x09, 0x40, 0x40, 0x52, 0x07,
            ],
            &[
                0x00, 0x53, 0x70, 0xc0, 0x08, 0x05, 0x41, 0x50, 0x09, 0x43, 0x42, 0x52, 0x07,
            ],
            &[
                0x00, 0x53, 0x70, 0xc0, 0x0e, 0x05, 0x40, 0x40, 0x70, 0, 0, 0x27, 0x10, 0x40, 0x70,
                0x01, 0x02, 0x03, 0x04,
            ],
            &[
                0x00, 0x53, 0x70, 0xc0, 0x06, 0x05, 0x40, 0x40, 0x40, 0x40, 0x40,
            ],
            &[
                0x00, 0x53, 0x70, 0xd0, 0, 0, 0, 0x0a, 0, 0, 0, 0x05, 0x40, 0x40, 0x40, 0x40, 0x52,
                0x03,
            ],
        ];
        let mut checked = 0;
        for h in headers {
            let payload = Bytes::from([h, DATA].concat());
            let Some(spans) = section_check::scan(&payload) else {
                continue;
            };
            let (lazy, _) = MessageAssembler::lazy(spans, usize::MAX, usize::MAX);
            let (eager, _) = Message::decode_kept(&payload, 100, true, usize::MAX).unwrap();
            let want = Message::of(&payload, Sections::ready(eager))
                .header()
                .map(|h| h.delivery_count);
            let lazy = Message::of(&payload, lazy);
            assert_eq!(lazy.delivery_count(), want, "{h:02x?}");
            assert!(lazy.sections.decoded.get().is_none(), "nothing decoded");
            checked += 1;
        }
        assert_eq!(
            checked,
            headers.len(),
            "the in-place check takes every header"
        );
        let none = Bytes::from_static(DATA);
        let (lazy, _) = MessageAssembler::lazy(section_check::scan(&none).unwrap(), 9, none.len());
        assert_eq!(
            Message::of(&none, lazy).delivery_count(),
            None,
            "no header section"
        );
    }

    /// The delivery-count read in place is the decoded header's wherever the header is: first,
    /// after other sections, twice (the first counts), among more sections than are held in
    /// place, or not there; with body sections left out past a small `max_body` or not.
    #[test]
    fn the_delivery_count_read_in_place_is_the_decoded_header_s_in_any_order_of_sections() {
        // delivery-count 3 and 7 (smalluint, the fifth field); properties as list0; data.
        const H3: &[u8] = &[
            0x00, 0x53, 0x70, 0xc0, 0x07, 0x05, 0x41, 0x40, 0x40, 0x40, 0x52, 0x03,
        ];
        const H7: &[u8] = &[
            0x00, 0x53, 0x70, 0xc0, 0x07, 0x05, 0x41, 0x40, 0x40, 0x40, 0x52, 0x07,
        ];
        const P: &[u8] = &[0x00, 0x53, 0x73, 0x45];
        const D: &[u8] = &[0x00, 0x53, 0x75, 0xa0, 0x01, b'x'];
        let layouts: [&[&[u8]]; 14] = [
            &[H3],
            &[H3, D],
            &[H3, P, D],
            &[P, H3],
            &[P, H3, D],
            &[P, D, H3],
            &[D, D, H3],
            &[H3, H7, D],
            &[P, H7, H3],
            &[D, D, D, H3],
            &[P, D, D, D, H7, H3],
            &[D, D],
            &[P, D, D, D],
            &[P],
        ];
        let mut read = [0usize; 2];
        for layout in layouts {
            let payload = Bytes::from(layout.concat());
            let spans = section_check::scan(&payload).expect("the in-place check takes it");
            let (eager, _) = Message::decode_kept(&payload, 100, true, usize::MAX).unwrap();
            let want = Message::of(&payload, Sections::ready(eager))
                .header()
                .map(|h| h.delivery_count);
            for max_body in [usize::MAX, 1] {
                let (lazy, _) = MessageAssembler::lazy(spans.clone(), max_body, payload.len());
                let lazy = Message::of(&payload, lazy);
                assert_eq!(lazy.delivery_count(), want, "{layout:02x?}, {max_body}");
                assert!(lazy.sections.decoded.get().is_none(), "nothing decoded");
            }
            read[usize::from(want.is_some())] += 1;
        }
        assert_eq!(read, [3, 11], "headers found where they are");
    }
}
