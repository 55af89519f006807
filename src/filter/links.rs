//! Which AMQP 1.0 link a frame belongs to, for the filter's `link:` term: the name the attach
//! gave its handle, per sending direction and channel. One per connection, fed every frame in
//! order (the TUI and the headless filter keep one each).

use std::collections::HashMap;

use crate::codec::AnyFrame;
use crate::codec::amqp10::Performative;
use crate::event::{Dir, FrameEvent};

/// Link names by (sending direction, channel, handle), from the attaches seen; bounded by the
/// handles in use (a detach with closed=true forgets its handle, an attach reusing a handle
/// replaces it).
#[derive(Clone, Debug, Default)]
pub struct LinkNames {
    names: HashMap<(Dir, u16, u32), String>,
}

impl LinkNames {
    /// The link `f` belongs to (an attach names its handle, a detach with closed=true forgets
    /// it), or `None` for a frame of no link.
    pub fn of(&mut self, f: &FrameEvent) -> Option<String> {
        let AnyFrame::Amqp10(x) = &f.frame else {
            return None;
        };
        let key = |h: u32| (f.dir, x.channel(), h);
        match x.performative()? {
            Performative::Attach(a) => {
                let name = a.name.as_str().to_string();
                self.names.insert(key(a.handle), name.clone());
                Some(name)
            }
            Performative::Flow(fl) => self.names.get(&key(fl.handle?)).cloned(),
            Performative::Transfer(t) => self.names.get(&key(t.handle)).cloned(),
            Performative::Detach(d) if d.closed => self.names.remove(&key(d.handle)),
            Performative::Detach(d) => self.names.get(&key(d.handle)).cloned(),
            _ => None,
        }
    }
}
