//! The wire format, over an in-memory byte stream: framings, interim answers, reuse, limits and hang-ups.

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::*;

fn get() -> Outgoing {
    Outgoing { bytes: Bytes::from_static(b"GET / HTTP/1.1\r\nhost: t\r\n\r\n"), response_has_body: true }
}

/// Sends `request` on a connection whose server answers `pieces` one write at a time, then hangs up when
/// `hang_up`; returns the outcome and the connection.
async fn exchange_with(
    request: Outgoing,
    pieces: &[&[u8]],
    hang_up: bool,
    max_body: u64,
) -> (Result<(Answer, bool), Failure>, Connection) {
    let (client, server) = tokio::io::duplex(256 * 1024);
    let pieces: Vec<Vec<u8>> = pieces.iter().map(|p| p.to_vec()).collect();
    let server = tokio::spawn(async move { serve(server, pieces, hang_up).await });
    let mut connection = Connection::new(Box::new(client));
    let outcome = connection.exchange(&request, max_body).await;
    let received = server.await.unwrap();
    assert_eq!(received, request.bytes, "the request went out as encoded");
    (outcome, connection)
}

async fn serve(mut server: DuplexStream, pieces: Vec<Vec<u8>>, hang_up: bool) -> Bytes {
    let mut request = vec![0_u8; 4096];
    let read = server.read(&mut request).await.unwrap();
    for piece in pieces {
        server.write_all(&piece).await.unwrap();
        tokio::task::yield_now().await;
    }
    if !hang_up {
        // Kept open until the client is done with it.
        let mut rest = [0_u8; 16];
        let _ = tokio::time::timeout(std::time::Duration::from_millis(50), server.read(&mut rest)).await;
    }
    Bytes::copy_from_slice(&request[..read])
}

async fn answer(pieces: &[&[u8]]) -> (Answer, bool) {
    exchange_with(get(), pieces, false, 1 << 20).await.0.unwrap()
}

async fn failure(pieces: &[&[u8]], hang_up: bool, max_body: u64) -> Failure {
    exchange_with(get(), pieces, hang_up, max_body).await.0.unwrap_err()
}

#[tokio::test]
async fn a_sized_body_keeps_the_connection_and_its_headers_are_found_in_any_case() {
    let (answer, reusable) =
        answer(&[b"HTTP/1.1 201 Created\r\nLocation: /boards/7\r\nContent-Len", b"gth: 5\r\n\r\nhel", b"lo"]).await;
    assert_eq!((answer.status, &answer.body[..], reusable), (201, &b"hello"[..], true));
    assert_eq!(answer.header("location"), Some(Ok("/boards/7")));
    assert_eq!(answer.header("LOCATION"), Some(Ok("/boards/7")));
    assert_eq!(answer.header("etag"), None);
}

#[tokio::test]
async fn a_header_that_is_not_text_is_there_but_unreadable() {
    let (answer, _) =
        answer(&[b"HTTP/1.1 201 Created\r\nLocation: /items/\xe9\xff\r\ncontent-length: 0\r\n\r\n"]).await;
    assert!(matches!(answer.header("location"), Some(Err(_))), "present, not missing");
}

#[tokio::test]
async fn a_chunked_body_is_joined_past_extensions_and_trailers() {
    let (answer, reusable) = answer(&[
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
        b"3;name=value\r\nabc\r",
        b"\n10\r\n0123456789abcdef\r\n0\r\nx-trailer: 1\r\n",
        b"\r\n",
    ])
    .await;
    assert_eq!((&answer.body[..], reusable), (&b"abc0123456789abcdef"[..], true));
}

#[tokio::test]
async fn a_body_without_a_length_ends_with_the_connection_which_is_not_reused() {
    let pieces: &[&[u8]] = &[b"HTTP/1.1 200 OK\r\n\r\nall of ", b"this"];
    let (outcome, _) = exchange_with(get(), pieces, true, 1 << 20).await;
    let (answer, reusable) = outcome.unwrap();
    assert_eq!((&answer.body[..], reusable), (&b"all of this"[..], false));
}

