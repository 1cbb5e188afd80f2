//! Checks of single values shared by the sections: durations and rates as
//! the engine's units will hold them, positive numbers, CDF units, and a
//! word from a list.

use super::{bad, ScenarioError};
use lbsim_engine::{BitsPerSec, SimTime};
use serde::{Deserialize, Deserializer};

/// Bytes per packet of a packet-form CDF: absent, or a number >= 1.
pub(super) fn unit_bytes(field: &str, u: Option<f64>) -> Result<(), ScenarioError> {
    match u {
        Some(u) if !(u.is_finite() && u >= 1.0) => Err(bad(field, format!("must be a number of bytes >= 1, got {}", lbsim_engine::fmt_num(u)))),
        _ => Ok(()),
    }
}
/// A finite number > 0.
pub(super) fn pos(field: &str, x: f64) -> Result<(), ScenarioError> {
    if !(x.is_finite() && x > 0.0) {
        return Err(bad(field, format!("must be > 0, got {x}")));
    }
    Ok(())
}
// times and rates are checked after conversion to the engine's units
// (>= 1 ps / >= 1 Mb/s after rounding, at most a day / 100 Tb/s)
/// A time in µs the engine's clock can hold (> 0 if `positive`).
pub(super) fn dur_us(field: &str, us: f64, positive: bool) -> Result<(), ScenarioError> {
    SimTime::input_us(us, positive).map(|_| ()).map_err(|m| bad(field, m))
}
/// `must be "a", "b" or "c", got "x"` for quoted words `q` and the value given.
pub(super) fn must_be(q: &[String], value: &str) -> String {
    let (last, rest) = q.split_last().expect("at least one allowed value");
    let list = if rest.is_empty() { last.clone() } else { format!("{} or {last}", rest.join(", ")) };
    format!("must be {list}, got {value:?}")
}
/// A time in ms the engine's clock can hold (> 0 if `positive`).
pub(super) fn dur_ms(field: &str, ms: f64, positive: bool) -> Result<(), ScenarioError> {
    SimTime::input(ms, 1e9, "ms", positive).map(|_| ()).map_err(|m| bad(field, m))
}
/// A link rate in Gb/s the engine can hold.
pub(super) fn rate(field: &str, gbps: f64) -> Result<(), ScenarioError> {
    BitsPerSec::input_gbps(gbps).map(|_| ()).map_err(|m| bad(field, m))
}

/// Reads a choice (one of lbsim-tcp's enums, or the scenario's own) through a string, so a value of another
/// type is reported as any string key's is ("expected a string") and an
/// unknown word lists the words the enum has.
pub(super) fn word<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    T::deserialize(serde::de::value::StringDeserializer::<D::Error>::new(String::deserialize(d)?))
}

/// [`word`] for an optional key (with `#[serde(default)]`: absent is `None`).
pub(super) fn some_word<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    word(d).map(Some)
}
