//! The Kubernetes recipe (`deploy/kubernetes/`) and the image it runs (`Containerfile`) cannot drift from
//! degrade or from Kubernetes: the manifests pass Kubernetes' own schemas, strictly (kubernetes-validate from
//! PyPI; skipped, saying so, where it is not installed: `.ci/run` installs it); every container's arguments,
//! and the image's default command, are a command line degrade's own parser accepts; the ConfigMap's
//! degrade.toml and scenario pass degrade's checkers; the night is split the same in its three places; its
//! pods are never retried and fail the Job together; every pod is in the Guaranteed class, running as the
//! image's user; and `.dockerignore` lets in every file the image's Rust stage reads. The manifests are read
//! with Python's YAML parser (PyYAML, which kubernetes-validate needs too), as this crate has no YAML parser
//! of its own. `ci/container.sh` builds and runs the image itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser as _;
use degrade::config::Config;
use serde_json::Value;

/// The folder of the recipe, in the repository.
const RECIPE: &str = "deploy/kubernetes";
/// The oldest Kubernetes the recipe supports (a Job's `backoffLimitPerIndex` is stable from 1.33) and the
/// newest the pinned kubernetes-validate knows; `ci/container.sh` validates against the same two.
const KUBERNETES_VERSIONS: [&str; 2] = ["1.33.0", "1.37.0"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The recipe's manifests, in name order.
fn manifest_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(RECIPE))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "the recipe lost files: {files:?}");
    files
}

/// Every document of the recipe, as JSON, or `None` (the test is skipped) where Python has no PyYAML.
fn manifests() -> Option<Vec<Value>> {
    let probe = Command::new("python3").args(["-c", "import yaml"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        println!("skipped: python3 with PyYAML (python3-yaml) is not installed");
        return None;
    }
    let script = "import json, sys, yaml\n\
                  print(json.dumps([d for f in sys.argv[1:] for d in yaml.safe_load_all(open(f)) if d]))";
    let output = Command::new("python3").args(["-c", script]).args(manifest_files()).output().unwrap();
    assert!(output.status.success(), "the recipe is not YAML: {}", String::from_utf8_lossy(&output.stderr));
    Some(serde_json::from_slice(&output.stdout).unwrap())
}

fn kind_of<'a>(documents: &'a [Value], kind: &str) -> &'a Value {
    documents.iter().find(|d| d["kind"] == kind).unwrap_or_else(|| panic!("the recipe has no {kind}"))
}

/// The pod template of a Deployment or a CronJob's Job, with the name of what holds it.
fn pod_specs(documents: &[Value]) -> Vec<(String, &Value)> {
    let mut pods = Vec::new();
    for document in documents {
        let pod = match document["kind"].as_str() {
            Some("Deployment") => &document["spec"]["template"]["spec"],
            Some("CronJob") => &document["spec"]["jobTemplate"]["spec"]["template"]["spec"],
            _ => continue,
        };
        let name = document["metadata"]["name"].as_str().unwrap_or_default();
        pods.push((format!("{} {name}", document["kind"].as_str().unwrap_or_default()), pod));
    }
    assert_eq!(pods.len(), 2, "the recipe runs `serve` in a Deployment and the night in a CronJob");
    pods
}

