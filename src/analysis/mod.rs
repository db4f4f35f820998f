//! Judging a run against the nights before it. Pure: data in, verdicts out, no I/O and no clock.

pub mod baseline;
