//! # lbsim-engine
//!
//! The discrete-event core of lbsim, in the spirit of htsim's ~2k-line core:
//! it knows nothing about networks.
//!
//! - [`units`]: `SimTime` (integer picoseconds), `Bytes`, `BitsPerSec`, with
//!   serialisation delay computed in exact integer arithmetic;
//! - [`queue`]: the future-event list, ordered by `(time, insertion seq)`;
//! - [`rng`]: one root seed split into independent named streams;
//! - [`slab`]: index-addressed storage for packets.
//!
//! A model owns an `EventQueue<E>` with its own small `Copy` event enum and
//! runs `while let Some((t, ev)) = q.pop() { match ev { ... } }`.

pub mod queue;
pub mod rng;
pub mod slab;
pub mod units;

pub use queue::EventQueue;
pub use rng::{mix64, Rng};
pub use slab::Slab;
pub use units::{fmt_num, BitsPerSec, Bytes, SimTime};
