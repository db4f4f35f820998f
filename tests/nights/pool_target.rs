//! A target whose capacity is known in advance: a fixed pool of worker threads, each serving one request at a
//! time for a fixed service time spent waiting (a sleep, not CPU), so its knee, workers ÷ service time, holds
//! on a shared machine. The service time can be changed while it runs: a slower build. `GET /metrics` counts
//! the seconds its workers spent serving (`pool_busy_seconds_total`, in the Prometheus text format): its
//! rate is how many workers are busy on average, the pool's stand-in for CPU.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use tokio::sync::oneshot;

/// A request waiting for a worker: the worker answers on it once served.
type Job = oneshot::Sender<()>;

/// The pool, its queue (unbounded: requests past capacity wait, as behind a real server's pool) and the
/// address it serves `GET /work` on.
pub struct PoolTarget {
    pub address: SocketAddr,
    service_us: Arc<AtomicU64>,
    server: tokio::task::JoinHandle<()>,
    queue: Option<mpsc::Sender<Job>>,
}

impl Drop for PoolTarget {
    fn drop(&mut self) {
        self.server.abort();
        // Dropping the last sender ends every worker's `recv`.
        self.queue.take();
    }
}

impl PoolTarget {
    /// `workers` threads serving for `service` each.
    pub async fn start(workers: usize, service: Duration) -> Self {
        let (queue, jobs) = mpsc::channel::<Job>();
        let jobs = Arc::new(Mutex::new(jobs));
        let service_us = Arc::new(AtomicU64::new(service.as_micros() as u64));
        let busy_us = Arc::new(AtomicU64::new(0));
        for _ in 0..workers {
            let (jobs, service_us, busy_us) = (Arc::clone(&jobs), Arc::clone(&service_us), Arc::clone(&busy_us));
            std::thread::spawn(move || {
                loop {
                    // The lock is held only while taking the next job, never while serving it.
                    let job = jobs.lock().unwrap().recv();
                    let Ok(job) = job else { return };
                    let serving = service_us.load(Ordering::Relaxed);
                    std::thread::sleep(Duration::from_micros(serving));
                    busy_us.fetch_add(serving, Ordering::Relaxed);
                    let _ = job.send(());
                }
            });
        }
        let app = Router::new()
            .route("/work", get(work))
            .with_state(Arc::new(Mutex::new(queue.clone())))
            .route("/metrics", get(move || std::future::ready(metrics(&busy_us))));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { address, service_us, server, queue: Some(queue) }
    }

    /// From now on each request takes `service`: a build whose knee moved.
    pub fn set_service(&self, service: Duration) {
        self.service_us.store(service.as_micros() as u64, Ordering::Relaxed);
    }
}

async fn work(State(queue): State<Arc<Mutex<mpsc::Sender<Job>>>>) -> &'static str {
    let (done, served) = oneshot::channel();
    let sent = queue.lock().unwrap().send(done);
    if sent.is_err() || served.await.is_err() {
        return "stopped";
    }
    "done"
}

fn metrics(busy_us: &AtomicU64) -> String {
    let busy = busy_us.load(Ordering::Relaxed) as f64 / 1e6;
    format!("# TYPE pool_busy_seconds_total counter\npool_busy_seconds_total {busy}\n")
}
