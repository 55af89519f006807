//! Where the pipeline's events go: the [`Sink`] a sink implements, and the [`Render`] that
//! makes a sink's bytes on an inspection worker.

use crate::event::Event;

/// Where events go. One sink knows one output.
pub trait Sink {
    /// Take one event.
    fn event(&mut self, ev: &Event) -> std::io::Result<()>;
    /// Push buffered output to its destination (called per batch and at shutdown).
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    /// False for a sink that can do without frames the inspection had no time to decode (a
    /// live view). When every sink says so, the proxy's inspection skims what it cannot keep up
    /// with ([`Inspector::skim`](crate::pipeline::Inspector::skim)) instead of making the relay wait; captures and checks keep
    /// the default, and are lossless.
    fn needs_every_frame(&self) -> bool {
        true
    }
    /// True for a capture (JSONL, pcapng): a filter in front of it passes it what it leaves out
    /// as `Gap` events, where the bytes were, so that reading the capture back knows of each
    /// hole before anything sent after it. Other outputs show only what passes (the default).
    fn records_cuts(&self) -> bool {
        false
    }
    /// For a sink whose bytes for an event depend on that event alone (JSONL, the trace): a
    /// [`Render`] that makes those bytes on an inspection worker, so that rendering runs on
    /// every core and the sink only writes them ([`Sink::write_rendered`]), in order. `None`
    /// (the default): the sink takes the events themselves ([`Sink::event`]).
    fn renderer(&self) -> Option<Box<dyn Render>> {
        None
    }
    /// Write bytes made by this sink's [`Sink::renderer`], as if their events had been given.
    fn write_rendered(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let _ = bytes;
        Err(std::io::Error::other("this sink renders no bytes"))
    }
}

/// Turns events into one sink's bytes away from that sink (on an inspection worker).
pub trait Render: Send {
    /// Append the bytes `ev` makes (nothing for events the sink ignores) to `out`.
    fn render(&mut self, ev: &Event, out: &mut Vec<u8>);

    /// Let go of buffers a burst grew (the worker is about to wait for traffic); nothing by
    /// default.
    fn release_spare(&mut self) {}

    /// The events of one piece of output have all been rendered: append what was held back
    /// waiting for the next one (a frame's violations come in the same piece as the frame);
    /// nothing by default.
    fn end(&mut self, out: &mut Vec<u8>) {
        let _ = out;
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        (**self).event(ev)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        (**self).flush()
    }
    fn needs_every_frame(&self) -> bool {
        (**self).needs_every_frame()
    }
    fn records_cuts(&self) -> bool {
        (**self).records_cuts()
    }
    fn renderer(&self) -> Option<Box<dyn Render>> {
        (**self).renderer()
    }
    fn write_rendered(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        (**self).write_rendered(bytes)
    }
}

impl<S: Sink + ?Sized> Sink for Box<S> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        (**self).event(ev)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        (**self).flush()
    }
    fn needs_every_frame(&self) -> bool {
        (**self).needs_every_frame()
    }
    fn records_cuts(&self) -> bool {
        (**self).records_cuts()
    }
    fn renderer(&self) -> Option<Box<dyn Render>> {
        (**self).renderer()
    }
    fn write_rendered(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        (**self).write_rendered(bytes)
    }
}
