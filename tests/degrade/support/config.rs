//! Configuration fixtures: a one-second scenario and a `degrade.toml` with two webhooks, loaded with the
//! webhook URLs a test gives.

use std::path::Path;
use std::sync::Arc;

use degrade::config::Config;

/// One flow of one `GET /fast`, ten arrivals a second for one second: a run that takes a second.
pub const QUICK_SCENARIO: &str = "[[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/fast\"\n\
    [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 10\n";

/// `degrade.toml` for `checkout` with a Slack webhook in HOOK and a JSON one in OPS (regressions and
/// recoveries only), plus `extra` lines in the scenario entry.
pub fn alerting_config(extra: &str) -> String {
    format!(
        "[server]\npublic_url = \"https://degrade.example.com/\"\n\
         [[scenario]]\nname = \"checkout\"\nfile = \"quick.toml\"\n{extra}\n\
         [[notify]]\nname = \"team\"\nkind = \"slack\"\nurl_env = \"HOOK\"\n\
         [[notify]]\nname = \"ops\"\nkind = \"json\"\nurl_env = \"OPS\"\nevents = [\"regression\", \"recovery\"]\n"
    )
}

/// Loads `config_path` with HOOK and OPS pointing at `hook` and `ops`.
pub fn load(config_path: &Path, hook: &str, ops: &str) -> Arc<Config> {
    let env = |name: &str| match name {
        "HOOK" => Some(hook.to_owned()),
        "OPS" => Some(ops.to_owned()),
        _ => None,
    };
    Arc::new(Config::load_with_env(config_path, &env).unwrap())
}
