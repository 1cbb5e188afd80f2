//! # lbsim-engine
//!
//! The discrete-event core of lbsim, in the spirit of htsim's ~2k-line core:
//! it knows nothing about networks.
//!
//! - [`units`]: `SimTime` (integer picoseconds), `Bytes`, `BitsPerSec`, with
//!   serialisation delay computed in exact integer arithmetic;
//! - [`queue`]: the future-event list, ordered by `(time, insertion seq)`;
//! - [`rng`]: one root seed split into independent named streams;
//! - [`slab`]: index-addressed storage for packets;
//! - [`prefetch`], [`prefetch_lines`]: cache hints for a model's run loop.
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

/// Hints the CPU to bring the cache line holding `p` into cache (a no-op
/// off x86-64). The run loop prefetches the state of the *next* event while
/// it handles the current one, so large fabrics overlap their cache misses.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
    #[cfg(target_arch = "x86_64")]
    #[allow(unused_unsafe)]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
}

/// Prefetches every cache line of `*p`.
#[inline(always)]
pub fn prefetch_lines<T>(p: &T) {
    let a = p as *const T as *const u8;
    let mut off = 0;
    while off < std::mem::size_of::<T>() {
        prefetch(a.wrapping_add(off));
        off += 64;
    }
    // the last line, when `*p` does not start on a line boundary
    prefetch(a.wrapping_add(std::mem::size_of::<T>().saturating_sub(1)));
}
