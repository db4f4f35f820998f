//! The unit tests of `capacity`.

use super::*;

#[test]
fn rates_group_their_thousands() {
    assert_eq!(rate_text(4000.0), "4,000");
    assert_eq!(rate_text(162.4), "162");
    assert_eq!(rate_text(1_234_567.0), "1,234,567");
    assert_eq!(rate_text(999.6), "1,000");
    assert_eq!(rate_text(f64::NAN), "n/a");
}

#[test]
fn a_change_reads_as_a_capacity_planner_writes_it() {
    let tonight = CapacityResult {
        capacity: Some(3100.0),
        first_out: Some(3200.0),
        breach: Some(ZoneBreach { gate: ZoneGate::P75, endpoint: "POST /orders".into(), value: 412.0, limit: 300.0 }),
        ended: SearchEnd::Found,
        search_secs: 60.0,
        steps: Vec::new(),
        zone: None,
    };
    let change = CapacityChange::new(4000.0, &tonight, "green");
    assert_eq!(
        change.describe(),
        "capacity 4,000 → 3,100 req/s (-22.5 %): left the green zone on p75 of POST /orders 412.0 ms against \
         300 ms (+37 %)"
    );
    assert!(CapacityChange::new(4000.0, &tonight, "red zone").describe().contains("left the red zone on"));
}

#[test]
fn a_telemetry_limit_reads_as_its_series_over_its_limit() {
    let cpu = ZoneBreach { gate: ZoneGate::TelemetryMax, endpoint: "api-host CPU".into(), value: 0.7123, limit: 0.6 };
    assert_eq!(cpu.describe(), "api-host CPU mean 0.712 over its limit 0.600 (+19 %)");
    let by_a_hair = ZoneBreach { value: 0.300_04, limit: 0.3, ..cpu.clone() };
    assert_eq!(by_a_hair.describe(), "api-host CPU mean 0.30004 over its limit 0.30000 (+0.01 %)");
    assert_eq!("telemetry_max".parse::<ZoneGate>(), Ok(ZoneGate::TelemetryMax));
}
