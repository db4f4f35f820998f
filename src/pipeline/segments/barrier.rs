//! Before a split night's load: register the segment, let one segment prepare the build (deploy, health, build
//! id) and create the night's one run while the others wait and then check the build they see, mark ready, and
//! wait for the shared start the database sets once all N are ready. Nothing here waits forever: every wait
//! ends at the barrier's timeout, naming the segments that never became ready.

use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::watch;

use super::clock::{self, Offset};
use super::{Night, SegmentEnd};
use crate::clock::Clock;
use crate::model::{NewRun, RunId, RunStatus};
use crate::store::{Registration, SegmentedRun, Store};

/// How far ahead of the last segment's readiness the shared start is set: enough for every segment to see it
/// (they look every [`POLL`]) and wake on time, however far apart their last looks were.
const START_LEAD_MS: i64 = 2_000;

/// How often a waiting segment looks at the registry.
const POLL: Duration = Duration::from_millis(50);

/// A segment through the barrier: the night's run, and when its load starts on this machine's monotonic clock.
pub(super) struct Started {
    pub run_id: RunId,
    pub build_id: Option<String>,
    pub start: Instant,
    pub offset: Offset,
}

/// Registers, prepares or verifies the build, marks ready and waits for the shared start; `Err(end)` when the
/// segment must not send (its index taken, the night invalid, the barrier timed out, stopped).
pub(super) async fn pass(
    store: &Store,
    night: &Night<'_>,
    build: Option<String>,
    clock: &Clock,
    stop: &watch::Receiver<bool>,
) -> anyhow::Result<Result<Started, SegmentEnd>> {
    let since = Instant::now();
    let offset = clock::measure(store).await.context("cannot read the database's clock")?;
    // Invalid before this segment came (its barrier timed out without it, say): it takes no part in that night,
    // not even a row on its page, and a pod started for it later is told which run its key names, as for a
    // merged one.
    if let Some(over) =
        store.segmented_run(night.key).await.context("cannot read the split night")?.and_then(|r| invalid_already(&r))
    {
        return Ok(Err(SegmentEnd::Over { ended: over }));
    }
    let registration = store
        .register_segment(
            night.key,
            night.scenario,
            (night.segment.index(), night.segment.count()),
            night.holder,
            &night.plan_hash,
        )
        .await
        .context("cannot register the segment")?;
    let registry = match registration {
        Registration::Taken { holder } => {
            let registry = store.segmented_run(night.key).await.context("cannot read the split night")?;
            let database_now_ms = (clock::own_clock_us() + offset.offset_us) / 1_000;
            let over = registry.as_ref().and_then(|r| night_over(r, database_now_ms, night.barrier_timeout));
            return Ok(Err(over.map_or(SegmentEnd::Taken { holder }, |ended| SegmentEnd::Over { ended })));
        }
        Registration::Registered(registry) => registry,
    };
    // Turned invalid between the look above and the registration: the same.
    if let Some(over) = invalid_already(&registry) {
        return Ok(Err(SegmentEnd::Over { ended: over }));
    }
    if let Some(reason) = mismatch(night, &registry) {
        return Ok(Err(night.fail(store, &reason, registry.run_id).await));
    }
    let index = i64::from(night.segment.index());
    let (run_id, build_id) = if registry.preparer == index {
        match prepare(store, night, build, clock, stop).await? {
            Ok(prepared) => prepared,
            Err(end) => return Ok(Err(end)),
        }
    } else {
        match wait_for_build(store, night, build, since, stop).await? {
            Ok(prepared) => prepared,
            Err(end) => return Ok(Err(end)),
        }
    };
    store
        .segment_state(night.key, night.segment.index(), "ready", Some((offset.offset_us, offset.round_trip_us)))
        .await?;
    // The wait for the others counts from when the build was ready: preparing it had its own limits.
    let start_at_ms = match wait_for_start(store, night, Instant::now(), stop).await? {
        Ok(at) => at,
        Err(end) => return Ok(Err(end)),
    };
    // The shared start on the database's clock, moved onto this machine's by its offset.
    let wait_us = start_at_ms * 1_000 - offset.offset_us - clock::own_clock_us();
    let start = Instant::now() + Duration::from_micros(wait_us.max(0) as u64);
    Ok(Ok(Started { run_id, build_id, start, offset }))
}

/// Why this segment does not belong to the registered night, if it does not.
fn mismatch(night: &Night<'_>, registry: &SegmentedRun) -> Option<String> {
    let index = night.segment.index();
    if registry.segments != i64::from(night.segment.count()) {
        return Some(format!(
            "segment {} was started as one of {}, where the night `{}` has {} segments",
            index,
            night.segment.count(),
            night.key,
            registry.segments
        ));
    }
    if registry.scenario != night.scenario || registry.plan_hash != night.plan_hash {
        return Some(format!(
            "segment {index}'s plan (scenario `{}`, hash {}) differs from the night's (scenario `{}`, hash {}): the \
             scenario file, its seed, `--duration` or `--rate-scale`, or degrade's version differ between segments",
            night.scenario, night.plan_hash, registry.scenario, registry.plan_hash
        ));
    }
    None
}

