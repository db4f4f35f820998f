//! The demo API's board export, `GET /boards/{board_id}/export`: rendered by a bounded pool of renderers, each
//! export holding one for a fixed time spent waiting (a tokio sleep, as for a renderer service or a licence
//! server), not computing. Its capacity is therefore known in advance, renderers ÷ render time (4 × 25 ms:
//! 160 exports a second), and holds on a shared machine whatever else runs there: past it, exports queue for
//! a renderer and their latency climbs, below it they answer in the render time. A build with fewer renderers
//! answers as fast at a low rate and carries less: the capacity story of `degrade demo`.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// Renderers of builds 1.0.x and 1.1.0.
pub const EXPORT_WORKERS: u32 = 4;
/// The most renderers a build may have (`demo-target --export-workers`).
pub const MAX_EXPORT_WORKERS: u32 = 64;
/// How long one export holds its renderer.
pub const RENDER_TIME: Duration = Duration::from_millis(25);

/// The renderers: a permit each, taken in arrival order (tokio's semaphore is fair).
#[derive(Debug)]
pub struct ExportPool {
    renderers: Semaphore,
    workers: u32,
}

impl ExportPool {
    /// A pool of `workers` renderers (at least one).
    #[must_use]
    pub fn new(workers: u32) -> Self {
        let workers = workers.clamp(1, MAX_EXPORT_WORKERS);
        Self { renderers: Semaphore::new(workers as usize), workers }
    }

    /// The exports per second the pool carries at most: renderers ÷ render time.
    #[must_use]
    pub fn capacity(&self) -> f64 {
        f64::from(self.workers) / RENDER_TIME.as_secs_f64()
    }

    /// Waits for a renderer, holds it for [`RENDER_TIME`], and answers the export of `board` with `cards`.
    pub async fn render(&self, board: i64, cards: i64) -> Value {
        // The semaphore is never closed, so acquiring fails only if it were; an export then renders unqueued.
        let _renderer = self.renderers.acquire().await.ok();
        tokio::time::sleep(RENDER_TIME).await;
        json!({ "board_id": board, "cards": cards, "format": "pdf", "renderers": self.workers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn exports_past_the_pools_size_wait_for_a_renderer() {
        let pool = std::sync::Arc::new(ExportPool::new(2));
        assert!((pool.capacity() - 80.0).abs() < 1e-9);
        let started = tokio::time::Instant::now();
        let exports: Vec<_> = (0..4)
            .map(|board| {
                let pool = std::sync::Arc::clone(&pool);
                tokio::spawn(async move { (pool.render(board, 40).await, tokio::time::Instant::now()) })
            })
            .collect();
        let mut ends = Vec::new();
        for export in exports {
            let (answer, end) = export.await.unwrap();
            assert_eq!(answer["renderers"], 2);
            ends.push(end - started);
        }
        ends.sort();
        // Two render at once; the other two wait one render time for a renderer.
        assert_eq!(ends, [RENDER_TIME, RENDER_TIME, 2 * RENDER_TIME, 2 * RENDER_TIME]);
    }
}
