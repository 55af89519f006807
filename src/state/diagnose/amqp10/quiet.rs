//! A run of quiet transfers: transfers of one link on one session channel that, as the
//! link's credit and the session's window stand, can change nothing but two counts (the
//! sending endpoint's next-outgoing-id, the link's delivery-count) and the link's waiting
//! deliveries, and end or start no diagnosis but the link's unsettled one. Such a run is
//! counted, and the counts applied at once before anything else reads them: what each transfer
//! in turn would have left. A transfer of the run whose delivery awaits its settlement still
//! joins the link's waiting deliveries as it comes.

use crate::base::FrameContext;

/// The run of quiet transfers of one direction (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct Quiet {
    /// The session channel the transfers come on.
    pub channel: u16,
    /// The link's position in the diagnoser's list of links.
    pub link: usize,
    /// The sending session endpoint's position in the list of endpoints, if it is held.
    pub session: Option<usize>,
    /// How many more transfers can be quiet.
    pub room: u32,
    /// The transfers counted, not yet applied.
    pub pending: u32,
}

impl Quiet {
    /// A run on `channel` of the link at `link` (sending endpoint at `session`) with `room`
    /// for that many transfers; `None` for no room.
    pub fn new(channel: u16, link: usize, session: Option<usize>, room: u32) -> Option<Quiet> {
        (room > 0).then_some(Quiet {
            channel,
            link,
            session,
            room,
            pending: 0,
        })
    }

    /// The transfer on `channel` with context `fcx` joins the run, if it can: it starts a
    /// delivery (a whole one or the first frame), settles nothing, and there is room. The
    /// caller has checked it is of the run's link.
    #[inline(always)]
    pub fn take(&mut self, channel: u16, fcx: &FrameContext) -> bool {
        let joins = self.channel == channel && self.room > 0 && Quiet::may_join(fcx);
        if joins {
            self.room -= 1;
            self.pending += 1;
        }
        joins
    }

    /// A transfer with context `fcx` is of the kind a run holds: it starts a delivery, and
    /// settles nothing. (A run starts after one: transfers of a link come alike, as a rule.)
    #[inline(always)]
    pub fn may_join(fcx: &FrameContext) -> bool {
        fcx.delivery.is_some_and(|d| d.starts) && fcx.settles.is_empty()
    }
}
