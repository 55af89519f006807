//! The thresholds of the diagnoses: the catalog's defaults, changed by `amqpeek.toml`'s
//! `[diagnosis-threshold]` table and `--diagnosis-threshold ID=N` (seconds; a count for
//! `amqp.delivery.redelivery-loop`; seconds before the expiry for `amqp10.cbs.token-expiring`).

use crate::base::{Check, Limit};

use super::catalog;

/// Thresholds changed from the catalog's defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Thresholds {
    set: Vec<(&'static str, Limit)>,
}

/// The longest threshold accepted: a day.
const MAX_SECS: f64 = 86_400.0;

impl Thresholds {
    /// The catalog's defaults.
    pub fn new() -> Thresholds {
        Thresholds::default()
    }

    /// Set `id`'s threshold to `value` (seconds, or a count); an unknown id or a value out of
    /// range is an error naming it.
    pub fn set(&mut self, id: &str, value: f64) -> Result<(), String> {
        let check = catalog::check(id).ok_or_else(|| format!("unknown diagnosis id {id:?}"))?;
        if !(0.0..=MAX_SECS).contains(&value) {
            return Err(format!(
                "{id}: threshold {value} out of range (0 to {MAX_SECS})"
            ));
        }
        let us = (value * 1e6) as i64;
        let limit = match check.default {
            Limit::Count(_) if value.fract() != 0.0 || value < 1.0 => {
                return Err(format!(
                    "{id}: the threshold is a count (a whole number from 1)"
                ));
            }
            Limit::Count(_) => Limit::Count(value as u32),
            Limit::Before(_) => Limit::Before(us),
            Limit::After(_) | Limit::Negotiated => Limit::After(us),
        };
        self.set.retain(|(i, _)| *i != check.id);
        self.set.push((check.id, limit));
        Ok(())
    }

    /// Parse and set `ID=N` (the command line's form).
    pub fn set_arg(&mut self, arg: &str) -> Result<(), String> {
        let (id, v) = arg
            .split_once('=')
            .ok_or_else(|| format!("{arg:?}: expected ID=SECONDS"))?;
        let v: f64 = v
            .trim()
            .parse()
            .map_err(|_| format!("{arg:?}: {v:?} is not a number"))?;
        self.set(id.trim(), v)
    }

    /// `check`'s threshold.
    #[inline]
    pub fn limit(&self, check: &Check) -> Limit {
        if self.set.is_empty() {
            return check.default;
        }
        self.set
            .iter()
            .find(|(id, _)| *id == check.id)
            .map_or(check.default, |(_, l)| *l)
    }

    /// The count a [`Limit::Count`] check needs (its default for others).
    #[inline]
    pub fn count(&self, check: &Check) -> u32 {
        match self.limit(check) {
            Limit::Count(n) => n,
            _ => u32::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threshold_replaces_the_default_and_unknown_ids_are_refused() {
        let mut t = Thresholds::new();
        t.set_arg("amqp10.link.no-credit=2.5").unwrap();
        assert_eq!(t.limit(&catalog::NO_CREDIT), Limit::After(2_500_000));
        assert_eq!(t.limit(&catalog::UNSETTLED), catalog::UNSETTLED.default);
        assert!(t.set_arg("amqp10.link.nope=1").is_err());
        assert!(t.set_arg("amqp10.link.no-credit=-1").is_err());
        assert!(t.set_arg("amqp.delivery.redelivery-loop=2.5").is_err());
        t.set_arg("amqp.delivery.redelivery-loop=3").unwrap();
        assert_eq!(t.count(&catalog::REDELIVERED), 3);
    }
}
