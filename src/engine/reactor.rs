//! Registering a descriptor this crate owns with the runtime's event loop, for the given readiness.

use std::os::fd::AsRawFd;

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// Registers `inner` with the runtime's event loop for `interest`; must be called inside the runtime.
#[allow(
    deprecated,
    reason = "tokio deprecated the safe `AsyncFd::with_interest` for a descriptor that an `AsRawFd` type could \
              swap or close under it, and asks callers to promise otherwise in an `unsafe` `register`; the types \
              registered here (`OwnedFd`, `std::net::TcpStream`) own one descriptor for their whole life, which \
              is that promise, and this crate forbids unsafe code"
)]
pub(super) fn register<T: AsRawFd>(inner: T, interest: Interest) -> std::io::Result<AsyncFd<T>> {
    AsyncFd::with_interest(inner, interest)
}
