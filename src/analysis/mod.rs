//! Judging a run against the nights before it. Pure: data in, verdicts out, no I/O and no clock.
//!
//! `baseline` names the earlier runs; `level` finds where a nightly series stands and how noisy it is;
//! `detector` decides whether tonight's value of one metric regressed; `judge` applies that to every
//! endpoint × metric of a run, plus the absolute gates.

pub mod baseline;
pub mod detector;
pub mod judge;
pub mod level;
