use reqwest::StatusCode;

use super::*;

fn data(status: StatusCode, body: &str) -> Result<Data, QueryError> {
    interpret(status, body.as_bytes(), None)
}

fn matrix(body: &str) -> Result<Vec<Sample>, QueryError> {
    match data(StatusCode::OK, body)? {
        Data::Matrix(series) => Ok(one(series)?.values),
        other => Err(unexpected(&other, "matrix")),
    }
}

#[test]
fn a_matrix_of_one_series_gives_its_values_nan_and_infinities_included() {
    let body = r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":
        [[1700000001,"0.5"],[1700000002.5,"NaN"],[1700000003,"+Inf"]]}]}}"#;
    let values = matrix(body).unwrap();
    assert_eq!(values.len(), 3);
    assert_eq!(values[0], (1_700_000_001.0, 0.5));
    assert!(values[1].1.is_nan() && values[2].1 == f64::INFINITY);
}

#[test]
fn several_series_are_refused_with_the_labels_that_tell_them_apart() {
    let body = r#"{"status":"success","data":{"resultType":"matrix","result":[
        {"metric":{"cpu":"0","mode":"user"},"values":[[1,"1"]]},
        {"metric":{"cpu":"1","mode":"user"},"values":[[1,"2"]]},
        {"metric":{"cpu":"2","mode":"user"},"values":[[1,"3"]]}]}}"#;
    let Err(QueryError::Query(why)) = matrix(body) else { panic!("several series were kept") };
    assert!(why.starts_with(r#"the query gave 3 series ({cpu="0",mode="user"}, {cpu="1",mode="user"}, …)"#), "{why}");
    assert!(why.contains("aggregate it to one"), "{why}");
}

#[test]
fn prometheus_errors_are_told_in_its_words_with_escapes_shown_not_acted_on() {
    let body = r#"{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected \u001b[31m"}"#;
    let Err(QueryError::Query(why)) = data(StatusCode::BAD_REQUEST, body) else { panic!("accepted") };
    assert_eq!(why, "Prometheus refused the query (bad_data): 1:5: parse error: unexpected \\u{1b}[31m");
}

#[test]
fn garbage_and_failures_are_the_servers_not_the_querys() {
    let Err(QueryError::Server(why)) = data(StatusCode::OK, "<html>oops</html>") else { panic!("accepted") };
    assert!(why.starts_with("the answer is not Prometheus' query API JSON ("), "{why}");
    let failed = interpret(StatusCode::UNAUTHORIZED, b"no", Some("PROM_TOKEN"));
    let Err(QueryError::Server(why)) = failed else { panic!("accepted") };
    assert_eq!(why, "Prometheus answered 401 Unauthorized (PROM_TOKEN, which holds its credentials, is not set)");
    let wrong = r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}"#;
    assert!(matches!(matrix(wrong), Err(QueryError::Server(why)) if why.contains("`x` is not a number")));
}

#[test]
fn an_instant_vector_is_not_taken_for_a_range() {
    let body = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"2"]}]}}"#;
    let Err(QueryError::Query(why)) = matrix(body) else { panic!("accepted") };
    assert_eq!(why, "the query gave a vector where a matrix was asked for");
}