/// The preparing segment: takes the scenario's lease for the night (`lease`), deploys and waits for the build as
/// a single machine's night does, then creates the night's one run (failed at once when the build could not be
/// prepared).
async fn prepare(
    store: &Store,
    night: &Night<'_>,
    build: Option<String>,
    clock: &Clock,
    stop: &watch::Receiver<bool>,
) -> anyhow::Result<Result<(RunId, Option<String>), SegmentEnd>> {
    // Before anything is deployed: a run of the scenario under way must not have its target changed under it.
    if let Err(held) = super::lease::take(store, night.scenario, night.key).await? {
        return Ok(Err(night.fail(store, &held, None).await));
    }
    let started_at = clock.now();
    let mut deploy_output = None;
    let (prepared, _stopped) =
        super::super::prepare_unless_stopped(night.config, build, &mut deploy_output, stop.clone()).await;
    let new_run = NewRun {
        scenario: night.scenario.to_owned(),
        build_id: prepared.as_ref().ok().cloned().flatten(),
        seed: night.plan.seed.cast_signed(),
        scenario_hash: night.plan.hash.clone(),
        scenario_source: Some(night.plan.source_text.clone()),
        deploy_output,
        started_at,
        confirms: night.confirms,
        judged_against: night.judged_against.clone(),
        reshape: night.plan.reshape.clone(),
    };
    let run_id = store.create_run(&new_run).await.context("cannot record the night's run")?;
    // A failed build ends the run (with why) before the others hear of it: a waiting segment that saw the
    // build failed first would end the night invalid with no reason, and its reason would stand.
    let failed = match &prepared {
        Ok(_) => None,
        Err(e) => {
            let reason = format!("the build could not be prepared: {e:#}");
            let _ = store.end_run(run_id, RunStatus::Failed, &reason, clock.now()).await;
            Some(reason)
        }
    };
    let ready = failed.is_none();
    store.segment_build_prepared(night.key, run_id, new_run.build_id.as_deref(), ready, night.segment.count()).await?;
    if let Some(reason) = failed {
        return Ok(Err(night.fail(store, &reason, Some(run_id)).await));
    }
    Ok(Ok((run_id, new_run.build_id)))
}

/// A segment that does not prepare: waits for the preparing one's build, then checks that it sees the same
/// build (its own `--build`, or the scenario's version source).
async fn wait_for_build(
    store: &Store,
    night: &Night<'_>,
    build: Option<String>,
    since: Instant,
    stop: &watch::Receiver<bool>,
) -> anyhow::Result<Result<(RunId, Option<String>), SegmentEnd>> {
    let mut looks = 0_u64;
    let registry = loop {
        looks += 1;
        if looks.is_multiple_of(20) {
            let _ = store.segment_seen(night.key, night.segment.index()).await;
        }
        let registry = store.segmented_run(night.key).await?.context("the night's registry row vanished")?;
        if let Some(reason) = &registry.invalid_reason {
            return Ok(Err(night.fail(store, reason, registry.run_id).await));
        }
        match (registry.build_state.as_str(), registry.run_id) {
            ("ready", Some(_)) => break registry,
            ("failed", run_id) => {
                // The preparing segment stored why (the target not healthy, the deploy failed): said here too,
                // so every pod's log tells the same story.
                let why = match run_id {
                    Some(id) => store.find_run(id).await?.and_then(|r| r.failure_reason),
                    None => None,
                };
                let reason = why.map_or_else(
                    || "the preparing segment could not prepare the build".to_owned(),
                    |why| format!("the preparing segment could not prepare the build: {why}"),
                );
                return Ok(Err(night.fail(store, &reason, run_id).await));
            }
            _ => {}
        }
        // The build's preparation may take what the scenario allows it on top of the barrier: a barrier of the
        // same 5 minutes as the health check raced it, and an unhealthy build read as segments that "never
        // became ready" (trial).
        let preparing = preparation_allowance(night);
        if let Some(end) = waited_too_long(store, night, (since, preparing), stop, &registry).await? {
            return Ok(Err(end));
        }
        tokio::time::sleep(POLL).await;
    };
    let run_id = registry.run_id.expect("checked above");
    let seen = match (build, night.config.and_then(|s| s.build.version.as_ref())) {
        (Some(id), _) => Some(id),
        (None, Some(version)) => match crate::latest_build::resolve_version(version).await {
            Ok(id) => Some(id),
            Err(e) => {
                let reason = format!("segment {} could not read the build id: {e:#}", night.segment.index());
                return Ok(Err(night.fail(store, &reason, Some(run_id)).await));
            }
        },
        (None, None) => None,
    };
    if let Some(seen) = &seen
        && registry.build_id.as_ref() != Some(seen)
    {
        let reason = format!(
            "segment {} sees build `{seen}` where the preparing segment {} read `{}`",
            night.segment.index(),
            registry.preparer,
            registry.build_id.as_deref().unwrap_or("(unknown)")
        );
        return Ok(Err(night.fail(store, &reason, Some(run_id)).await));
    }
    Ok(Ok((run_id, registry.build_id)))
}