#[tokio::test]
async fn interim_answers_are_skipped_and_some_statuses_never_have_a_body() {
    let (answer, reusable) = answer(&[b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"]).await;
    assert_eq!((answer.status, answer.body.len(), reusable), (204, 0, true));
    let head = Outgoing { bytes: Bytes::from_static(b"HEAD / HTTP/1.1\r\nhost: t\r\n\r\n"), response_has_body: false };
    let (outcome, _) =
        exchange_with(head.clone(), &[b"HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\n"], false, 1 << 20).await;
    let (answer, reusable) = outcome.unwrap();
    assert_eq!((answer.status, answer.body.len(), reusable), (200, 0, true));
    // The framing headers of a HEAD answer describe a body that is not sent: not even read.
    let (outcome, _) = exchange_with(head, &[b"HTTP/1.1 200 OK\r\ncontent-length: lots\r\n\r\n"], false, 10).await;
    assert_eq!(outcome.unwrap().0.status, 200);
}

#[tokio::test]
async fn the_server_says_when_a_connection_ends() {
    let close = answer(&[b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"]).await;
    assert!(!close.1, "connection: close");
    let old = answer(&[b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n"]).await;
    assert!(!old.1, "HTTP/1.0 closes by default");
    let kept = answer(&[b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\ncontent-length: 0\r\n\r\n"]).await;
    assert!(kept.1, "HTTP/1.0 with keep-alive");
    let both =
        answer(&[b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"])
            .await;
    assert_eq!((&both.0.body[..], both.1), (&b"a"[..], false), "both framings: chunked wins, never reused");
    let extra = answer(&[b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\naHTTP/1.1 200 OK\r\n"]).await;
    assert!(!extra.1, "bytes nobody asked for");
    let old_chunked =
        answer(&[b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n"]).await;
    assert!(!old_chunked.1, "HTTP/1.0 has no transfer codings: faulty framing");
}

#[tokio::test]
async fn what_is_not_http_is_a_protocol_error_and_a_hang_up_a_reset() {
    let garbage = failure(&[b"SURPRISE this is not HTTP\r\n\r\n"], false, 1 << 20).await;
    assert_eq!(garbage.class, ErrorClass::Protocol, "{garbage:?}");
    let lengths = failure(&[b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab"], false, 100).await;
    assert_eq!(lengths.class, ErrorClass::Protocol, "{lengths:?}");
    let chunk = failure(&[b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"], false, 100).await;
    assert_eq!(chunk.class, ErrorClass::Protocol, "{chunk:?}");
    // A stray line break is not a last chunk of size 0, which would cut the body short unnoticed.
    let stray = failure(
        &[b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n\r\n1\r\nb\r\n0\r\n\r\n"],
        false,
        100,
    )
    .await;
    assert_eq!(stray.class, ErrorClass::Protocol, "{stray:?}");
    let switched = failure(&[b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n"], false, 100).await;
    assert_eq!(switched.class, ErrorClass::Protocol, "{switched:?}");
    for (pieces, what) in [
        (&[][..], "nothing"),
        (&[&b"HTTP/1.1 200 OK\r\ncontent-le"[..]][..], "half a head"),
        (&[&b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc"[..]][..], "half a body"),
        (&[&b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab"[..]][..], "half a chunk"),
    ] {
        let hung_up = failure(pieces, true, 100).await;
        assert_eq!(hung_up.class, ErrorClass::Reset, "{what}: {hung_up:?}");
    }
}

#[tokio::test]
async fn memory_is_bounded_whatever_the_server_sends() {
    let sized = failure(&[b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n"], false, 999).await;
    assert_eq!(sized.class, ErrorClass::BodyTooLarge, "{sized:?}");
    assert!(sized.message.contains("Content-Length is 1,000 bytes;"), "{sized:?}");
    let chunked = failure(&[b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n", b"3e8\r\n"], false, 999).await;
    assert_eq!(chunked.class, ErrorClass::BodyTooLarge, "{chunked:?}");
    assert!(chunked.message.starts_with("the body passed max_body of 999 bytes after 1,000 bytes:"), "{chunked:?}");
    let mut pieces: Vec<&[u8]> = vec![b"HTTP/1.1 200 OK\r\n\r\n"];
    pieces.extend([b"x".as_slice(); 200]);
    let until_close = failure(&pieces, true, 100).await;
    assert_eq!(until_close.class, ErrorClass::BodyTooLarge, "{until_close:?}");
    let header = format!("x-big: {}\r\n", "a".repeat(MAX_HEAD));
    let long_head = failure(&[b"HTTP/1.1 200 OK\r\n", header.as_bytes()], false, 100).await;
    assert_eq!(long_head.class, ErrorClass::Protocol, "{long_head:?}");
    assert!(long_head.message.contains("longer than"), "{long_head:?}");
}

#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_not_used_again() {
    let (client, server) = tokio::io::duplex(1024);
    let mut connection = Connection::new(Box::new(client));
    assert!(!connection.closed_while_idle(), "open and quiet");
    drop(server);
    assert!(connection.closed_while_idle(), "closed");
    let (outcome, mut kept) = exchange_with(get(), &[b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"], true, 10).await;
    assert!(outcome.unwrap().1, "reusable as far as the answer said");
    tokio::task::yield_now().await;
    assert!(kept.closed_while_idle(), "but the server hung up after it");
}
