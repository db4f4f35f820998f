//! A gRPC call's answer read as gRPC reads it: HTTP status 200, then `grpc-status` (in the trailers, or in the
//! headers of a trailers-only answer) as the outcome, each code not accepted its own error class; then the
//! length-prefixed messages of the body, decoded to JSON for `expect` and `extract` (a unary call's one
//! message, a server stream's messages as an array).

use serde_json::Value;

use super::answer::Answer;
use super::failure::Failure;
use crate::metrics::{ErrorClass, GrpcCode};
use crate::scenario::plan::{GrpcCall, Step};

/// Most messages of one answer decoded for `expect` and `extract`: `max_body` bounds a stream's bytes, but a
/// stream of tiny messages within it would decode into far more memory than its bytes (a JSON value is tens
/// of bytes however small its message).
pub(super) const MAX_MESSAGES: usize = 10_000;

/// Checks the answer to gRPC step `step` (calling `call`): `Ok` with its messages as JSON when `json` is asked
/// for (`Value::Null` otherwise), or the failure in its class.
pub(super) fn check(step: &Step, call: &GrpcCall, answer: &Answer, json: bool) -> Result<Value, Failure> {
    if answer.status != 200 {
        return Err(super::failure::unexpected_status(answer));
    }
    let code = status(answer)?;
    if !step.expect.grpc_status.contains(&code) {
        let detail = answer
            .trailer("grpc-message")
            .or_else(|| answer.header("grpc-message"))
            .and_then(Result::ok)
            .map(|m| format!(": {}", crate::outside_text::printable(&percent_decoded(m))))
            .unwrap_or_default();
        let class = ErrorClass::grpc(code).unwrap_or(ErrorClass::Assertion);
        // A step that expects another outcome than OK says which: "gRPC status OK" alone read as no failure.
        let expected = match step.expect.grpc_status.as_slice() {
            [GrpcCode::Ok] => String::new(),
            codes => {
                let names: Vec<&str> = codes.iter().map(|c| c.name()).collect();
                format!(" (expected {})", names.join(" or "))
            }
        };
        return Err(Failure::new(class, format!("gRPC status {code}{detail}{expected}")));
    }
    if !json {
        return Ok(Value::Null);
    }
    let output = call.method.output();
    let messages = messages(&answer.body)?;
    let mut decoded = Vec::with_capacity(messages.len());
    for message in messages {
        decoded.push(super::protobuf::decode(&output, message).map_err(|e| Failure::new(ErrorClass::Assertion, e))?);
    }
    if call.method.is_server_streaming() {
        return Ok(Value::Array(decoded));
    }
    match <[Value; 1]>::try_from(decoded) {
        Ok([one]) => Ok(one),
        Err(all) => {
            Err(Failure::new(ErrorClass::Protocol, format!("a unary call answered {} messages, not one", all.len())))
        }
    }
}

/// A request of `step` that failed: past a gRPC call's own deadline (shorter than the target's `timeout`), a
/// `timeout` is `grpc_deadline_exceeded`, as a gRPC client's deadline ends a call.
pub(super) fn past_deadline(step: &Step, timeout: std::time::Duration, failure: Failure) -> Failure {
    let deadline = step.grpc.as_ref().and_then(|call| call.deadline);
    if failure.class == ErrorClass::Timeout && deadline.is_some_and(|d| d < timeout) {
        let message = format!("no answer within the call's deadline: {}", failure.message);
        return Failure::new(ErrorClass::GrpcDeadlineExceeded, message);
    }
    failure
}

/// The call's `grpc-status`; an answer without one is not gRPC.
fn status(answer: &Answer) -> Result<GrpcCode, Failure> {
    let text = answer.trailer("grpc-status").or_else(|| answer.header("grpc-status"));
    let Some(Ok(text)) = text else {
        let message = "the answer has no grpc-status: the server did not answer as gRPC";
        return Err(Failure::new(ErrorClass::Protocol, message));
    };
    // A code past 16 is UNKNOWN, as gRPC's clients read it.
    Ok(text.trim().parse::<u32>().ok().and_then(GrpcCode::from_number).unwrap_or(GrpcCode::Unknown))
}

/// The length-prefixed messages of a gRPC body.
fn messages(mut body: &[u8]) -> Result<Vec<&[u8]>, Failure> {
    let bad = |what: &str| Failure::new(ErrorClass::Protocol, format!("the gRPC answer {what}"));
    let mut messages = Vec::new();
    while !body.is_empty() {
        if messages.len() == MAX_MESSAGES {
            let message = format!("the server stream sent more than {MAX_MESSAGES} messages, the most a step decodes");
            return Err(Failure::new(ErrorClass::GrpcTooManyMessages, message));
        }
        let Some((prefix, rest)) = body.split_first_chunk::<5>() else {
            return Err(bad("ends inside a message prefix"));
        };
        if prefix[0] != 0 {
            return Err(bad("has a compressed message, though degrade asked for none"));
        }
        let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        if rest.len() < length {
            return Err(bad("ends inside a message"));
        }
        let (message, rest) = rest.split_at(length);
        messages.push(message);
        body = rest;
    }
    Ok(messages)
}

/// `grpc-message`'s text: percent-encoded on the wire.
fn percent_decoded(text: &str) -> String {
    let bytes: Vec<u8> = form_urlencoded::parse(format!("m={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned().into_bytes())
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_splits_into_its_messages_and_a_cut_one_is_refused() {
        let body = [0, 0, 0, 0, 2, 8, 1, 0, 0, 0, 0, 0];
        assert_eq!(messages(&body).unwrap(), vec![&[8u8, 1][..], &[][..]]);
        assert_eq!(messages(&body[..4]).unwrap_err().class, ErrorClass::Protocol);
        assert_eq!(messages(&[0, 0, 0, 0, 3, 1]).unwrap_err().class, ErrorClass::Protocol);
        assert_eq!(messages(&[1, 0, 0, 0, 0]).unwrap_err().class, ErrorClass::Protocol);
        assert_eq!(percent_decoded("no%20such%20board+x"), "no such board+x");
        let many: Vec<u8> = std::iter::repeat_n([0u8, 0, 0, 0, 0], MAX_MESSAGES + 1).flatten().collect();
        assert_eq!(messages(&many).unwrap_err().class, ErrorClass::GrpcTooManyMessages);
    }
}
