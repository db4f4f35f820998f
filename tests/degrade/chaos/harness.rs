//! The chaos harness on one database: its project (a scenario with five nights of history, a telemetry source,
//! a capacity search switched on for the nights whose point is the search's), its target, its webhook
//! receiver and its dashboard; one cycle at a time (a night at a fault point, then whatever resumes it), the
//! invariants after each, and the figures.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use degrade::model::NightStep;
use degrade::store::Store;
use degrade::store::fault::{FaultPoint, Step};

use super::agreement::{Held, check_disagreements, dashboard_disagreements};
use super::invariants::{count, execute, invariants, rows};
use super::set_target;
use crate::support::killable::{HalfFailing, a_project_with_history, expire_any_lease};
use crate::support::receiver::Receiver;
use crate::support::served::Served;
use crate::support::{TestDb, degrade_child, text};

/// The scenario's telemetry source (the target's own counter), so the telemetry step is a point to hit.
const TELEMETRY: &str = "[[scenario.telemetry]]\nname = \"target\"\nkind = \"scrape\"\nurl = \"{URL}/metrics\"\n\
                         every = \"1s\"\n[[scenario.telemetry.series]]\nname = \"served\"\n\
                         metric = \"items_served_total\"\nkind = \"counter\"\nunit = \"requests\"\n";

/// A small capacity ladder (20 then 40 req/s, one 1 s hold each, no bisection: about 2 s), switched on only
/// for the nights whose point is the search's own, so the other nights stay short.
const CAPACITY: &str = "[scenario.capacity]\nstart_rate = 20\nstep_factor = 2\nhold = \"1s\"\nmax_holds = 1\n\
                        max_rate = 40\nmax_time = \"30s\"\nrefine_steps = 0\n";

/// How long `serve`'s watch may take to conclude a night a kill stopped: it looks at once when it starts,
/// its courier every second; a minute is a hang, not a slow machine.
const WATCH_WAIT: Duration = Duration::from_mins(1);

/// Who carries on a night a fault stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resume {
    /// The next `check --run-now` (a setup without `serve`): a night of its own, which settles the last first.
    NextNight,
    /// `degrade serve` started again: its watch settles the night, its courier posts what is due.
    Serve,
}

/// What one run of the harness saw.
#[derive(Default)]
pub(super) struct Figures {
    pub nights: usize,
    pub kills: usize,
    pub lost_acknowledgements: usize,
    pub resumed: usize,
    pub resumed_by_serve: usize,
    pub points_hit: BTreeSet<String>,
    pub violations: Vec<String>,
    pub duplicates_at_receiver: usize,
    /// Run records the dashboard was compared on (each time one changed), and `check` reports compared.
    pub runs_compared: usize,
    pub reports_compared: usize,
}

/// The harness on one database.
pub(super) struct Harness<'a> {
    db: &'a TestDb,
    target: HalfFailing,
    hook: Receiver,
    dir: tempfile::TempDir,
    store: Store,
    /// A `serve --no-scheduler` that only reads: the dashboard compared with the store.
    dashboard: Served,
    /// What the dashboard was last found to agree on, by run.
    shown: BTreeMap<i64, Held>,
    pub figures: Figures,
    pub turn: usize,
}

impl<'a> Harness<'a> {
    pub async fn start(db: &'a TestDb) -> Self {
        // A shared machine's busy spells would excuse the half-failing nights' slowness (the verdict then
        // inconclusive, and no confirmation to hit): the harness judges on regardless. The p75 limit is the
        // capacity search's zone, far above any night here.
        let gates = "[scenario.gates]\nbusy_machine_inconclusive = false\nmax_p75_ms = 5000\n";
        let (target, hook, dir, store) = a_project_with_history(db, gates).await;
        // The telemetry source is added once the history is stored: the history's nights have none to wait for.
        let telemetry = TELEMETRY.replace("{URL}", &target.url);
        let config = std::fs::read_to_string(dir.path().join("degrade.toml")).unwrap();
        let config = config.replacen("[[notify]]", &format!("{telemetry}\n[[notify]]"), 1);
        std::fs::write(dir.path().join("degrade.toml"), config).unwrap();
        let history = rows(db).await.0.iter().filter(|run| run.2.is_none()).count();
        let figures = Figures { nights: history, ..Figures::default() };
        let dashboard = Served::start(dir.path(), &["--no-scheduler"], &[("HOOK", "http://127.0.0.1:9/unused")]).await;
        Self { db, target, hook, dir, store, dashboard, shown: BTreeMap::new(), figures, turn: 0 }
    }

    /// Switches the scenario's capacity search on or off for the nights that follow.
    fn capacity(&self, on: bool) {
        let path = self.dir.path().join("degrade.toml");
        let config = std::fs::read_to_string(&path).unwrap().replace(CAPACITY, "");
        let config = if on { config.replacen("[[notify]]", &format!("{CAPACITY}\n[[notify]]"), 1) } else { config };
        std::fs::write(path, config).unwrap();
    }

    /// One night through `check --run-now --format json`, at `fault` when given: its exit status, its standard
    /// output (the report) and everything it said.
    async fn night(&self, fault: Option<&str>) -> (ExitStatus, String, String) {
        let url = self.hook.url();
        let mut env = vec![("HOOK", url.as_str())];
        env.extend(fault.map(|point| ("DEGRADE_FAULT", point)));
        let args = ["check", "--run-now", "--format", "json"];
        let output = degrade_child(self.dir.path(), &args, &env).wait_with_output().await.unwrap();
        let (stdout, stderr) = text(&output);
        let all = format!("{stdout}{stderr}");
        (output.status, stdout, all)
    }

