//! The first five minutes: a bundled demo API to test ([`target`]), a local stand-in for Slack
//! ([`receiver`]), and `degrade demo`, which shows the whole nightly job on them ([`story`]).

mod receiver;
pub mod story;
pub mod target;
