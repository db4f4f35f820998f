//! gRPC calls in a recording: told by their content type, their method read from the path, their request
//! message taken out of gRPC's framing, and every value in that message read from Protobuf's wire format
//! without its `.proto`, so the scrubber can judge the bytes as it judges text: a body whose values cannot all
//! be read cannot be checked, and is never kept.

/// One recorded gRPC call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcRequest {
    /// `package.Service/Method`, from the path.
    pub method: String,
    /// The request message's bytes (without gRPC's 5-byte prefix), or why there is none to keep.
    pub message: Result<Vec<u8>, &'static str>,
}

/// Whether a content type is gRPC's (`application/grpc`, `application/grpc+proto`); gRPC-Web is not, its
/// framing differs.
#[must_use]
pub fn is_grpc(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/grpc" || essence.strip_prefix("application/grpc+").is_some_and(|codec| !codec.is_empty())
}

impl GrpcRequest {
    /// The call to `path` whose body was `body` (`None`: not recorded).
    #[must_use]
    pub fn new(path: &str, body: Option<&[u8]>) -> Self {
        let method = path.trim_start_matches('/').to_owned();
        let message = body.map_or(Err("the recording holds no request body"), unframe);
        Self { method, message }
    }
}

/// The one message of a unary call's body: gRPC's prefix is a compressed flag and the length (big-endian).
fn unframe(body: &[u8]) -> Result<Vec<u8>, &'static str> {
    let (&[flag, a, b, c, d], rest) = body.split_first_chunk::<5>().ok_or("the body is not a gRPC message")?;
    if flag != 0 {
        return Err("the message is compressed");
    }
    let length = u32::from_be_bytes([a, b, c, d]) as usize;
    match rest.len().cmp(&length) {
        std::cmp::Ordering::Equal => Ok(rest.to_vec()),
        std::cmp::Ordering::Greater => Err("the body holds several messages (a client stream)"),
        std::cmp::Ordering::Less => Err("the body is cut short"),
    }
}

/// Deepest nesting read: a deeper message is not read (and so not kept).
const MAX_DEPTH: usize = 32;

/// Every value in a Protobuf message, as text: numbers in decimal, length-delimited fields as text when they
/// are UTF-8 and, when they read as a message, the values inside too. `None` when the bytes are not a
/// well-formed message (or use groups): their values cannot all be known.
#[must_use]
pub fn wire_values(bytes: &[u8]) -> Option<Vec<String>> {
    let mut values = Vec::new();
    walk(bytes, 0, &mut values)?;
    Some(values)
}

fn walk(mut bytes: &[u8], depth: usize, values: &mut Vec<String>) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        if key >> 3 == 0 {
            return None;
        }
        match key & 7 {
            0 => values.push(varint(&mut bytes)?.to_string()),
            1 => values.push(u64::from_le_bytes(take(&mut bytes, 8)?.try_into().ok()?).to_string()),
            5 => values.push(u32::from_le_bytes(take(&mut bytes, 4)?.try_into().ok()?).to_string()),
            2 => {
                let length = usize::try_from(varint(&mut bytes)?).ok()?;
                let field = take(&mut bytes, length)?;
                if let Ok(text) = std::str::from_utf8(field) {
                    values.push(text.to_owned());
                }
                // Bytes that read as a message may be one: its values count too. Bytes that are neither text
                // nor a message are opaque, and cannot be checked.
                let mut inner = Vec::new();
                match walk(field, depth + 1, &mut inner) {
                    Some(()) => values.extend(inner),
                    None if std::str::from_utf8(field).is_ok() => {}
                    None => return None,
                }
            }
            _ => return None,
        }
    }
    Some(())
}

fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if bytes.len() < n {
        return None;
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Some(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Field 1 a string, field 2 a varint, field 3 a nested message with a string.
    fn message() -> Vec<u8> {
        let mut m = vec![0x0a, 5];
        m.extend_from_slice(b"hello");
        m.extend_from_slice(&[0x10, 0x96, 0x01]);
        m.extend_from_slice(&[0x1a, 7, 0x0a, 5]);
        m.extend_from_slice(b"inner");
        m
    }

    #[test]
    fn every_value_of_a_message_is_read_nested_ones_too() {
        let values = wire_values(&message()).unwrap();
        assert!(values.contains(&"hello".to_owned()) && values.contains(&"150".to_owned()), "{values:?}");
        assert!(values.contains(&"inner".to_owned()), "{values:?}");
        // A field cut short, an unknown wire type: not a message, so not checked, so not kept.
        assert_eq!(wire_values(&[0x0a, 9, b'x']), None);
        assert_eq!(wire_values(&[0x0b]), None);
    }

    #[test]
    fn a_unary_body_is_unframed_and_anything_else_is_said() {
        let mut framed = vec![0, 0, 0, 0, 3, 0x08, 0x96, 0x01];
        assert_eq!(GrpcRequest::new("/a.B/C", Some(&framed)).message, Ok(vec![0x08, 0x96, 0x01]));
        assert_eq!(GrpcRequest::new("/a.B/C", Some(&framed)).method, "a.B/C");
        framed[0] = 1;
        assert_eq!(GrpcRequest::new("/a.B/C", Some(&framed)).message, Err("the message is compressed"));
        assert!(is_grpc("application/grpc") && is_grpc("application/grpc+proto; charset=x"));
        assert!(!is_grpc("application/grpc-web") && !is_grpc("application/json"));
    }
}