    /// One cycle: a night at `point` with the target in `mode`, resumed as `resume` says if the fault stopped
    /// it; the invariants after. Whether the point was hit.
    pub async fn cycle(&mut self, point: FaultPoint, mode: u32, resume: Resume) -> bool {
        set_target(&self.target, mode).await;
        self.capacity(point.step == Step::CapacityStored);
        self.turn += 1;
        let name = point.name();
        let (status, stdout, output) = self.night(Some(&name)).await;
        if std::env::var_os("CHAOS_DEBUG").is_some() {
            eprintln!("chaos: {name} target {mode}: {status:?}\n{output}");
        }
        let killed = status.signal() == Some(9);
        // Killed before its run was written, the night left nothing: the next one stands in for it.
        self.figures.nights += usize::from(!(killed && point == Step::RunCreated.before()));
        let lost = output.contains("losing this write's acknowledgement");
        self.figures.kills += usize::from(killed);
        self.figures.lost_acknowledgements += usize::from(lost);
        if killed || lost {
            self.figures.points_hit.insert(name.clone());
        }
        let mut found = self.compare_report(status, &stdout).await;
        let mut by = "";
        // A fault that stopped the night part-way (a kill, or a write it gave up on): a degrade resumes it.
        if killed || (lost && !matches!(status.code(), Some(0 | 1 | 3))) {
            // What a degrade would find a while later: the lease and the alerts' claims run out.
            expire_any_lease(&self.store).await;
            execute(self.db, "update outbox set next_attempt_at = 0 where delivered_at is null").await;
            self.figures.resumed += 1;
            by = if resume == Resume::Serve { ", resumed by serve" } else { ", resumed by the next night" };
            found.extend(match resume {
                Resume::NextNight => self.resume_with_the_next_night().await,
                Resume::Serve => self.resume_through_serve().await,
            });
        }
        self.capacity(false);
        let (violations, duplicates) = invariants(self.db, &self.store, &self.hook, self.figures.nights).await;
        found.extend(violations);
        let (disagreements, compared) =
            dashboard_disagreements(&self.dashboard, &self.store, "shop", &mut self.shown).await;
        found.extend(disagreements);
        self.figures.runs_compared += compared;
        let cycle = self.figures.kills + self.figures.lost_acknowledgements;
        self.figures.violations.extend(found.into_iter().map(|v| format!("after {name} (cycle {cycle}{by}): {v}")));
        self.figures.duplicates_at_receiver = duplicates;
        killed || lost
    }

    /// The next `check --run-now`, against a target that answers (the failing nights stay a minority of the
    /// baseline): a night of its own, which first finishes the one left behind.
    async fn resume_with_the_next_night(&mut self) -> Vec<String> {
        set_target(&self.target, 0).await;
        let (status, stdout, output) = self.night(None).await;
        self.figures.nights += 1;
        if status.code().is_none() {
            return vec![format!("the night resuming it ended {status:?}: {output}")];
        }
        self.compare_report(status, &stdout).await
    }

    /// A night's `check` report against the store (`agreement`), counted when there was one.
    async fn compare_report(&mut self, status: ExitStatus, stdout: &str) -> Vec<String> {
        let disagreements = check_disagreements(&self.store, status, stdout).await;
        self.figures.reports_compared += usize::from(disagreements.is_some());
        disagreements.unwrap_or_default()
    }

    /// `degrade serve` started again: its watch settles what the kill left and its courier posts what is due;
    /// the harness waits until nothing is left (no run running or confirming, every night concluded, every
    /// message delivered), then stops it as a service manager would.
    async fn resume_through_serve(&mut self) -> Vec<String> {
        self.figures.resumed_by_serve += 1;
        let mut served = Served::start(self.dir.path(), &[], &[("HOOK", &self.hook.url())]).await;
        let started = Instant::now();
        let mut left = self.left_undone().await;
        while !left.is_empty() && started.elapsed() < WATCH_WAIT && served.running() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            left = self.left_undone().await;
        }
        let up = served.running();
        let (code, log) = served.stop().await;
        let mut found = Vec::new();
        if !left.is_empty() {
            found.push(format!("serve (up: {up}) left, after {:?}: {}\n{log}", started.elapsed(), left.join("; ")));
        }
        if code != Some(0) {
            found.push(format!("serve stopped with {code:?}:\n{log}"));
        }
        found
    }

    /// What is left for a degrade to do: runs running or confirming, nights not concluded, messages not
    /// delivered.
    async fn left_undone(&self) -> Vec<String> {
        let mut left = Vec::new();
        let unsettled = count(self.db, "select count(*) from runs where status in ('running', 'confirming')").await;
        if unsettled > 0 {
            left.push(format!("{unsettled} run(s) running or confirming"));
        }
        for run in self.store.last_runs("shop", 3).await.unwrap() {
            if let Some(step) = self.store.night_record(run.id).await.unwrap().and_then(NightStep::of) {
                left.push(format!("run #{}'s night {step:?}", run.id));
            }
        }
        let pending = count(self.db, "select count(*) from outbox where delivered_at is null").await;
        if pending > 0 {
            left.push(format!("{pending} message(s) not delivered"));
        }
        left
    }

    /// Stops the target and the dashboard; the figures.
    pub async fn stop(self) -> Figures {
        self.target.come_up().await;
        let (code, log) = self.dashboard.stop().await;
        let mut figures = self.figures;
        if code != Some(0) {
            figures.violations.push(format!("the dashboard's serve stopped with {code:?}:\n{log}"));
        }
        self.store.close().await;
        figures
    }
}
