//! A recorded gRPC call as a `grpc = "package.Service/Method"` step. Without the service's `.proto` its request
//! cannot be written as the step's JSON, so the step sends an empty message and shows the recorded bytes in
//! hexadecimal beside it, for the user to rewrite by the `.proto`. Bytes are private data too: they are shown
//! only when every value in them was read (`grpc_body::wire_values`) and the scrubber found none it would
//! replace; otherwise they are withheld, and the report says why.

use std::fmt::Write as _;

use crate::tape::grpc_body::{GrpcRequest, wire_values};
use crate::tape::scrub::Scrubber;

/// The most bytes shown: the comment is for reading, not a copy of a large upload.
const MAX_SHOWN: usize = 256;

/// Headers of gRPC's transport, which the engine writes itself on every call, or which say nothing a replay
/// needs.
const TRANSPORT: [&str; 7] =
    ["content-type", "te", "grpc-timeout", "grpc-encoding", "grpc-accept-encoding", "accept-encoding", "user-agent"];

/// A gRPC step being built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcDraft {
    /// `package.Service/Method`.
    pub method: String,
    /// The recorded request in hexadecimal, or why it is not shown.
    pub recorded: Result<String, String>,
    /// The recorded request's length, when there was one.
    pub bytes: Option<usize>,
}

/// The step for `request`, its recorded bytes shown only if nothing in them is private.
pub(super) fn draft(request: &GrpcRequest, scrubber: &mut Scrubber) -> GrpcDraft {
    let bytes = request.message.as_ref().ok().map(Vec::len);
    let recorded = match &request.message {
        Err(why) => Err((*why).to_owned()),
        Ok(message) => checked_hex(message, scrubber),
    };
    GrpcDraft { method: request.method.clone(), recorded, bytes }
}

/// `message` in hexadecimal if every value in it is read and none is private.
fn checked_hex(message: &[u8], scrubber: &mut Scrubber) -> Result<String, String> {
    let Some(values) = wire_values(message) else {
        return Err("not readable as Protobuf, so it could not be checked for private values".to_owned());
    };
    // Judged as the scrubber judges any text; nothing is replaced here, so its counts stay those of the
    // requests it did change.
    let counts = scrubber.counts;
    let private = values.iter().any(|value| scrubber.value(None, value).is_some());
    scrubber.counts = counts;
    if private {
        scrubber.counts.bodies += 1;
        return Err("it holds a value the scrubber would replace (a card number, an email, a token…)".to_owned());
    }
    let mut hex = String::with_capacity(message.len().min(MAX_SHOWN) * 3);
    for byte in message.iter().take(MAX_SHOWN) {
        let _ = write!(hex, "{}{byte:02x}", if hex.is_empty() { "" } else { " " });
    }
    if message.len() > MAX_SHOWN {
        hex.push_str(" …");
    }
    Ok(hex)
}

/// Whether a recorded header belongs to gRPC's transport rather than to the call's metadata.
pub(super) fn is_transport(name: &str) -> bool {
    TRANSPORT.contains(&name) || name.starts_with(':')
}

/// The step's lines, as `write_flow` writes every step's.
pub(super) fn write_step(text: &mut String, grpc: &GrpcDraft) {
    let _ = writeln!(text, "\n  [[flow.step]]\n  grpc = {}", toml::Value::String(grpc.method.clone()));
    let length = grpc.bytes.map_or_else(String::new, |n| format!("{n} bytes, "));
    match &grpc.recorded {
        Ok(hex) if hex.is_empty() => text.push_str("  # recorded: an empty message\n"),
        Ok(hex) => {
            let _ = writeln!(text, "  # recorded ({length}Protobuf; write it as `json` by the .proto): {hex}");
        }
        Err(why) => {
            let _ = writeln!(text, "  # recorded request withheld ({length}{why}); write it as `json` by the .proto");
        }
    }
    text.push_str("  json = {}\n");
}

/// The scenario's `[proto]`, for the user to point at the services' files: written as a comment, since the
/// recording does not hold them, and `validate` then names what is missing.
pub(super) const PROTO_NOTE: &str = "\n# The recording calls gRPC methods: name the services' .proto files to run their steps.\n\
     # [proto]\n# files = [\"service.proto\"]\n";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::scrub::ScrubRules;

    fn framed(message: &[u8]) -> Vec<u8> {
        let mut body = vec![0];
        body.extend_from_slice(&(message.len() as u32).to_be_bytes());
        body.extend_from_slice(message);
        body
    }

    fn string_field(text: &str) -> Vec<u8> {
        let mut message = vec![0x0a, text.len() as u8];
        message.extend_from_slice(text.as_bytes());
        message
    }

    #[test]
    fn bytes_are_shown_only_when_nothing_in_them_is_private() {
        let mut scrubber = Scrubber::new(ScrubRules::default(), 9);
        let plain = GrpcRequest::new("/shop.Cart/Add", Some(&framed(&string_field("blue shoes"))));
        let drafted = draft(&plain, &mut scrubber);
        assert_eq!(drafted.recorded.as_deref(), Ok("0a 0a 62 6c 75 65 20 73 68 6f 65 73"));
        // A card number as text, nested in a message, or as a varint: never shown, in any form.
        let mut nested = vec![0x12, 0];
        let card = string_field("pay with 4111 1111 1111 1111");
        nested[1] = card.len() as u8;
        nested.extend_from_slice(&card);
        let mut varint = vec![0x08];
        let mut n: u64 = 4_111_111_111_111_111;
        while n >= 0x80 {
            varint.push((n as u8) | 0x80);
            n >>= 7;
        }
        varint.push(n as u8);
        for message in [card.clone(), nested, varint] {
            let drafted = draft(&GrpcRequest::new("/shop.Pay/Charge", Some(&framed(&message))), &mut scrubber);
            assert!(drafted.recorded.as_ref().is_err_and(|why| why.contains("scrubber")), "{drafted:?}");
            let mut text = String::new();
            write_step(&mut text, &drafted);
            assert!(!text.contains("4111") && !text.contains("34 31 31 31"), "{text}");
        }
        // Bytes that are not a message cannot be checked: withheld too.
        let opaque = draft(&GrpcRequest::new("/a.B/C", Some(&framed(&[0xff, 0xff]))), &mut scrubber);
        assert!(opaque.recorded.is_err(), "{opaque:?}");
    }
}
