//! The null engine: no I/O at all, each request "completes" after a latency
//! the caller sets (fio has one too, to measure the tool itself). Its use is
//! a drive whose behaviour a test decides: the scheduler, the verdicts and
//! the load search are then checked against known latencies, not against
//! how fast this machine's disk happens to be. The completion time it
//! reports is the modelled one, so a busy CPU that wakes late does not add
//! latency; only the issue times (the scheduler's own lag) are real.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::io;
use std::str::FromStr;
use std::time::{Duration, Instant};

use super::{Completion, Engine, Request};
use storcert_util::random::Rng;

/// How long a request takes: `base`, or the latency of the highest step
/// whose rate the last second's requests to the same drive exceeded (a
/// drive that slows down past its sustainable rate); or, for a share of
/// requests drawn at random, a latency of its own where that is longer
/// (a drive whose tail a test sets: "200us,4%=2ms" puts 4% of reads over
/// 1 ms, near ACT's 5%).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NullLatency {
    pub base: Duration,
    /// (requests in the last second above which, latency), rising rates.
    pub steps: Vec<(u32, Duration)>,
    /// (parts per million of requests, latency): each request draws at
    /// most one share; the shares add up to at most all of them.
    pub shares: Vec<(u32, Duration)>,
    /// The draws' seed ("seed=7"), for a run that repeats; else each
    /// engine draws its own.
    pub seed: Option<u64>,
}

impl NullLatency {
    fn at_rate(&self, per_sec: usize) -> Duration {
        self.steps
            .iter()
            .rev()
            .find(|(above, _)| per_sec > *above as usize)
            .map_or(self.base, |s| s.1)
    }

    /// The drawn share's latency for a draw in 0..1,000,000, if any.
    fn drawn(&self, ppm: u32) -> Option<Duration> {
        let mut below = 0;
        self.shares.iter().find_map(|&(share, lat)| {
            below += share;
            (ppm < below).then_some(lat)
        })
    }
}

const PPM: u32 = 1_000_000;

/// "4%" (decimals allowed, to a millionth) in parts per million.
fn parse_share(s: &str) -> Option<u32> {
    let pct = s.trim().strip_suffix('%')?;
    let (whole, frac) = pct.split_once('.').unwrap_or((pct, ""));
    if whole.is_empty()
        || frac.len() > 4
        || !(whole.chars().chain(frac.chars())).all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let whole: u32 = whole.parse().ok().filter(|w| *w <= 100)?;
    let frac: u32 = format!("{frac:0<4}").parse().ok()?;
    Some(whole * 10_000 + frac).filter(|p| *p <= PPM)
}

fn share_text(ppm: u32) -> String {
    let text = format!("{}.{:04}", ppm / 10_000, ppm % 10_000);
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("null latency {text:?}: {why} (expected e.g. \"200us\", \"200us,5000/s=3ms\" or \"200us,4%=2ms\")")]
pub struct NullLatencyError {
    text: String,
    why: String,
}

fn parse_latency(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = num.parse().ok()?;
    let d = match unit {
        "ns" => Duration::from_nanos(n),
        "us" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        _ => return None,
    };
    // A latency past a minute is a stuck drive, which io_timeout tests.
    (d <= Duration::from_secs(60)).then_some(d)
}

