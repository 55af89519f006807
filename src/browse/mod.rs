//! The frame list's row model, shared by the TUI and the pager of a file replay: the rows
//! ([`row`]), how pipeline events are numbered into rows ([`numbering`]), and the windows of
//! rows the UI asks for and the pager brings back ([`window`]), what the timeline follows and
//! the pager brings back of it from the whole capture ([`follow`]), and the exports of the whole
//! capture the pager writes ([`export`]). Pure data and the pure
//! functions over it: the pager (`crate::replay::pager`) produces windows, the UI consumes
//! them, and both depend on this module, never this module on either (it runs no pipeline and
//! knows nothing of the terminal).

pub mod export;
pub mod follow;
pub mod numbering;
pub mod row;
pub mod window;
