//! The client against a real listener: a request that gives up while connecting gives its pool slot back.

use super::*;

#[tokio::test]
async fn requests_that_give_up_during_a_connect_give_its_slot_back() {
    // A server that accepts and never says a word: the TLS handshake, part of the connect, hangs.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://localhost:{}", listener.local_addr().unwrap().port());
    let accepting = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let client = HttpClient::new(&url, Duration::from_secs(30), 1024).unwrap();
    let request = super::super::request::get("/", client.host_header()).unwrap();
    // Twice as many as there are slots, so half of them wait for a slot and are handed one.
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..2 * MAX_CONNECTING {
        let (client, request) = (client.clone(), request.clone());
        requests.spawn(async move {
            tokio::time::timeout(Duration::from_millis(200), client.send(&request)).await.is_err()
        });
    }
    while let Some(timed_out) = requests.join_next().await {
        assert!(timed_out.unwrap(), "nothing can answer");
    }
    let pool = client.lock();
    assert_eq!((pool.connecting, pool.idle.len()), (0, 0), "every slot is free again");
    drop(pool);
    accepting.abort();
}
