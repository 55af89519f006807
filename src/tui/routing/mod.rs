//! How [`App`](super::App) routes what happens to the components and the shared model: the
//! user's keys ([`keys`]) and moves ([`moves`]: cursors, focus, scrolling, the mouse), the
//! pipeline's events ([`pipeline`]), the pager's windows of the whole capture
//! ([`paging`]) and searches of it ([`search`]), and the exports ([`export`]). Each is a part of
//! App's event handling (`App::handle` in `app.rs` dispatches to them); the state they move
//! is the components' (`super::components`) and the model's (`super::model`).

pub(super) mod export;
pub(super) mod keys;
pub(super) mod moves;
pub(super) mod paging;
pub(super) mod pipeline;
pub(super) mod search;
