//! Checks a step's `json = { … }` against the Protobuf message it will be encoded as, when the scenario is
//! loaded: every key a field of its message (by its proto name or its JSON name, as proto3's JSON mapping
//! accepts both), every literal value of a type that field can take. A wrong field is refused with its path
//! (`json.board.titel`), so `validate` finds the typo a night would otherwise fail on every request. Values
//! written as templates (`"{{ id }}"`) are known only when rendered and are checked then, by the encoder.

use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use toml::Value;

/// Checks `value` (the step's `json`) as message `message`; `Err` names the first wrong field by its path
/// from `json`.
pub(super) fn check_message(value: &Value, message: &MessageDescriptor) -> Result<(), String> {
    message_at(value, message, "json")
}

fn message_at(value: &Value, message: &MessageDescriptor, path: &str) -> Result<(), String> {
    // The well-known types (Timestamp, Duration, Struct, wrappers…) have JSON forms of their own, which the
    // encoder checks.
    if message.full_name().starts_with("google.protobuf.") || is_template(value) {
        return Ok(());
    }
    let Value::Table(table) = value else {
        return Err(format!("{path}: message `{}` is written as a table, not {}", message.full_name(), kind_of(value)));
    };
    for (key, item) in table {
        let at = format!("{path}.{key}");
        let field =
            message.get_field_by_name(key).or_else(|| message.get_field_by_json_name(key)).ok_or_else(|| {
                let fields: Vec<String> = message.fields().map(|f| f.name().to_owned()).collect();
                format!(
                    "{at}: message `{}` has no field `{key}` (its fields: {})",
                    message.full_name(),
                    fields.join(", ")
                )
            })?;
        field_at(item, &field, &at)?;
    }
    Ok(())
}

fn field_at(value: &Value, field: &FieldDescriptor, path: &str) -> Result<(), String> {
    if is_template(value) {
        return Ok(());
    }
    if field.is_map() {
        let Value::Table(entries) = value else {
            return Err(format!("{path}: map field `{}` is written as a table, not {}", field.name(), kind_of(value)));
        };
        let Kind::Message(entry) = field.kind() else { return Ok(()) };
        let value_field = entry.map_entry_value_field();
        return entries.iter().try_for_each(|(k, v)| single(v, &value_field.kind(), &format!("{path}.{k}")));
    }
    if field.is_list() {
        let Value::Array(items) = value else {
            return Err(format!(
                "{path}: repeated field `{}` is written as an array, not {}",
                field.name(),
                kind_of(value)
            ));
        };
        return items.iter().enumerate().try_for_each(|(i, v)| single(v, &field.kind(), &format!("{path}[{i}]")));
    }
    single(value, &field.kind(), path)
}

/// One value of a field of kind `kind`.
fn single(value: &Value, kind: &Kind, path: &str) -> Result<(), String> {
    if is_template(value) {
        return Ok(());
    }
    let fits = match kind {
        Kind::Message(message) => return message_at(value, message, path),
        Kind::Enum(values) => match value {
            Value::String(name) => {
                return values.get_value_by_name(name).map(|_| ()).ok_or_else(|| {
                    let names: Vec<String> = values.values().map(|v| v.name().to_owned()).collect();
                    format!(
                        "{path}: enum `{}` has no value `{name}` (its values: {})",
                        values.full_name(),
                        names.join(", ")
                    )
                });
            }
            Value::Integer(_) => true,
            _ => false,
        },
        Kind::Bool => matches!(value, Value::Boolean(_)),
        Kind::String | Kind::Bytes => matches!(value, Value::String(_)),
        // proto3's JSON takes numbers as strings too, and "NaN", "Infinity" and "-Infinity".
        Kind::Double | Kind::Float => match value {
            Value::Float(_) | Value::Integer(_) => true,
            Value::String(s) => matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") || s.parse::<f64>().is_ok(),
            _ => false,
        },
        // proto3's JSON takes integers as numbers or as strings (64-bit ones are written as strings), within
        // the field's range either way.
        integer => match value {
            Value::Integer(i) => in_range(integer, i128::from(*i)),
            Value::String(s) => s.parse::<i128>().is_ok_and(|i| in_range(integer, i)),
            _ => false,
        },
    };
    if fits {
        Ok(())
    } else {
        let name = kind_name(kind);
        let article = if name.starts_with("int") { "an" } else { "a" };
        Err(format!("{path}: {article} {name} field cannot hold {}", kind_of(value)))
    }
}

/// Whether an integer field of `kind` holds `value`.
fn in_range(kind: &Kind, value: i128) -> bool {
    let (low, high) = match kind {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => (i128::from(i32::MIN), i128::from(i32::MAX)),
        Kind::Uint32 | Kind::Fixed32 => (0, i128::from(u32::MAX)),
        Kind::Uint64 | Kind::Fixed64 => (0, i128::from(u64::MAX)),
        _ => (i128::from(i64::MIN), i128::from(i64::MAX)),
    };
    (low..=high).contains(&value)
}

/// A string with `{{`: its value is known only when rendered.
fn is_template(value: &Value) -> bool {
    matches!(value, Value::String(s) if s.contains("{{"))
}

fn kind_of(value: &Value) -> String {
    match value {
        Value::String(s) => format!("the string \"{}\"", crate::outside_text::printable(s)),
        Value::Integer(i) => format!("the integer {i}"),
        Value::Float(f) => format!("the number {f}"),
        Value::Boolean(b) => format!("{b}"),
        Value::Datetime(_) => "a date".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Table(_) => "a table".to_owned(),
    }
}

fn kind_name(kind: &Kind) -> String {
    match kind {
        Kind::Message(m) => m.full_name().to_owned(),
        Kind::Enum(e) => e.full_name().to_owned(),
        other => format!("{other:?}").to_lowercase(),
    }
}
