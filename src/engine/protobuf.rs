//! Protobuf bodies: a step's JSON rendered, then encoded as its message type (framed as one gRPC message for a
//! gRPC call), and an answer's message decoded back to JSON for `expect` and `extract`. Both through the
//! message's descriptor (prost-reflect, proto3's JSON mapping), so no code is generated for a scenario's types.

use prost::Message as _;
use prost_reflect::{DynamicMessage, Kind, MessageDescriptor, SerializeOptions};
use serde_json::Value;

use super::failure::Failure;
use crate::metrics::ErrorClass;
use crate::scenario::plan::ProtoBody;
use crate::scenario::template::RenderContext;

/// The body of `body` rendered now: the message's bytes, after gRPC's 5-byte prefix (not compressed, its
/// length) when framed. A rendered value the message cannot hold (`"abc"` for an `int32`) fails the request,
/// with the field's path.
pub(super) fn encode(body: &ProtoBody, cx: &mut RenderContext<'_>) -> Result<Vec<u8>, Failure> {
    let mut json = body.json.render(cx);
    strings_where_strings_go(&mut json, &body.message);
    let mut track = serde_path_to_error::Track::new();
    let message =
        DynamicMessage::deserialize(body.message.clone(), serde_path_to_error::Deserializer::new(json, &mut track))
            .map_err(|e| {
                let message = format!(
                    "cannot encode the request as `{}`: at json.{}: {e}",
                    body.message.full_name(),
                    track.path()
                );
                Failure::new(ErrorClass::Protocol, message)
            })?;
    let length = message.encoded_len();
    let mut bytes = Vec::with_capacity(length + 5);
    if body.grpc_framed {
        bytes.push(0);
        // A message past 4 GiB cannot come from a scenario's JSON (bounded by the scenario file's size).
        bytes.extend_from_slice(&u32::try_from(length).unwrap_or(u32::MAX).to_be_bytes());
    }
    message.encode_raw(&mut bytes);
    Ok(bytes)
}

/// `bytes` decoded as `message`, as JSON: fields by their `.proto` names (as the scenario's writer reads them
/// in the `.proto` file), every field present (a zero is a value `expect` can test), 64-bit integers as
/// numbers.
pub(super) fn decode(message: &MessageDescriptor, bytes: &[u8]) -> Result<Value, String> {
    let decoded = DynamicMessage::decode(message.clone(), bytes)
        .map_err(|e| format!("the answer is not a `{}` message: {e}", message.full_name()))?;
    let options =
        SerializeOptions::new().skip_default_fields(false).use_proto_field_name(true).stringify_64_bit_integers(false);
    decoded
        .serialize_with_options(serde_json::value::Serializer, &options)
        .map_err(|e| format!("the `{}` answer cannot be written as JSON: {e}", message.full_name()))
}

/// A template that is one expression keeps its JSON type (`"{{ seq() }}"` renders the number 7), where a string
/// field wants `"7"`: proto3's JSON takes a number as a string for a numeric field, not the reverse. So each
/// number or boolean rendered into a string field (or a list or map of strings) is written as a string.
fn strings_where_strings_go(json: &mut Value, message: &MessageDescriptor) {
    let Value::Object(fields) = json else { return };
    for (key, value) in fields.iter_mut() {
        let Some(field) = message.get_field_by_name(key).or_else(|| message.get_field_by_json_name(key)) else {
            continue;
        };
        let kind = if field.is_map() {
            let Kind::Message(entry) = field.kind() else { continue };
            entry.map_entry_value_field().kind()
        } else {
            field.kind()
        };
        let items: Vec<&mut Value> = match value {
            Value::Array(items) if field.is_list() => items.iter_mut().collect(),
            Value::Object(entries) if field.is_map() => entries.values_mut().collect(),
            one => vec![one],
        };
        for item in items {
            match (&kind, &*item) {
                (Kind::String, Value::Number(_) | Value::Bool(_)) => *item = Value::String(item.to_string()),
                (Kind::Message(inner), Value::Object(_)) => strings_where_strings_go(item, inner),
                _ => {}
            }
        }
    }
}
