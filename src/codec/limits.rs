//! What the inspection of one direction may hold: the budget's split into a frame and the
//! messages being assembled, and the bounds every decoder keeps to.

/// The largest frame skimming passes over by its size alone (larger ones are left to
/// `StreamDecoder::push` (the protocol layer), which decodes them from their head).
pub const MAX_BUFFERED_FRAME: usize = 256 * 1024 * 1024;

/// The largest frame decoded whole, whatever the budget (a JSONL line holding it stays within
/// the reader's limit); larger ones are decoded from their head.
pub const MAX_HELD_FRAME: usize = 32 * 1024 * 1024;

/// The default per-connection inspection budget (`--inspect-memory`).
pub const DEFAULT_INSPECT_MEMORY: usize = 4 * 1024 * 1024;
/// The least inspection budget accepted: room for any frame header and common performative.
pub const MIN_INSPECT_MEMORY: usize = 64 * 1024;
/// The default number of message body bytes kept (`--max-body`).
pub const DEFAULT_MAX_BODY: usize = 4096;

/// What the inspection of one direction may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// A frame larger than this is decoded from its first `frame` bytes (its head); the rest of
    /// it is streamed past, counted but not held.
    pub frame: usize,
    /// Bytes kept of each message's body (`--max-body`); the rest is counted.
    pub body: usize,
    /// Bytes all the messages being assembled may hold together.
    pub assembling: usize,
}

impl Limits {
    /// The limits of each direction under a per-connection budget of `budget` bytes (at least
    /// [`MIN_INSPECT_MEMORY`]): each direction may hold a quarter of it in a frame and a
    /// quarter in messages being assembled.
    pub fn of_budget(budget: usize, max_body: usize) -> Self {
        let quarter = budget.max(MIN_INSPECT_MEMORY) / 4;
        Limits {
            frame: quarter.min(MAX_HELD_FRAME),
            body: max_body,
            assembling: quarter,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::of_budget(DEFAULT_INSPECT_MEMORY, DEFAULT_MAX_BODY)
    }
}