impl FromStr for NullLatency {
    type Err = NullLatencyError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = |why: &str| NullLatencyError {
            text: text.chars().take(80).collect(),
            why: why.to_string(),
        };
        let mut parts = text.split(',');
        let base = parse_latency(parts.next().unwrap_or_default()).ok_or_else(|| {
            err("the first part is a latency with a unit (ns, us, ms, s) of at most 60 s")
        })?;
        let mut m = NullLatency {
            base,
            ..NullLatency::default()
        };
        for part in parts {
            let (key, lat) = part
                .split_once('=')
                .ok_or_else(|| err("a step is RATE/s=LATENCY, a share PCT%=LATENCY"))?;
            if key.trim() == "seed" {
                m.seed = Some(
                    lat.trim()
                        .parse()
                        .map_err(|_| err("a seed is a whole number"))?,
                );
                continue;
            }
            let lat = parse_latency(lat).ok_or_else(|| {
                err("a step's or share's latency has a unit (ns, us, ms, s) and is at most 60 s")
            })?;
            if key.trim().ends_with('%') {
                let share = parse_share(key)
                    .ok_or_else(|| err("a share is a percentage of at most 100, to 4 decimals"))?;
                m.shares.push((share, lat));
                if m.shares.iter().map(|s| s.0).sum::<u32>() > PPM {
                    return Err(err("the shares add up to more than 100%"));
                }
                continue;
            }
            let rate: u32 = key
                .trim()
                .strip_suffix("/s")
                .and_then(|r| r.parse().ok())
                .ok_or_else(|| err("a step's rate is a whole number of requests with /s"))?;
            if m.steps.last().is_some_and(|s| s.0 >= rate) {
                return Err(err("steps go in rising order of rate"));
            }
            m.steps.push((rate, lat));
        }
        if m.steps.len() > 16 || m.shares.len() > 16 {
            return Err(err("at most 16 steps and 16 shares"));
        }
        Ok(m)
    }
}

/// A latency in the largest unit that keeps it whole.
fn latency_text(d: Duration) -> String {
    let ns = d.as_nanos();
    match ns {
        _ if ns % 1_000_000 == 0 => format!("{}ms", ns / 1_000_000),
        _ if ns % 1_000 == 0 => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}

impl fmt::Display for NullLatency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&latency_text(self.base))?;
        for (rate, lat) in &self.steps {
            write!(f, ",{rate}/s={}", latency_text(*lat))?;
        }
        for (share, lat) in &self.shares {
            write!(f, ",{}={}", share_text(*share), latency_text(*lat))?;
        }
        if let Some(seed) = self.seed {
            write!(f, ",seed={seed}")?;
        }
        Ok(())
    }
}

pub struct NullEngine {
    model: NullLatency,
    capacity: usize,
    /// Pushed, not yet issued.
    queued: Vec<Request>,
    /// Issued, soonest due first: a wide run holds tens of thousands in
    /// flight, and a reap takes what is due without a pass over the rest.
    /// The heap holds (due, issue order, slot) alone, so its moves are
    /// small; each request waits in its slot of `slots`.
    pending: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    /// The same, for a model of one latency: due in issue order, so a queue
    /// (a heap's pop was a tenth of a wide run's CPU).
    in_order: VecDeque<(Instant, usize)>,
    slots: Vec<Option<(Instant, Request)>>,
    free: Vec<usize>,
    /// Issued so far: ties in due time complete in issue order.
    issued: u64,
    /// Issue times within the last second, per drive (file descriptor):
    /// the model's rate is each drive's own, so N null drives in one run
    /// behave as N separate drives, not one drive at N times the rate.
    /// (Indexed by the descriptor, which the kernel hands out from the
    /// lowest free: a few dozen slots.)
    recent: Vec<VecDeque<Instant>>,
    /// Draws the shares' requests.
    rng: Rng,
    /// Whether the thread that reaps has its timer slack cut (`reap`).
    precise: bool,
}

/// Requests issued to the drive `fd` in the last second, `now`'s included.
fn last_second(recent: &mut Vec<VecDeque<Instant>>, fd: i32, now: Instant) -> usize {
    let slot = usize::try_from(fd).unwrap_or(0);
    if slot >= recent.len() {
        recent.resize_with(slot + 1, VecDeque::new);
    }
    let recent = &mut recent[slot];
    while recent
        .front()
        .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
    {
        recent.pop_front();
    }
    recent.push_back(now);
    recent.len()
}

impl NullEngine {
    pub fn new(depth: usize, model: NullLatency) -> NullEngine {
        NullEngine {
            rng: model.seed.map_or_else(Rng::from_entropy, Rng::seeded),
            model,
            capacity: depth.max(1),
            queued: Vec::new(),
            pending: BinaryHeap::new(),
            in_order: VecDeque::new(),
            slots: Vec::new(),
            free: Vec::new(),
            issued: 0,
            recent: Vec::new(),
            precise: false,
        }
    }

