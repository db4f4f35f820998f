//! `degrade proto fetch`: a gRPC server's descriptors, asked of its reflection service, written as a descriptor
//! set that `[proto] files` names (see `scenario::reflection` for why a file rather than asking at each load).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use prost::Message;

use super::{Exit, print_stdout};
use crate::outside_text::printable;
use crate::scenario::reflection::describe;

/// `degrade proto …`.
#[derive(Debug, clap::Subcommand)]
pub enum ProtoCommand {
    /// Ask a gRPC server's reflection service for its methods and write them as a descriptor set.
    #[command(after_help = "Examples:\n  degrade proto fetch http://127.0.0.1:50051 --out scenarios/api.protoset\n  \
        degrade proto fetch https://api.example.com --service boards.v1.Boards --ca-file ca.pem\n\n\
        http:// speaks HTTP/2 with prior knowledge (h2c), https:// HTTP/2 over TLS. The file is protoc's \
        --descriptor_set_out format (grpcurl's and ghz's --protoset): name it in the scenario's [proto] files.")]
    Fetch(FetchArgs),
}

/// `degrade proto fetch`'s arguments.
#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// The server: http://HOST:PORT (h2c) or https://HOST:PORT.
    #[arg(value_name = "URL")]
    url: String,
    /// Describe only these services (repeatable or comma-separated) [default: every service it lists].
    #[arg(long = "service", value_delimiter = ',', value_name = "SERVICE")]
    services: Vec<String>,
    /// The descriptor set to write.
    #[arg(long, short, value_name = "FILE", default_value = "api.protoset")]
    out: PathBuf,
    /// Trust this PEM certificate (a private CA or a self-signed server) besides the Mozilla roots.
    #[arg(long, value_name = "PEM")]
    ca_file: Option<PathBuf>,
    /// Give up after this long.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = |s: &str| crate::config::durations::parse_positive(s, "10s or 30s"))]
    timeout: std::time::Duration,
}

/// Runs `degrade proto …`.
pub async fn run(command: ProtoCommand) -> anyhow::Result<Exit> {
    let ProtoCommand::Fetch(args) = command;
    // The URL is said in errors (reqwest's own among them): credentials in it would be printed. Read from
    // the text, before anything else, so a URL that does not parse or has another scheme is refused too.
    if crate::secret::url_has_password(&args.url) {
        anyhow::bail!("the server's URL holds credentials, which would be printed in errors: give it without them");
    }
    let scheme = args.url.split_once("://").map(|(scheme, _)| scheme.to_ascii_lowercase());
    let plain = scheme.as_deref() == Some("http");
    if !plain && scheme.as_deref() != Some("https") {
        anyhow::bail!("the server's URL starts with http:// (h2c) or https://, not `{}`", printable(&args.url));
    }
    let roots = match &args.ca_file {
        Some(path) => crate::scenario::certificates(path, &path.display().to_string()).map_err(anyhow::Error::msg)?,
        None => Vec::new(),
    };
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(crate::engine::client::tls_config_for(&[b"h2"], &roots))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("degrade/", env!("CARGO_PKG_VERSION")))
        .timeout(args.timeout);
    if plain {
        builder = builder.http2_prior_knowledge();
    }
    let described = describe(&builder.build()?, &args.url, &args.services).await?;
    let bytes = described.files.encode_to_vec();
    write_atomically(&args.out, &bytes).with_context(|| format!("cannot write {}", args.out.display()))?;
    let (files, services) = (described.files.file.len(), described.services.len());
    let mut said = format!(
        "{}: {files} file{}, {} bytes, describing {services} service{}:\n",
        args.out.display(),
        plural(files),
        bytes.len(),
        plural(services)
    );
    for name in &described.services {
        let methods = described.pool.get_service_by_name(name).map(|s| s.methods().count()).unwrap_or_default();
        let _ = writeln!(said, "  {} ({methods} method{})", printable(name), plural(methods));
    }
    let _ = writeln!(said, "Name it in the scenario: [proto] files = [\"{}\"]", args.out.display());
    print_stdout(&said)?;
    Ok(Exit::Ok)
}

/// Through a temporary file beside it and a rename: an interrupted fetch never leaves half a descriptor set.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(folder)?;
    file.write_all(bytes)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
