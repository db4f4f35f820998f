//! A stub webhook receiver on 127.0.0.1: records every post (body and `Idempotency-Key`) and answers as the
//! test says: accept, fail with a status, or hang.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::Value;

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Accept,
    Fail(u16),
    Hang,
}

/// One post as received.
#[derive(Debug, Clone)]
pub struct Post {
    pub body: Value,
    pub key: Option<String>,
    pub accepted: bool,
}

#[derive(Default)]
struct Inbox {
    posts: Mutex<Vec<Post>>,
    answer: Mutex<Option<Answer>>,
}

/// The receiver: started on a port, stopped when dropped.
pub struct Receiver {
    pub address: SocketAddr,
    inbox: Arc<Inbox>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Receiver {
    pub async fn start() -> Self {
        Self::start_on("127.0.0.1:0".parse().unwrap()).await
    }

    /// Starts on `address`, e.g. the one a test reserved with [`unused_address`] while the receiver was down.
    pub async fn start_on(address: SocketAddr) -> Self {
        let inbox = Arc::new(Inbox::default());
        let app = Router::new().route("/hook", post(receive)).with_state(inbox.clone());
        let listener = tokio::net::TcpListener::bind(address).await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { address, inbox, server }
    }

    pub fn url(&self) -> String {
        url_at(self.address)
    }

    pub fn answer(&self, answer: Answer) {
        *self.inbox.answer.lock().unwrap() = Some(answer);
    }

    /// Every post, accepted or not, in arrival order.
    pub fn posts(&self) -> Vec<Post> {
        self.inbox.posts.lock().unwrap().clone()
    }

    /// The bodies of the accepted posts.
    pub fn delivered(&self) -> Vec<Value> {
        self.posts().into_iter().filter(|p| p.accepted).map(|p| p.body).collect()
    }
}

pub fn url_at(address: SocketAddr) -> String {
    format!("http://{address}/hook")
}

/// A 127.0.0.1 address nothing listens on (yet).
pub fn unused_address() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

async fn receive(State(inbox): State<Arc<Inbox>>, headers: HeaderMap, body: String) -> StatusCode {
    let answer = inbox.answer.lock().unwrap().unwrap_or(Answer::Accept);
    let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = serde_json::from_str(&body).unwrap_or(Value::String(body));
    inbox.posts.lock().unwrap().push(Post { body, key, accepted: answer == Answer::Accept });
    match answer {
        Answer::Accept => StatusCode::OK,
        Answer::Fail(code) => StatusCode::from_u16(code).unwrap(),
        Answer::Hang => {
            tokio::time::sleep(Duration::from_mins(1)).await;
            StatusCode::OK
        }
    }
}
