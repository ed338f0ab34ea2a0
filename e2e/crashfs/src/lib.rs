//! `cairn-crashfs`: a FUSE filesystem for power-cut tests. Processes see an ordinary filesystem;
//! a second copy, the "disk", receives file data only on fsync/fdatasync and directory entries
//! only on an fsync of the directory. A power cut (from the control socket) replaces what
//! processes see with the disk. docs/durability.md ("Crash tests") describes the model.
//!
//! # Layout
//! - `pages`: sparse paged file contents.
//! - `model`: the live view, the disk, and the rules that move changes from one to the other.
//! - `fuse`: the `fuser::Filesystem` over the model.
//! - `control`: the unix-socket control protocol (cut, cut-torn, sync, stats, stop).

pub mod control;
pub mod fuse;
pub mod model;
pub mod pages;
