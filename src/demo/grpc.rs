//! The demo API's one gRPC method, `demo.Boards/GetBoard` (`scenarios/demo.proto`): a board's title and card
//! count from the demo's SQLite, served on the JSON API's own port (the server tells an HTTP/2 connection by its
//! preface, so a gRPC client's h2c and a browser's HTTP/1.1 share the address). gRPC's wire format is written
//! here by hand, as small as it is: one length-prefixed Protobuf message each way, the status in a
//! `grpc-status` trailer (or in the headers of a trailers-only answer when there is no message).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body::Frame;
use prost::Message as _;
use sqlx::SqlitePool;

use crate::metrics::GrpcCode;

/// The method's path, as gRPC writes `package.Service/Method`.
pub const GET_BOARD: &str = "/demo.Boards/GetBoard";
/// The `.proto` file that describes it, written beside the demo scenario.
pub const DEMO_PROTO: &str = include_str!("../../scenarios/demo.proto");

/// `demo.GetBoardRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetBoardRequest {
    /// The board asked for.
    #[prost(int64, tag = "1")]
    pub id: i64,
}

/// `demo.Board`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Board {
    /// Its id.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// Its title.
    #[prost(string, tag = "2")]
    pub title: String,
    /// How many cards it holds.
    #[prost(int64, tag = "3")]
    pub cards: i64,
}

/// Answers one `GetBoard` call: `body` is the request as it came, with its 5-byte prefix.
pub async fn get_board(db: &SqlitePool, headers: &HeaderMap, body: &[u8]) -> Response {
    // As gRPC's servers do: a request that is not gRPC's content type is refused at the HTTP level.
    let grpc = headers.get(header::CONTENT_TYPE).is_some_and(|t| t.as_bytes().starts_with(b"application/grpc"));
    if !grpc {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response();
    }
    let request = match unframe(body) {
        Ok(message) => GetBoardRequest::decode(message),
        Err(code) => return status_only(code, "the request is not one uncompressed message"),
    };
    let Ok(request) = request else { return status_only(GrpcCode::InvalidArgument, "not a demo.GetBoardRequest") };
    let row: Result<Option<(i64, String, i64)>, sqlx::Error> = sqlx::query_as(
        "select b.id, b.title, (select count(*) from cards c where c.board_id = b.id) from boards b where b.id = $1",
    )
    .bind(request.id)
    .fetch_optional(db)
    .await;
    match row {
        Ok(Some((id, title, cards))) => answer(&Board { id, title, cards }),
        Ok(None) => status_only(GrpcCode::NotFound, "no such board"),
        Err(e) => status_only(GrpcCode::Internal, &e.to_string()),
    }
}

/// The one message of a request: gRPC's prefix is a compressed flag and the message's length (big-endian).
fn unframe(body: &[u8]) -> Result<&[u8], GrpcCode> {
    let (&[flag, a, b, c, d], message) = body.split_first_chunk::<5>().ok_or(GrpcCode::InvalidArgument)?;
    if flag != 0 {
        return Err(GrpcCode::Unimplemented);
    }
    let length = u32::from_be_bytes([a, b, c, d]) as usize;
    if message.len() == length { Ok(message) } else { Err(GrpcCode::InvalidArgument) }
}

/// One message, then status OK in the trailers.
fn answer(message: &Board) -> Response {
    let encoded = message.encode_to_vec();
    let mut framed = Vec::with_capacity(encoded.len() + 5);
    framed.push(0);
    framed.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
    framed.extend_from_slice(&encoded);
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from(GrpcCode::Ok as u16));
    let body = Body::new(Unary { message: Some(framed.into()), trailers: Some(trailers) });
    ([(header::CONTENT_TYPE, "application/grpc")], body).into_response()
}

/// A trailers-only answer: HTTP 200 and the gRPC status in its headers, no message.
#[must_use]
pub fn status_only(code: GrpcCode, message: &str) -> Response {
    // grpc-message is percent-encoded; the demo's messages are ASCII, so only what a header cannot hold is.
    let message: String = message
        .bytes()
        .map(|b| if b.is_ascii_graphic() && b != b'%' { char::from(b).to_string() } else { format!("%{b:02X}") })
        .collect();
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static("application/grpc")),
        (header::HeaderName::from_static("grpc-status"), HeaderValue::from(code as u16)),
        (
            header::HeaderName::from_static("grpc-message"),
            HeaderValue::from_str(&message).unwrap_or(HeaderValue::from_static("")),
        ),
    ];
    (headers, Body::empty()).into_response()
}

/// A body of one data frame, then a trailers frame: what a unary gRPC answer is.
struct Unary {
    message: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl http_body::Body for Unary {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(message) = self.message.take() {
            return Poll::Ready(Some(Ok(Frame::data(message))));
        }
        Poll::Ready(self.trailers.take().map(|trailers| Ok(Frame::trailers(trailers))))
    }
}
