//! What makes an answer a success: its HTTP status (or a gRPC call's `grpc-status`), then the step's JSON
//! assertions on its body (JSON, or a Protobuf answer decoded to JSON), then its `extract`s into session
//! variables. The first that fails classes the request.

use serde_json::Value;

use super::answer::Answer;
use super::failure::{Failure, unexpected_status};
use crate::metrics::ErrorClass;
use crate::scenario::plan::{ExtractFrom, Step};

/// Checks the status and JSON assertions, then extracts variables.
pub(super) fn check_response(step: &Step, response: &Answer, variables: &mut [Option<Value>]) -> Result<(), Failure> {
    let needs_json =
        !step.expect.json.is_empty() || step.extract.iter().any(|e| matches!(e.from, ExtractFrom::Json(..)));
    if let Some(call) = &step.grpc {
        let json = super::grpc::check(step, call, response, needs_json)?;
        return checked_json(step, response, &json, variables);
    }
    if !step.expect.status.iter().any(|range| range.contains(&response.status)) {
        return Err(unexpected_status(response));
    }
    let json: Value = if let (Some(message), true) = (&step.decode, needs_json) {
        let class = if step.expect.json.is_empty() { ErrorClass::Extraction } else { ErrorClass::Assertion };
        super::protobuf::decode(message, &response.body).map_err(|e| Failure::new(class, e))?
    } else if needs_json {
        // Only a JSON assertion makes a non-JSON body an assertion failure; a step that only extracts from it
        // failed to extract.
        let class = if step.expect.json.is_empty() { ErrorClass::Extraction } else { ErrorClass::Assertion };
        serde_json::from_slice(&response.body).map_err(|e| Failure::new(class, format!("the body is not JSON: {e}")))?
    } else {
        Value::Null
    };
    checked_json(step, response, &json, variables)
}

/// The step's JSON assertions on `json` (the answer's body as JSON), then its extractions.
fn checked_json(step: &Step, response: &Answer, json: &Value, variables: &mut [Option<Value>]) -> Result<(), Failure> {
    for assertion in &step.expect.json {
        assertion.holds(json).map_err(|message| Failure::new(ErrorClass::Assertion, message))?;
    }
    for extraction in &step.extract {
        let value = match &extraction.from {
            ExtractFrom::Json(path, text) => path
                .query(json)
                .first()
                .cloned()
                .ok_or_else(|| Failure::new(ErrorClass::Extraction, format!("{text} selects nothing")))?,
            ExtractFrom::Header(name) => match response.header(name.as_str()) {
                Some(Ok(text)) => Value::String(text.to_owned()),
                Some(Err(_)) => {
                    return Err(Failure::new(ErrorClass::Extraction, format!("the {name} header is not UTF-8 text")));
                }
                None => return Err(Failure::new(ErrorClass::Extraction, format!("no {name} header"))),
            },
        };
        variables[extraction.variable] = Some(value);
    }
    Ok(())
}
