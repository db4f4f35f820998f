//! `degrade proto fetch` against the tests' gRPC stub, whose reflection service (v1alpha only) sends each file
//! alone: the descriptor set written has every service the stub lists and every import asked for by name, a
//! scenario naming it in `[proto] files` calls the stub as one naming the `.proto` would, and a service the
//! server does not know is refused, saying which.

use prost::Message as _;
use prost_reflect::DescriptorPool;
use prost_reflect::prost_types::FileDescriptorSet;

use crate::support::grpc_stub::GrpcStub;
use crate::support::h2_stub::{H2Options, H2Stub};
use crate::support::quoted::assert_quoted;
use crate::support::{degrade_child, run_scenario, text};

async fn fetch(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = degrade_child(dir, args, &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), stdout, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_reflection_becomes_a_descriptor_set_a_scenario_calls_through() {
    let stub = GrpcStub::start().await;
    let dir = tempfile::tempdir().unwrap();
    let url = stub.url();
    let (code, stdout, stderr) = fetch(dir.path(), &["proto", "fetch", &url, "--out", "api.protoset"]).await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_quoted("proto-fetch", &stdout);

    // Every file each service needs, the imports asked for by name included, and nothing twice.
    let bytes = std::fs::read(dir.path().join("api.protoset")).unwrap();
    let set = FileDescriptorSet::decode(bytes.as_slice()).unwrap();
    let mut names: Vec<&str> = set.file.iter().map(prost_reflect::prost_types::FileDescriptorProto::name).collect();
    names.sort_unstable();
    assert_eq!(names, ["catalog.proto", "google/protobuf/timestamp.proto", "stub.proto"]);
    let pool = DescriptorPool::from_file_descriptor_set(set).unwrap();
    assert!(pool.get_message_by_name("stub.Entry").is_some());

    // The set described the stub as its .proto does: a scenario calls it, and a wrong field is refused at load.
    let flows = |json: &str| {
        format!(
            "[target]\nbase_url = \"{url}\"\nconnect_timeout = \"10s\"\n[proto]\nfiles = [\"{}\"]\n\
             [[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Echo\"\njson = {json}\n\
             expect = {{ json = [{{ path = \"$.number\", eq = 7 }}] }}\n\
             [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 10\n",
            dir.path().join("api.protoset").display()
        )
    };
    let measurement = run_scenario(&flows("{ text = \"hi\" }"), &[]).await;
    let echo = measurement.results.endpoints.iter().find(|e| e.endpoint == "gRPC stub.Stub/Echo").unwrap();
    assert_eq!((echo.requests, echo.errors), (10, 0), "{:?}", echo.error_samples);
    let refused = degrade::scenario::parse(&dir.path().join("s.toml"), &flows("{ txt = \"hi\" }"), None, &|_| None)
        .expect_err("a field the set does not have");
    assert!(refused.to_string().contains("json.txt: message `stub.CallRequest` has no field `txt`"), "{refused}");

    // Only the services asked for; one the server does not know is named.
    let (code, stdout, _) =
        fetch(dir.path(), &["proto", "fetch", &url, "--service", "stub.Catalog", "-o", "catalog.protoset"]).await;
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("describing 1 service:\n  stub.Catalog (1 method)"), "{stdout}");
    let (code, _, stderr) = fetch(dir.path(), &["proto", "fetch", &url, "--service", "stub.Nope"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("the server could not describe `stub.Nope`: not found (gRPC status 5)"), "{stderr}");
    assert!(!dir.path().join("api.protoset.tmp").exists());
}

#[tokio::test]
async fn a_server_without_reflection_or_a_wrong_url_is_said_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, stderr) = fetch(dir.path(), &["proto", "fetch", "ftp://127.0.0.1:1"]).await;
    assert_eq!(code, Some(2));
    assert!(stderr.contains("starts with http:// (h2c) or https://"), "{stderr}");
    // Credentials are refused before anything says the URL: in another scheme, in capitals, unparsable.
    for url in ["http://me:s3cret@127.0.0.1:1", "ftp://me:s3cret@h", "HTTPS://me:s3cret@h", "http://me:s3cret@[::1"] {
        let (code, _, stderr) = fetch(dir.path(), &["proto", "fetch", url]).await;
        assert_eq!(code, Some(2), "{url}");
        assert!(stderr.contains("the server's URL holds credentials"), "{url}: {stderr}");
        assert!(!stderr.contains("s3cret"), "{stderr}");
    }
    // An HTTP/2 server that is no gRPC server (the tests' HTTP/2 stub) answers no reflection.
    let h2 = H2Stub::http2(H2Options::default()).await;
    let (code, _, stderr) = fetch(dir.path(), &["proto", "fetch", &h2.url()]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("error: "), "{stderr}");
    assert!(!dir.path().join("api.protoset").exists());
    // An HTTP/1.1-only server was reached: it is said to speak no HTTP/2, not to be unreachable.
    let http1 = H2Stub::http1_only(None).await;
    let (code, _, stderr) = fetch(dir.path(), &["proto", "fetch", &http1.url()]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("was reached but gave no HTTP/2 answer, which gRPC runs on"), "{stderr}");
}

#[test]
fn a_file_that_is_no_descriptor_set_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("api.protoset"), b"\xff\xff\xff not protobuf").unwrap();
    let text = "[target]\nbase_url = \"http://127.0.0.1:1\"\n[proto]\nfiles = [\"api.protoset\"]\n\
                [[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Echo\"\n";
    let refused = degrade::scenario::parse(&dir.path().join("s.toml"), text, None, &|_| None)
        .expect_err("bytes that are no descriptor set");
    let said = refused.to_string();
    assert!(said.contains("s.toml:4:10: proto.files[0]: api.protoset: is not a descriptor set"), "{said}");
}