    fn issue(&mut self) {
        let now = Instant::now();
        for req in self.queued.drain(..) {
            let mut latency = match self.model.steps.is_empty() {
                true => self.model.base,
                false => {
                    let per_sec = last_second(&mut self.recent, req.fd, now);
                    self.model.at_rate(per_sec)
                }
            };
            if !self.model.shares.is_empty() {
                let drawn = self.model.drawn((self.rng.next_u64() % PPM as u64) as u32);
                latency = latency.max(drawn.unwrap_or_default());
            }
            self.issued += 1;
            let slot = match self.free.pop() {
                Some(i) => {
                    self.slots[i] = Some((now, req));
                    i
                }
                None => {
                    self.slots.push(Some((now, req)));
                    self.slots.len() - 1
                }
            };
            match self.model.steps.is_empty() && self.model.shares.is_empty() {
                true => self.in_order.push_back((now + latency, slot)),
                false => self
                    .pending
                    .push(Reverse((now + latency, self.issued, slot))),
            }
        }
    }

    /// Moves every request due by `now` to `out`, soonest first.
    fn collect(&mut self, now: Instant, out: &mut Vec<Completion>) -> usize {
        let before = out.len();
        loop {
            let (due, slot) = match (self.in_order.front(), self.pending.peek()) {
                (Some(&(due, slot)), _) if due <= now => {
                    self.in_order.pop_front();
                    (due, slot)
                }
                (_, Some(&Reverse((due, _, slot)))) if due <= now => {
                    self.pending.pop();
                    (due, slot)
                }
                _ => break,
            };
            self.free.push(slot);
            let Some((issued_at, req)) = self.slots[slot].take() else {
                continue;
            };
            out.push(Completion {
                tag: req.tag,
                offset: req.offset,
                len: req.len,
                write: req.write,
                result: req.len as i64,
                buf: req.buf,
                issued_at,
                completed_at: due,
            });
        }
        out.len() - before
    }
}

