//! The first five minutes: a bundled demo API to test ([`target`]), with one gRPC method ([`grpc`]), with a board channel over WebSocket
//! ([`board_channel`]), its CPU exposed and burnt on demand ([`cpu`]) and a board export rendered by a bounded
//! pool ([`export`]: a capacity known in advance), deployed build by build as a process of its own
//! ([`deploy`]), a local stand-in for Slack ([`receiver`]), and `degrade demo`, which shows the whole nightly
//! job on them ([`story`]), capacity nights included ([`capacity_story`]).

pub mod board_channel;
pub mod capacity_story;
pub mod cpu;
pub mod deploy;
pub mod export;
pub mod grpc;
mod receiver;
pub mod story;
pub mod target;
