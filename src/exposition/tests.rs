#![allow(clippy::float_cmp, reason = "the values parsed are exact")]

use rand::{Rng, SeedableRng};

use super::*;

fn sample_of(line: &str) -> Sample<'_> {
    match parse_line(line) {
        Ok(Line::Sample(sample)) => sample,
        other => panic!("{line}: {other:?}"),
    }
}

#[test]
fn samples_are_read_with_their_labels_unescaped() {
    let s = sample_of(r#"node_cpu_seconds_total{cpu="0",mode="idle"} 408.04"#);
    assert_eq!((s.name, s.label("cpu"), s.label("mode"), s.value), ("node_cpu_seconds_total", "0", "idle", 408.04));
    assert_eq!(s.label("absent"), "");
    let s = sample_of(r#"m{a="x,y=z}",b="say \"hi\"\\n",} 1e3 1700000000000"#);
    assert_eq!((s.label("a"), s.label("b"), s.value), ("x,y=z}", "say \"hi\"\\n", 1000.0));
    let s = sample_of("up  \t 1\r");
    assert_eq!((s.name, s.labels.len(), s.value), ("up", 0, 1.0));
    assert!(sample_of("m NaN").value.is_nan());
    assert_eq!(sample_of("m{} -Inf").value, f64::NEG_INFINITY);
    // An OpenMetrics exemplar after the value and timestamp is read past.
    assert_eq!(sample_of(r#"m_total 3 # {trace_id="a"} 1 1.5"#).value, 3.0);
    assert_eq!(sample_of("m_total 3 17 # {} 1").value, 3.0);
}

#[test]
fn comments_and_types_are_told_apart() {
    assert_eq!(parse_line("# TYPE m counter"), Ok(Line::Type { name: "m", kind: "counter" }));
    for other in ["", "   ", "# HELP m what it is", "# EOF", "#", "# UNIT m seconds"] {
        assert_eq!(parse_line(other), Ok(Line::Other), "{other:?}");
    }
}

#[test]
fn what_is_not_the_format_says_why() {
    let cases = [
        ("<html>", "does not start with a metric name"),
        ("9m 1", "does not start with a metric name"),
        ("m", "has no value"),
        ("m{a=\"b\"}1", "has no space before its value"),
        ("m one", "has no number as its value"),
        ("m inf", "has no number as its value"),
        ("m{a=b} 1", "not in double quotes"),
        ("m{a=\"b} 1", "closing quote is missing"),
        ("m{a} 1", "without `=`"),
        ("m{a=\"b\" c=\"d\"} 1", "not separated"),
        ("m 1 2 3", "has text after its timestamp"),
        ("m 1 soon", "not a timestamp"),
        ("{a=\"b\"} 1", "does not start with a metric name"),
    ];
    for (line, why) in cases {
        let error = parse_line(line).expect_err(line);
        assert!(error.0.contains(why), "{line}: {error}");
    }
    // Control characters in what is quoted back are escaped; a long line is cut.
    let error = parse_line(&format!("\u{1b}[31m{}", "x".repeat(500))).unwrap_err();
    assert!(error.0.contains("\\u{1b}") && error.0.chars().count() < 150, "{error}");
}

#[test]
fn selectors_match_as_promql_does() {
    let cpu = |mode: &str, cpu: &str| format!("node_cpu_seconds_total{{cpu=\"{cpu}\",mode=\"{mode}\"}} 1");
    let busy = Selector::parse(r#"node_cpu_seconds_total{mode!="idle"}"#).unwrap();
    let lines = [cpu("idle", "0"), cpu("user", "0"), cpu("iowait", "1")];
    let matched: Vec<bool> = lines.iter().map(|l| busy.matches(&sample_of(l))).collect();
    assert_eq!(matched, [false, true, true]);
    let xact =
        Selector::parse(r#"{__name__=~"pg_stat_database_xact_(commit|rollback)", datname!~"template.*"}"#).unwrap();
    assert!(xact.matches(&sample_of(r#"pg_stat_database_xact_commit{datname="app"} 5"#)));
    assert!(!xact.matches(&sample_of(r#"pg_stat_database_xact_commit{datname="template1"} 5"#)));
    assert!(!xact.matches(&sample_of(r#"pg_stat_database_xact_commits{datname="app"} 5"#)));
    // An absent label is the empty value.
    let unlabelled = Selector::parse(r#"m{job=""}"#).unwrap();
    assert!(unlabelled.matches(&sample_of("m 1")) && !unlabelled.matches(&sample_of("m{job=\"a\"} 1")));
    assert_eq!(xact.to_string(), r#"{__name__=~"pg_stat_database_xact_(commit|rollback)", datname!~"template.*"}"#);
    assert_eq!(Selector::parse(" up ").unwrap().to_string(), "up");
}

#[test]
fn bad_selectors_say_why() {
    let cases = [
        ("", "names no metric"),
        (r#"{job="a"}"#, "names no metric"),
        (r#"{__name__=~".*"}"#, "names no metric"),
        ("rate(m[5m])", "write a metric name"),
        (r#"m{mode="idle""#, "write a metric name"),
        (r"m{mode=idle}", "not in double quotes"),
        (r#"m{mode~"idle"}"#, "is not followed by"),
        (r#"m{mode=~"(idle"}"#, "not a regular expression"),
        (r#"m{a="1" b="2"}"#, "separated by `,`"),
        ("9m", "starts with a letter"),
    ];
    for (text, why) in cases {
        let error = Selector::parse(text).expect_err(text);
        assert!(error.contains(why), "{text}: {error}");
    }
}

/// Whatever bytes an exporter sends, reading them line by line never panics: random lines, and real lines
/// cut, spliced and with bytes flipped.
#[test]
fn no_input_makes_the_reader_panic() {
    let real = [
        r#"node_cpu_seconds_total{cpu="0",mode="idle"} 408.04"#,
        r#"m{a="x\"y\\z",b="é"} -1.5e-3 1700000000000 # {t="1"} 2"#,
        "# TYPE node_cpu_seconds_total counter",
    ];
    let alphabet: Vec<char> = "ab_:{}=!~\",\\# \t\r0123456789.eE+-NaInf\u{0}\u{1b}é😀".chars().collect();
    let selector = Selector::parse(r#"m{a=~"x.*", b!="2"}"#).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(43);
    for round in 0..200_000 {
        let line: String = if round % 2 == 0 {
            (0..rng.random_range(0..40)).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect()
        } else {
            let mut chars: Vec<char> = real[round % real.len()].chars().collect();
            for _ in 0..rng.random_range(1..4) {
                let at = rng.random_range(0..=chars.len());
                match rng.random_range(0..3) {
                    0 => chars.truncate(at),
                    1 => chars.insert(at, alphabet[rng.random_range(0..alphabet.len())]),
                    _ if at < chars.len() => {
                        chars.remove(at);
                    }
                    _ => {}
                }
            }
            chars.into_iter().collect()
        };
        if let Ok(Line::Sample(sample)) = parse_line(&line) {
            let _ = selector.matches(&sample);
        }
        let _ = Selector::parse(&line);
    }
}
