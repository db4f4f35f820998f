//! The gRPC stub's reflection service (`grpc.reflection.v1alpha`, from `tests/fixtures/grpc/reflection.proto`):
//! it lists the stub's services and sends a file asked for by a symbol in it or by its name, alone, never its
//! imports, so a client must ask for those by name as it would of a server that leaves them out. Version `v1` is
//! not served (UNIMPLEMENTED), as on servers older than it.

use bytes::Bytes;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, Value};

/// The path the stub serves reflection at.
pub const PATH: &str = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

/// The answers to each request of `body` (the client's whole half of the stream), in order.
pub fn answers(pool: &DescriptorPool, body: &[u8]) -> Vec<DynamicMessage> {
    let request_type = pool.get_message_by_name("grpc.reflection.v1alpha.ServerReflectionRequest").unwrap();
    let response_type = pool.get_message_by_name("grpc.reflection.v1alpha.ServerReflectionResponse").unwrap();
    let mut rest = body;
    let mut answers = Vec::new();
    while rest.len() >= 5 {
        let length = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        let request = DynamicMessage::decode(request_type.clone(), &rest[5..5 + length]).unwrap();
        rest = &rest[5 + length..];
        let mut answer = DynamicMessage::new(response_type.clone());
        let text = |name: &str| {
            request
                .has_field_by_name(name)
                .then(|| request.get_field_by_name(name).unwrap().as_str().unwrap().to_owned())
        };
        let file = if let Some(symbol) = text("file_containing_symbol") {
            pool.get_service_by_name(&symbol)
                .map(|s| s.parent_file())
                .or_else(|| pool.get_message_by_name(&symbol).map(|m| m.parent_file()))
        } else {
            text("file_by_filename").and_then(|name| pool.get_file_by_name(&name))
        };
        if request.has_field_by_name("list_services") {
            let service_type = pool.get_message_by_name("grpc.reflection.v1alpha.ServiceResponse").unwrap();
            let list_type = pool.get_message_by_name("grpc.reflection.v1alpha.ListServiceResponse").unwrap();
            let names: Vec<Value> = pool
                .services()
                .map(|s| {
                    let mut service = DynamicMessage::new(service_type.clone());
                    service.set_field_by_name("name", Value::String(s.full_name().to_owned()));
                    Value::Message(service)
                })
                .collect();
            let mut list = DynamicMessage::new(list_type);
            list.set_field_by_name("service", Value::List(names));
            answer.set_field_by_name("list_services_response", Value::Message(list));
        } else if let Some(file) = file {
            let files_type = pool.get_message_by_name("grpc.reflection.v1alpha.FileDescriptorResponse").unwrap();
            let mut files = DynamicMessage::new(files_type);
            let encoded = Bytes::from(file.file_descriptor_proto().encode_to_vec());
            files.set_field_by_name("file_descriptor_proto", Value::List(vec![Value::Bytes(encoded)]));
            answer.set_field_by_name("file_descriptor_response", Value::Message(files));
        } else {
            let error_type = pool.get_message_by_name("grpc.reflection.v1alpha.ErrorResponse").unwrap();
            let mut error = DynamicMessage::new(error_type);
            error.set_field_by_name("error_code", Value::I32(5));
            error.set_field_by_name("error_message", Value::String("not found".into()));
            answer.set_field_by_name("error_response", Value::Message(error));
        }
        answers.push(answer);
    }
    answers
}