fn strings(value: &Value) -> Vec<&str> {
    value.as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

#[test]
fn the_recipe_passes_the_kubernetes_schemas() {
    let probe = Command::new("python3").args(["-m", "kubernetes_validate", "--version"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return println!("skipped: kubernetes-validate is not installed (pip install kubernetes-validate)");
    }
    for version in KUBERNETES_VERSIONS {
        let output = Command::new("python3")
            .args(["-m", "kubernetes_validate", "--strict", "--kubernetes-version", version])
            .args(manifest_files())
            .output()
            .unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "Kubernetes {version} refuses the recipe:\n{said}");
        assert!(!said.contains("ERROR") && !said.contains("WARN"), "Kubernetes {version}:\n{said}");
    }
}

/// A container's arguments with each `$(VAR)` replaced as Kubernetes would, from the container's `env` (a
/// made-up value: only the shape matters to the parse) or, in an Indexed Job, the index it sets.
fn expanded(args: &[&str], env: &[&str], indexed: bool) -> Vec<String> {
    args.iter()
        .map(|arg| {
            let mut out = (*arg).to_owned();
            while let Some(start) = out.find("$(") {
                let end = start + out[start..].find(')').expect("an unclosed $(");
                let name = &out[start + 2..end];
                let value = match name {
                    "JOB_COMPLETION_INDEX" if indexed => "0",
                    _ if env.contains(&name) => "value",
                    _ => panic!("`{arg}` names ${name}, which the container does not have"),
                };
                out.replace_range(start..=end, value);
            }
            out
        })
        .collect()
}

fn accepted(command: &[String]) -> Result<(), String> {
    let line = std::iter::once("degrade".to_owned()).chain(command.iter().cloned());
    degrade::cli::Cli::try_parse_from(line).map(drop).map_err(|e| e.to_string())
}

#[test]
fn every_container_runs_a_command_degrade_accepts() {
    let Some(documents) = manifests() else { return };
    let scenarios: Vec<String> = config_map_config().scenarios.into_iter().map(|s| s.name).collect();
    for (holder, pod) in pod_specs(&documents) {
        let indexed = holder.starts_with("CronJob");
        for container in pod["containers"].as_array().unwrap() {
            let env: Vec<&str> =
                container["env"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
            let args = expanded(&strings(&container["args"]), &env, indexed);
            accepted(&args).unwrap_or_else(|e| panic!("{holder}: degrade refuses `{}`:\n{e}", args.join(" ")));
            // `run SCENARIO` or `check --run-now SCENARIO`: the scenario is the first word that is no flag.
            let runs_a_night = matches!(args[0].as_str(), "run" | "check");
            if let Some(scenario) = args.iter().skip(1).find(|a| !a.starts_with("--")).filter(|_| runs_a_night) {
                assert!(scenarios.contains(scenario), "{holder} runs `{scenario}`, not in the ConfigMap");
            }
            assert!(env.contains(&"DEGRADE_CONFIG") && env.contains(&"DEGRADE_DATABASE_URL"), "{holder}: {env:?}");
        }
    }
    // The image's own default command, which `podman run IMAGE` runs.
    let containerfile = std::fs::read_to_string(root().join("Containerfile")).unwrap();
    let cmd = containerfile.lines().find_map(|l| l.strip_prefix("CMD ")).expect("Containerfile has a CMD");
    let cmd: Vec<String> = serde_json::from_str(cmd).expect("CMD is written as a JSON array");
    accepted(&cmd).unwrap_or_else(|e| panic!("the image's CMD {cmd:?}:\n{e}"));
    assert!(containerfile.contains("ENTRYPOINT [\"degrade\"]"), "the binary is the image's entrypoint");
}

#[test]
fn the_night_is_one_indexed_job_split_the_same_in_its_three_places() {
    let Some(documents) = manifests() else { return };
    let cron_job = kind_of(&documents, "CronJob");
    assert_eq!(cron_job["spec"]["concurrencyPolicy"], "Forbid", "two nights never overlap");
    let job = &cron_job["spec"]["jobTemplate"]["spec"];
    let container = &job["template"]["spec"]["containers"][0];
    let args = strings(&container["args"]);
    let flag = |name: &str| args.iter().position(|a| *a == name).map(|i| args[i + 1]);
    let segment = flag("--segment").expect("the night's pods run a segment each");
    let segments = segment.strip_prefix("$(JOB_COMPLETION_INDEX)/").expect("--segment K/N, K the Job's index");
    let segments: u64 = segments.parse().unwrap();
    assert!(segments >= 2, "{segment}");
    assert_eq!(job["completionMode"], "Indexed");
    assert_eq!(job["parallelism"], segments, "every segment runs at once: parallelism is N");
    assert_eq!(job["completions"], segments, "completions is N");
    // A segment cannot join a night that has started: no index is retried, and one failure fails the Job.
    assert_eq!(job["backoffLimitPerIndex"], 0);
    assert_eq!(job["maxFailedIndexes"], 0);
    assert_eq!(job["template"]["spec"]["restartPolicy"], "Never");
    let rules = job["podFailurePolicy"]["rules"].as_array().expect("a podFailurePolicy");
    assert!(rules.iter().all(|r| r["action"] == "FailJob"), "{rules:?}");
    assert!(rules.iter().any(|r| r["onExitCodes"]["operator"] == "NotIn"), "any non-zero exit fails the Job");
    assert!(rules.iter().any(|r| r["onPodConditions"][0]["type"] == "DisruptionTarget"), "so does an eviction");
    assert!(job["activeDeadlineSeconds"].as_u64().is_some_and(|s| s > 0), "a night never runs forever");
    let spread = &job["template"]["spec"]["topologySpreadConstraints"][0];
    assert_eq!(spread["topologyKey"], "kubernetes.io/hostname", "the pods are spread across nodes");
    assert_eq!(spread["nodeTaintsPolicy"], "Honor", "a tainted node is no domain that holds 0 pods for ever");
    // The run key is the same for every pod of one night and new each night: the Job's name.
    let key = flag("--run-key").expect("the night's pods share a run key");
    let variable = key.strip_prefix("$(").and_then(|k| k.strip_suffix(')')).expect("the key comes from env");
    let env = container["env"].as_array().unwrap().iter().find(|e| e["name"] == variable).unwrap();
    assert_eq!(env["valueFrom"]["fieldRef"]["fieldPath"], "metadata.labels['batch.kubernetes.io/job-name']");
}

#[test]
fn every_pod_is_guaranteed_and_runs_as_the_images_user() {
    let Some(documents) = manifests() else { return };
    let containerfile = std::fs::read_to_string(root().join("Containerfile")).unwrap();
    let uid = containerfile.split("--uid ").nth(1).and_then(|rest| rest.split_whitespace().next()).unwrap();
    let uid: u64 = uid.parse().unwrap();
    assert!(containerfile.contains(&format!("USER {uid}:")), "the image runs as its user");
    for (holder, pod) in pod_specs(&documents) {
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{holder}");
        assert_eq!(pod["securityContext"]["runAsUser"], uid, "{holder} runs as the image's user");
        for container in pod["containers"].as_array().unwrap() {
            let resources = &container["resources"];
            // The Guaranteed class: CPU never taken back from a generator in the middle of a night.
            assert_eq!(resources["requests"], resources["limits"], "{holder}: requests equal to limits");
            assert!(resources["limits"]["cpu"].is_string() && resources["limits"]["memory"].is_string(), "{holder}");
            // The secrets come from Secrets, never written into the manifest.
            for env in container["env"].as_array().unwrap() {
                let name = env["name"].as_str().unwrap();
                if ["DATABASE_URL", "TOKEN", "WEBHOOK"].iter().any(|s| name.ends_with(s)) {
                    assert!(env["valueFrom"]["secretKeyRef"].is_object(), "{holder}: {name} from a Secret");
                }
            }
        }
    }
}

/// The ConfigMap's files written to a temp dir as the pods see them in /etc/degrade, and its degrade.toml
/// loaded by degrade's checkers, with every scenario it names.
fn config_map_config() -> Config {
    let documents = manifests().expect("called once manifests() has answered");
    let data: BTreeMap<String, String> =
        serde_json::from_value(kind_of(&documents, "ConfigMap")["data"].clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (file, text) in &data {
        std::fs::write(dir.path().join(file), text).unwrap();
    }
    // What the pods have in their environment; the webhook's Secret is optional.
    let env = |name: &str| (name == "DEGRADE_DATABASE_URL").then(|| "postgres://degrade@db/degrade".to_owned());
    let config = Config::load_with_env(&dir.path().join("degrade.toml"), &env)
        .unwrap_or_else(|e| panic!("the ConfigMap's degrade.toml:\n{e}"));
    assert!(!config.scenarios.is_empty());
    for scenario in &config.scenarios {
        degrade::scenario::load(&scenario.file, scenario.target.as_deref(), &env)
            .unwrap_or_else(|e| panic!("the ConfigMap's {}:\n{e}", scenario.file.display()));
    }
    config
}

#[test]
fn the_config_map_is_a_configuration_degrade_accepts() {
    if manifests().is_none() {
        return;
    }
    let config = config_map_config();
    // The CronJob runs the night; serve watches for it on the same schedule, and runs none itself.
    let documents = manifests().unwrap();
    let cron = kind_of(&documents, "CronJob")["spec"]["schedule"].as_str().unwrap().to_owned();
    for scenario in &config.scenarios {
        assert_eq!(scenario.run_by, degrade::config::RunBy::Elsewhere, "the CronJob runs the night, not serve");
        assert_eq!(scenario.schedule.as_ref().map(|s| s.written.as_str()), Some(cron.as_str()));
    }
    // Every webhook's variable is one serve's pod sets.
    let serve = &kind_of(&documents, "Deployment")["spec"]["template"]["spec"]["containers"][0];
    let env: Vec<&str> = serve["env"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
    for notifier in &config.notifiers {
        assert!(env.contains(&notifier.url_env.as_str()), "serve's pod does not set {}", notifier.url_env);
    }
}

/// The top-level files and folders of the repository that `.dockerignore` lets into the image's build.
fn let_in() -> Vec<String> {
    let ignore = std::fs::read_to_string(root().join(".dockerignore")).unwrap();
    assert!(ignore.lines().any(|l| l.trim() == "*"), ".dockerignore is an allow-list: it leaves out all, first");
    ignore.lines().filter_map(|l| l.trim().strip_prefix('!')).map(|p| p.trim_end_matches('/').to_owned()).collect()
}

/// What the crate reads at build time outside `src/`: each `include_str!`/`include_bytes!` of a path, and the
/// folders of the askama templates and the migrations (named through `CARGO_MANIFEST_DIR`, not a literal).
fn read_by_the_build(dir: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_by_the_build(&path, found);
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let pieces = |macro_call| text.split(macro_call).skip(1);
        for piece in pieces("include_str!(\"").chain(pieces("include_bytes!(\"")) {
            let Some(relative) = piece.split('"').next() else { continue };
            let resolved = path.parent().unwrap().join(relative);
            // The first component under the repository, `..` walked off by hand (the file need not exist).
            let mut parts: Vec<&str> = Vec::new();
            for part in resolved.strip_prefix(root()).unwrap().to_str().unwrap().split('/') {
                match part {
                    ".." => drop(parts.pop()),
                    "." | "" => {}
                    _ => parts.push(part),
                }
            }
            found.push(parts[0].to_owned());
        }
    }
}

#[test]
fn the_image_build_context_holds_every_file_the_build_reads() {
    // CI builds the image from a binary built outside (ci/container.sh), so the Rust stage's `COPY . .` is
    // never run there: this is what keeps a new `include_str!` of a file outside the allow-list from breaking
    // the users' `podman build` unseen.
    let mut needed = vec!["Cargo.toml".to_owned(), "Cargo.lock".to_owned(), "templates".into(), "migrations".into()];
    read_by_the_build(&root().join("src"), &mut needed);
    needed.sort();
    needed.dedup();
    let let_in = let_in();
    let missing: Vec<&String> = needed.iter().filter(|n| !let_in.contains(n)).collect();
    assert!(missing.is_empty(), ".dockerignore leaves out {missing:?}, which the build reads; let in {let_in:?}");
    for binary in ["target/release/degrade", "target/dist/degrade"] {
        assert!(let_in.iter().any(|l| l == binary), "{binary} is a PREBUILT the Containerfile names");
    }
}