/// Waits for the shared start (database clock, ms since 1970), setting it when this segment is the one that
/// sees all N ready.
async fn wait_for_start(
    store: &Store,
    night: &Night<'_>,
    since: Instant,
    stop: &watch::Receiver<bool>,
) -> anyhow::Result<Result<i64, SegmentEnd>> {
    for look in 0_u64.. {
        // Seen about once a second while waiting, so `serve`'s watch does not take the night for lost.
        if look % 20 == 19 {
            let _ = store.segment_seen(night.key, night.segment.index()).await;
        }
        let registry =
            store.start_when_all_ready(night.key, START_LEAD_MS).await?.context("the night's registry row vanished")?;
        if let Some(reason) = &registry.invalid_reason {
            return Ok(Err(night.fail(store, reason, registry.run_id).await));
        }
        if let Some(at) = registry.start_at {
            return Ok(Ok(at));
        }
        if let Some(end) = waited_too_long(store, night, (since, Duration::ZERO), stop, &registry).await? {
            return Ok(Err(end));
        }
        tokio::time::sleep(POLL).await;
    }
    unreachable!("the looks are numbered without end")
}

/// Ends the wait when degrade was stopped or the barrier timed out (`since`, with `preparing` allowed on top
/// while the build is prepared), naming the segments not ready.
async fn waited_too_long(
    store: &Store,
    night: &Night<'_>,
    (since, preparing): (Instant, Duration),
    stop: &watch::Receiver<bool>,
    registry: &SegmentedRun,
) -> anyhow::Result<Option<SegmentEnd>> {
    if *stop.borrow() {
        let reason = format!("segment {} was stopped before the night's start", night.segment.index());
        return Ok(Some(night.fail(store, &reason, registry.run_id).await));
    }
    if since.elapsed() < night.barrier_timeout + preparing {
        return Ok(None);
    }
    let rows = store.run_segments(night.key).await?;
    let ready: Vec<String> = rows.iter().filter(|r| r.state == "ready").map(|r| r.segment_index.to_string()).collect();
    let missing: Vec<String> = (0..night.segment.count())
        .filter(|k| !rows.iter().any(|r| r.segment_index == i64::from(*k) && r.state == "ready"))
        .map(|k| k.to_string())
        .collect();
    let allowed = if preparing.is_zero() {
        humantime::format_duration(night.barrier_timeout).to_string()
    } else {
        format!(
            "{} and the {} the build's deploy and health check may take",
            humantime::format_duration(night.barrier_timeout),
            humantime::format_duration(preparing)
        )
    };
    let reason = format!(
        "the start barrier timed out after {allowed}: segment{} {} of {} never became ready (ready: {})",
        if missing.len() == 1 { "" } else { "s" },
        missing.join(", "),
        night.segment.count(),
        if ready.is_empty() { "none".to_owned() } else { ready.join(", ") }
    );
    Ok(Some(night.fail(store, &reason, registry.run_id).await))
}

/// How long the scenario lets its build be prepared: the deploy command's limit and the health check's.
fn preparation_allowance(night: &Night<'_>) -> Duration {
    let Some(build) = night.config.map(|c| &c.build) else { return Duration::ZERO };
    build.deploy.as_ref().map_or(Duration::ZERO, |d| d.timeout)
        + build.health.as_ref().map_or(Duration::ZERO, |h| h.timeout)
}

/// How the night of `registry` ended, in words (`run 6, merged` or `run 7, invalid: …`), when it ended (merged,
/// or started) more than a barrier's wait before `database_now_ms`: a key given again for another night. A
/// Job's duplicate pod for one index starts within the night, and its night going on (or just ended) is no
/// reuse: it exits 0, as a taken index does, and fails no Job for a night that passed.
/// The night's run and why it is invalid, in words, when it is.
fn invalid_already(registry: &SegmentedRun) -> Option<String> {
    let reason = registry.invalid_reason.as_ref()?;
    let run = registry.run_id.map_or_else(|| "no run".to_owned(), |id| format!("run {id}"));
    Some(format!("{run}, invalid: {reason}"))
}

fn night_over(registry: &SegmentedRun, database_now_ms: i64, barrier: Duration) -> Option<String> {
    let ended_ms = registry.merged_at.or(registry.start_at)?;
    let barrier_ms = i64::try_from(barrier.as_millis()).unwrap_or(i64::MAX);
    if database_now_ms.saturating_sub(ended_ms) <= barrier_ms {
        return None;
    }
    let run = registry.run_id.map_or_else(|| "no run".to_owned(), |id| format!("run {id}"));
    match (&registry.invalid_reason, registry.merged_at) {
        (Some(reason), _) => Some(format!("{run}, invalid: {reason}")),
        (None, Some(_)) => Some(format!("{run}, merged")),
        (None, None) => None,
    }
}
