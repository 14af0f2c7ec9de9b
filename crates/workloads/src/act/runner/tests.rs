//! The scheduler's timing: when requests fall due, and what a run issues.

use super::*;

fn stream(rate: f64, one_in_flight: bool, start: Instant) -> StreamState {
    StreamState {
        spec: StreamSpec {
            label: "s".into(),
            rate,
            one_in_flight,
            device: None,
            shape: Shape::Record { write: false },
            hist: None,
            device_hists: None,
            txn_hist: None,
            pause: Duration::ZERO,
            kind: Kind::Read,
            burst: Burst::EVEN,
        },
        interval_ns: if rate > 0.0 { 1e9 / rate } else { 0.0 },
        issued: 0,
        completed: 0,
        busy: false,
        not_before: start,
        sequential_offset: vec![0],
    }
}

#[test]
fn a_lone_request_is_woken_for_on_time() {
    let start = Instant::now();
    // 2000/s: the next is 500 us after the first, outside the slack.
    let mut reads = stream(2000.0, false, start);
    reads.issued = 3;
    let first = start + Duration::from_micros(1500);
    assert_eq!(next_wake(&[reads], start), Some(first));
}

#[test]
fn requests_due_within_the_slack_share_one_wake() {
    let start = Instant::now();
    // 40000/s: due every 25 us, so three fall in 50 us; the wake is the
    // third's due time, never past the window.
    let mut reads = stream(40000.0, false, start);
    reads.issued = 4;
    let wake = next_wake(&[reads], start).unwrap();
    assert_eq!(wake, start + Duration::from_micros(150));
    // Another stream due inside the window does not move it further.
    let mut blocks = stream(8000.0, false, start);
    blocks.issued = 1;
    let mut reads = stream(40000.0, false, start);
    reads.issued = 4;
    let wake = next_wake(&[reads, blocks], start).unwrap();
    assert_eq!(wake, start + Duration::from_micros(150));
    // One due first and alone in its window is woken for on time, even
    // when a faster stream follows just outside it.
    let blocks = stream(8000.0, false, start);
    let mut reads = stream(40000.0, false, start);
    reads.issued = 3;
    // blocks due at 0, reads from 75 us: the window [0, 50 us] holds
    // only the block.
    let wake = next_wake(&[blocks, reads], start).unwrap();
    assert_eq!(wake, start);
    // A busy one-in-flight stream is not due at all; an idle one is due
    // once, at its own time.
    let mut writer = stream(100.0, true, start);
    writer.busy = true;
    assert_eq!(next_wake(&[writer], start), None);
}

#[test]
fn a_burst_falls_due_at_once_and_the_next_a_burst_later() {
    let start = Instant::now();
    let ms = |m: u64| start + Duration::from_millis(m);
    // 2000/s in bursts of 10: ten at 0, ten at 5 ms, ...
    let mut reads = stream(2000.0, false, start);
    reads.spec.burst = Burst::new(10, 1).unwrap();
    for k in [0, 9] {
        assert_eq!(reads.due_of(start, k), start);
    }
    assert_eq!(reads.due_of(start, 10), ms(5));
    assert_eq!(reads.due_of(start, 19), ms(5));
    assert_eq!(reads.due_of(start, 20), ms(10));
    // Part of a burst issued: the rest is due now, and the wake is for
    // the whole burst, never the next one's.
    reads.issued = 3;
    assert_eq!(next_wake(std::slice::from_ref(&reads), start), Some(start));
    assert_eq!(reads.last_due_by(start, ms(4)), Some(start));
    reads.issued = 10;
    assert_eq!(next_wake(std::slice::from_ref(&reads), start), Some(ms(5)));
    assert_eq!(reads.last_due_by(start, ms(12)), Some(ms(10)));
}

/// The decided stop's count of the reads still to come is never under
/// what the scheduler has due by then, whatever the float rounding of
/// either (found in review: a burst of 10/3 at 3,000 a second due a
/// nanosecond before a second's end was missed).
#[test]
fn the_reads_still_to_come_cover_every_request_the_scheduler_has_due() {
    let start = Instant::now();
    for (num, den) in [(10, 3), (20, 3), (7, 1), (9, 7), (720, 7), (1, 1), (1, 2)] {
        for rate in [3000.0, 9000.0, 2000.0, 1234.5] {
            let mut st = stream(rate, false, start);
            st.spec.burst = Burst::new(num, den).unwrap();
            for b in (0..20_000).step_by(7) {
                let first = st.spec.burst.first_of(b);
                let due_ns = (st.due_of(start, first) - start).as_nanos() as u64;
                // Due by then: every request up to the end of burst b.
                let due = st.spec.burst.first_of(b + 1);
                for until in [due_ns, due_ns + 1] {
                    let counted = remaining_of((rate, st.spec.burst), (0, 0), until);
                    assert!(
                        counted >= Some(due),
                        "{num}/{den} at {rate}/s, burst {b} due at {due_ns} ns: {counted:?} < {due}"
                    );
                }
            }
        }
    }
}

/// How many of `spec`'s requests are in flight after the scheduler
/// issues what is due at each of `at` (ms from the start), on a null
/// drive that answers in a minute.
fn issued_by(conf: &str, at: &[u64]) -> Vec<usize> {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "device-names: {}\nfile-size-mbytes: 8\ntest-duration-sec: 10\n{conf}",
        dir.path().join("d").display()
    );
    let cfg = crate::act::config::StorageConfig::parse(&text, "t.conf").unwrap();
    let spec = crate::act::Workload::run_spec(&cfg, &Default::default());
    let cleared = storcert_device::safety::check_all(
        &[cfg.device_names[0].clone().into()],
        &Default::default(),
    )
    .unwrap();
    let devices = vec![Device::open(&cleared[0], false, 8 << 20).unwrap()];
    let null = "60s".parse().unwrap();
    let kind = storcert_engine::EngineKind::Null;
    let mut engine = storcert_engine::open_with(kind, 4096, &null).unwrap();
    let start = Instant::now();
    let pats = patterns(&spec, &devices).unwrap();
    let mut s = Scheduler::new(Arc::new(spec), pats, 1, Some((start, Arc::default())));
    at.iter()
        .map(|&m| {
            let now = start + Duration::from_millis(m);
            assert!(s
                .issue_due(now, &devices, engine.as_mut())
                .unwrap()
                .is_none());
            engine.in_flight()
        })
        .collect()
}

#[test]
fn service_threads_given_shape_the_reads_into_acts_bursts() {
    let at = [0, 4, 5, 9, 10];
    let load = "read-reqs-per-sec: 2000\nwrite-reqs-per-sec: 0\n";
    // Left to ACT's default: even, one every 500 us.
    assert_eq!(issued_by(load, &at), [1, 9, 11, 19, 21]);
    // Given: as ACT's 10 threads, ten at once every 5 ms.
    let given = format!("{load}service-threads: 10\n");
    assert_eq!(issued_by(&given, &at), [10, 10, 20, 20, 30]);
}
