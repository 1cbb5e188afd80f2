//! Scheme parameters: each scheme declares its parameters once (name, unit,
//! default, meaning); the same table drives parsing, defaults, validation
//! (unknown or mistyped keys are errors naming the key) and `lbsim schemes`.

use lbsim_engine::{fmt_num, SimTime};
use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Num(f64),
    Bool(bool),
    Str(String),
    List(Vec<f64>),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Num(x) => write!(f, "{}", fmt_num(*x)),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::List(v) => write!(f, "{v:?}"),
        }
    }
}

/// One declared parameter.
#[derive(Clone, Copy, Debug)]
pub struct ParamDef {
    pub name: &'static str,
    pub unit: &'static str,
    pub default: DefaultValue,
    pub help: &'static str,
}

/// The parameter of the schemes that clear CE at the receiving edge
/// (`GuestView::ce_unless`): true lets the marks reach the host's transport.
pub const GUEST_SEES_CE: &str = "guest_sees_ce";

/// A numeric parameter (const-constructible).
pub const fn num(name: &'static str, unit: &'static str, default: f64, help: &'static str) -> ParamDef {
    ParamDef { name, unit, default: DefaultValue::Num(default), help }
}

/// A parameter default (const-constructible).
#[derive(Clone, Copy, Debug)]
pub enum DefaultValue {
    Num(f64),
    Bool(bool),
    Str(&'static str),
    /// Empty list.
    List,
}

impl fmt::Display for DefaultValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefaultValue::Num(x) => write!(f, "{x}"),
            DefaultValue::Bool(b) => write!(f, "{b}"),
            DefaultValue::Str(s) => write!(f, "{s:?}"),
            DefaultValue::List => write!(f, "[]"),
        }
    }
}

/// An error naming the offending parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamError {
    pub key: String,
    pub msg: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lb.params.{}: {}", self.key, self.msg)
    }
}
impl std::error::Error for ParamError {}

/// Parameters given in a scenario, read against a scheme's declarations.
pub struct Params<'a> {
    given: &'a BTreeMap<String, Value>,
    defs: &'static [ParamDef],
}

impl<'a> Params<'a> {
    /// Checks that every given key is declared.
    pub fn new(given: &'a BTreeMap<String, Value>, defs: &'static [ParamDef], scheme: &str) -> Result<Self, ParamError> {
        for k in given.keys() {
            if !defs.iter().any(|d| d.name == k) {
                let known: Vec<&str> = defs.iter().map(|d| d.name).collect();
                return Err(ParamError {
                    key: k.clone(),
                    msg: if known.is_empty() {
                        format!("scheme {scheme:?} takes no parameters")
                    } else {
                        format!("unknown parameter of scheme {scheme:?}; it takes: {}", known.join(", "))
                    },
                });
            }
        }
        Ok(Params { given, defs })
    }

    fn def(&self, name: &str) -> &'static ParamDef {
        self.defs.iter().find(|d| d.name == name).unwrap_or_else(|| panic!("parameter {name} not declared"))
    }

    pub fn num(&self, name: &str) -> Result<f64, ParamError> {
        let d = self.def(name);
        match (self.given.get(name), d.default) {
            (Some(Value::Num(x)), _) if x.is_finite() => Ok(*x),
            (Some(v), _) => Err(ParamError { key: name.into(), msg: format!("expected a number ({}), got {v}", d.unit) }),
            (None, DefaultValue::Num(x)) => Ok(x),
            (None, _) => unreachable!("{name}: default is not a number"),
        }
    }

    /// A number that must be > 0.
    pub fn positive(&self, name: &str) -> Result<f64, ParamError> {
        let x = self.num(name)?;
        if x <= 0.0 {
            return Err(ParamError { key: name.into(), msg: format!("must be > 0, got {}", fmt_num(x)) });
        }
        Ok(x)
    }

    pub fn non_negative(&self, name: &str) -> Result<f64, ParamError> {
        let x = self.num(name)?;
        if x < 0.0 {
            return Err(ParamError { key: name.into(), msg: format!("must be >= 0, got {}", fmt_num(x)) });
        }
        Ok(x)
    }

    /// A duration declared in "us" or "ms", converted and checked in
    /// picoseconds (>= 1 ps after rounding, or >= 0 with `allow_zero`; at
    /// most a day), so no timer can be 0 or overflow the clock.
    pub fn duration(&self, name: &str, allow_zero: bool) -> Result<SimTime, ParamError> {
        let x = self.num(name)?;
        let d = self.def(name);
        let ps_per_unit = match d.unit {
            "us" => 1e6,
            "ms" => 1e9,
            u => return Err(ParamError { key: name.into(), msg: format!("declared in {u:?}, not a duration") }),
        };
        // checked in the unit the user wrote
        SimTime::input(x, ps_per_unit, d.unit, !allow_zero).map_err(|m| ParamError { key: name.into(), msg: m })
    }

    /// A duration declared in RTTs: `rtt` times the value, checked like
    /// [`Params::duration`] after the product is rounded to picoseconds.
    pub fn in_rtts(&self, name: &str, rtt: SimTime) -> Result<SimTime, ParamError> {
        let x = self.positive(name)?;
        SimTime::input_us(rtt.as_us_f64() * x, true)
            .map_err(|m| ParamError { key: name.into(), msg: format!("{} RTT of {} us: {m}", fmt_num(x), fmt_num(rtt.as_us_f64())) })
    }

    /// A whole number from 1 to `max` (table sizes, counts, bits).
    pub fn count(&self, name: &str, max: u64) -> Result<u64, ParamError> {
        let x = self.num(name)?;
        if x.fract() != 0.0 || x < 1.0 || x > max as f64 {
            return Err(ParamError { key: name.into(), msg: format!("must be a whole number from 1 to {max}, got {}", fmt_num(x)) });
        }
        Ok(x as u64)
    }

    pub fn boolean(&self, name: &str) -> Result<bool, ParamError> {
        let d = self.def(name);
        match (self.given.get(name), d.default) {
            (Some(Value::Bool(b)), _) => Ok(*b),
            (Some(v), _) => Err(ParamError { key: name.into(), msg: format!("expected true or false, got {v}") }),
            (None, DefaultValue::Bool(b)) => Ok(b),
            (None, _) => unreachable!(),
        }
    }

    pub fn string(&self, name: &str, allowed: &[&str]) -> Result<String, ParamError> {
        let d = self.def(name);
        let s = match (self.given.get(name), d.default) {
            (Some(Value::Str(s)), _) => s.clone(),
            (Some(v), _) => return Err(ParamError { key: name.into(), msg: format!("expected a string, got {v}") }),
            (None, DefaultValue::Str(s)) => s.to_string(),
            (None, _) => unreachable!(),
        };
        if !allowed.is_empty() && !allowed.contains(&s.as_str()) {
            return Err(ParamError { key: name.into(), msg: format!("must be one of {}, got {s:?}", allowed.join(", ")) });
        }
        Ok(s)
    }

    pub fn list(&self, name: &str) -> Result<Vec<f64>, ParamError> {
        match self.given.get(name) {
            Some(Value::List(v)) => Ok(v.clone()),
            Some(v) => Err(ParamError { key: name.into(), msg: format!("expected a list of numbers, got {v}") }),
            None => Ok(vec![]),
        }
    }
}