impl Engine for NullEngine {
    fn name(&self) -> &'static str {
        "null"
    }

    fn in_flight(&self) -> usize {
        self.queued.len() + self.pending.len() + self.in_order.len()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn push(&mut self, req: Request) -> io::Result<()> {
        if self.in_flight() >= self.capacity {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "engine at capacity",
            ));
        }
        self.queued.push(req);
        Ok(())
    }

    fn submit(&mut self) -> io::Result<()> {
        self.issue();
        Ok(())
    }

    /// A drive's rate starts afresh: the next drive given this descriptor
    /// number is not one that had this one's requests (found in the suite:
    /// on a pool, a trial at 2x inherited the last second of an 8x trial
    /// that had held the number).
    fn forget(&mut self, fd: std::os::fd::RawFd) {
        if let Some(recent) = usize::try_from(fd)
            .ok()
            .and_then(|i| self.recent.get_mut(i))
        {
            recent.clear();
        }
    }

    fn reap(&mut self, until: Option<Instant>, out: &mut Vec<Completion>) -> io::Result<()> {
        self.issue();
        if self.collect(Instant::now(), out) > 0 {
            return Ok(());
        }
        let next = match (self.in_order.front(), self.pending.peek()) {
            (Some(a), Some(b)) => Some(a.0.min(b.0 .0)),
            (a, b) => a.map(|a| a.0).or(b.map(|b| b.0 .0)),
        };
        let wake = match (next, until) {
            (Some(n), Some(u)) => n.min(u),
            (Some(n), None) => n,
            (None, Some(u)) => u,
            (None, None) => return Ok(()),
        };
        if !self.precise {
            // A sleep ends up to the thread's timer slack late (50 us by
            // default): a modelled 100 us drive answered in 150 to 160, and
            // a stream that keeps one request in flight (ACT's large-block
            // reader and writer) fell behind at 200x. 1 us, for this
            // thread: the one that reaps the engine.
            // SAFETY: PR_SET_TIMERSLACK takes a value and no pointer.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000u64) };
            self.precise = true;
        }
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
        self.collect(Instant::now(), out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::RawFd;

    fn req(tag: u64) -> Request {
        on(-1, tag)
    }

    fn on(fd: RawFd, tag: u64) -> Request {
        Request::read_4k(fd, tag)
    }

    #[test]
    fn parses_and_rejects() {
        let m: NullLatency = "200us,5000/s=3ms,9000/s=20ms".parse().unwrap();
        assert_eq!(m.base, Duration::from_micros(200));
        assert_eq!(
            m.steps,
            vec![
                (5000, Duration::from_millis(3)),
                (9000, Duration::from_millis(20))
            ]
        );
        assert_eq!(m.to_string().parse::<NullLatency>().unwrap(), m);
        for text in ["500ns", "1500ns,10/s=2ms", "0ms", "60s"] {
            let m: NullLatency = text.parse().unwrap();
            assert_eq!(m.to_string().parse::<NullLatency>().unwrap(), m, "{text}");
        }
        assert_eq!(m.at_rate(5000), Duration::from_micros(200));
        assert_eq!(m.at_rate(5001), Duration::from_millis(3));
        assert_eq!(m.at_rate(100_000), Duration::from_millis(20));
        for bad in [
            "",
            "200",
            "200xs",
            "-1ms",
            "61s",
            "1ms,5000=2ms",
            "1ms,5000/s",
            "1ms,5000/s=2",
            "1ms,9000/s=2ms,5000/s=3ms",
            "99999999999999999999999ms",
        ] {
            let e = bad.parse::<NullLatency>().unwrap_err().to_string();
            assert!(e.starts_with("null latency"), "{bad}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn reports_the_modelled_latency_not_the_wake_up() {
        let mut e = NullEngine::new(4, "2ms".parse().unwrap());
        e.push(req(1)).unwrap();
        e.push(req(2)).unwrap();
        assert_eq!(e.in_flight(), 2);
        let mut out = Vec::new();
        while out.len() < 2 {
            e.reap(None, &mut out).unwrap();
        }
        // Sleep past the completion: the reported latency stays 2 ms.
        e.push(req(3)).unwrap();
        e.submit().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        e.reap(None, &mut out).unwrap();
        assert_eq!(out.len(), 3);
        for c in &out {
            assert_eq!(c.completed_at - c.issued_at, Duration::from_millis(2));
            assert!(c.error().is_none());
        }
        assert_eq!(e.in_flight(), 0);
    }

    #[test]
    fn slows_past_the_rate_and_holds_its_capacity() {
        let mut e = NullEngine::new(8, "0us,3/s=5ms".parse().unwrap());
        for t in 0..5 {
            e.push(req(t)).unwrap();
        }
        e.submit().unwrap();
        let mut out = Vec::new();
        while out.len() < 5 {
            e.reap(None, &mut out).unwrap();
        }
        out.sort_by_key(|c| c.tag);
        let lat: Vec<u128> = out
            .iter()
            .map(|c| (c.completed_at - c.issued_at).as_millis())
            .collect();
        assert_eq!(lat, vec![0, 0, 0, 5, 5]);
        let mut e = NullEngine::new(1, NullLatency::default());
        e.push(req(1)).unwrap();
        assert!(e.push(req(2)).is_err());
        let mut got = Vec::new();
        e.reap(None, &mut got).unwrap();
        assert_eq!(got.len(), 1);
        // Nothing in flight: reap sleeps until asked, and returns nothing.
        let asked = Instant::now();
        e.reap(Some(asked + Duration::from_millis(5)), &mut got)
            .unwrap();
        assert!(asked.elapsed() >= Duration::from_millis(5));
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn parses_shares_and_a_seed() {
        let m: NullLatency = "200us,5000/s=3ms,4%=2ms,0.05%=70ms,seed=7".parse().unwrap();
        assert_eq!(
            m.shares,
            vec![
                (40_000, Duration::from_millis(2)),
                (500, Duration::from_millis(70))
            ]
        );
        assert_eq!(m.seed, Some(7));
        assert_eq!(m.to_string(), "200us,5000/s=3ms,4%=2ms,0.05%=70ms,seed=7");
        assert_eq!(m.to_string().parse::<NullLatency>().unwrap(), m);
        assert_eq!(m.drawn(0), Some(Duration::from_millis(2)));
        assert_eq!(m.drawn(39_999), Some(Duration::from_millis(2)));
        assert_eq!(m.drawn(40_499), Some(Duration::from_millis(70)));
        assert_eq!(m.drawn(40_500), None);
        for bad in [
            "1ms,101%=2ms",
            "1ms,60%=2ms,50%=3ms",
            "1ms,%=2ms",
            "1ms,1.00001%=2ms",
            "1ms,-1%=2ms",
            "1ms,seed=x",
            "1ms,4%=2",
        ] {
            let e = bad.parse::<NullLatency>().unwrap_err().to_string();
            assert!(e.starts_with("null latency"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_share_of_requests_drawn_at_random_takes_its_latency() {
        // 20,000 requests, 4% drawn for 2 ms: as many as chance gives
        // (sd 28), and the same ones again from the same seed.
        let slow = |seed: u64| {
            let mut e = NullEngine::new(20_000, format!("0us,4%=2ms,seed={seed}").parse().unwrap());
            for t in 0..20_000 {
                e.push(req(t)).unwrap();
            }
            e.submit().unwrap();
            let mut out = Vec::new();
            while out.len() < 20_000 {
                e.reap(None, &mut out).unwrap();
            }
            out.sort_by_key(|c| c.tag);
            out.iter()
                .filter(|c| c.completed_at - c.issued_at == Duration::from_millis(2))
                .map(|c| c.tag)
                .collect::<Vec<u64>>()
        };
        let drawn = slow(7);
        assert!((700..=900).contains(&drawn.len()), "{}", drawn.len());
        assert_eq!(slow(7), drawn);
        assert_ne!(slow(8), drawn);
    }

    #[test]
    fn each_drive_slows_at_its_own_rate() {
        // Three requests a second each on two drives: neither is past its
        // rate of 3/s, though together they are 6.
        let mut e = NullEngine::new(16, "0us,3/s=5ms".parse().unwrap());
        for t in 0..6 {
            e.push(on(3 + (t % 2) as RawFd, t)).unwrap();
        }
        // A fourth on one drive is past its own rate.
        e.push(on(3, 6)).unwrap();
        e.submit().unwrap();
        let mut out = Vec::new();
        while out.len() < 7 {
            e.reap(None, &mut out).unwrap();
        }
        out.sort_by_key(|c| c.tag);
        let lat: Vec<u128> = out
            .iter()
            .map(|c| (c.completed_at - c.issued_at).as_millis())
            .collect();
        assert_eq!(lat, vec![0, 0, 0, 0, 0, 0, 5]);
    }

    #[test]
    fn a_forgotten_descriptor_is_a_new_drive() {
        let mut e = NullEngine::new(16, "0us,3/s=5ms".parse().unwrap());
        let latencies = |e: &mut NullEngine, n: u64| {
            for t in 0..n {
                e.push(on(3, t)).unwrap();
            }
            e.submit().unwrap();
            let mut out = Vec::new();
            while out.len() < n as usize {
                e.reap(None, &mut out).unwrap();
            }
            out.sort_by_key(|c| c.tag);
            out.iter()
                .map(|c| (c.completed_at - c.issued_at).as_millis())
                .collect::<Vec<u128>>()
        };
        assert_eq!(latencies(&mut e, 4), vec![0, 0, 0, 5]);
        // Within the same second, the drive that held descriptor 3 is done
        // with and another is given the number: it starts under its rate.
        e.forget(3);
        assert_eq!(latencies(&mut e, 3), vec![0, 0, 0]);
    }
}
