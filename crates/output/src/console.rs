//! What a run shows while it works: on a terminal, a bar per drive per
//! stage (progress, IOPS, % > 1 ms, ETA); on a serial console or a pipe,
//! one plain line per drive every interval, with no control characters.
//! Stages report through `Console::update`; nothing else prints progress.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use storcert_results::Verdict;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

#[derive(Debug, Clone, Default)]
struct Line {
    done: u64,
    total: u64,
    /// "s" for timed stages, "B" for bytes.
    unit: &'static str,
    detail: String,
    started: Option<Instant>,
}

pub struct Console {
    multi: Option<MultiProgress>,
    bars: Mutex<BTreeMap<String, ProgressBar>>,
    lines: Mutex<BTreeMap<String, Line>>,
    /// What is in progress now, whatever shows it (bars or lines), for a
    /// run's heartbeats.
    live: Mutex<BTreeMap<String, storcert_results::heartbeat::Progress>>,
    interval: Duration,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

fn fmt_eta(secs: u64) -> String {
    humantime::format_duration(Duration::from_secs(secs)).to_string()
}

impl Console {
    /// `plain` forces plain lines even on a terminal.
    pub fn new(interval: Duration, plain: bool) -> Arc<Console> {
        // A zero interval would print without pause.
        let interval = interval.max(Duration::from_millis(100));
        if plain {
            super::terminal::force_plain();
        }
        // One place decides bars or plain lines, for the run and its passes.
        let multi = super::terminal::multi();
        let tty = multi.is_some();
        let c = Arc::new(Console {
            multi,
            bars: Mutex::new(BTreeMap::new()),
            lines: Mutex::new(BTreeMap::new()),
            live: Mutex::new(BTreeMap::new()),
            interval,
            stop: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        });
        if !tty {
            let printer = Arc::clone(&c);
            std::thread::spawn(move || printer.plain_loop());
        }
        c
    }

    /// The console of a single command: bars on a terminal, a plain line
    /// every 10 s elsewhere.
    pub fn for_command() -> Arc<Console> {
        Console::new(Duration::from_secs(10), false)
    }

    /// A message line (stage start/end, notes), above any bars.
    pub fn say(&self, text: &str) {
        match &self.multi {
            Some(m) => {
                let _ = m.println(text);
            }
            None => eprintln!("{text}"),
        }
    }

    /// The latest progress of an ACT stage: its read rate and live % > 1 ms.
    pub fn update_act(&self, key: &str, secs: u64, total: u64, rate: f64, over_1ms: f64) {
        self.update(
            key,
            secs,
            total,
            "s",
            format!("reads {rate:.0}/s, {over_1ms:.2}% > 1 ms"),
        );
        if let Some(p) = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(key)
        {
            p.pct_over_1ms = Some(over_1ms).filter(|x| x.is_finite());
        }
    }

    /// What is in progress now.
    pub fn live(&self) -> Vec<storcert_results::heartbeat::Progress> {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// The latest progress of `key` ("act 10x /dev/sdb").
    pub fn update(&self, key: &str, done: u64, total: u64, unit: &'static str, detail: String) {
        {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            let p = live.entry(key.to_string()).or_insert_with(|| {
                storcert_results::heartbeat::Progress {
                    key: key.to_string(),
                    ..Default::default()
                }
            });
            p.done = done;
            p.total = total;
            p.unit = unit.to_string();
        }
        if let Some(m) = &self.multi {
            let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
            let bar = bars.entry(key.to_string()).or_insert_with(|| {
                let b = m.add(ProgressBar::new(total));
                let tmpl = if unit == "B" {
                    "{prefix:28} [{bar:30}] {bytes}/{total_bytes} {msg} ETA {eta}"
                } else {
                    "{prefix:28} [{bar:30}] {pos}/{len} s {msg} ETA {eta}"
                };
                b.set_style(
                    ProgressStyle::with_template(tmpl)
                        .expect("valid")
                        .progress_chars("=> "),
                );
                b.set_prefix(key.to_string());
                b
            });
            bar.set_length(total);
            bar.set_position(done);
            bar.set_message(detail);
            return;
        }
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let l = lines.entry(key.to_string()).or_default();
        l.started.get_or_insert_with(Instant::now);
        l.done = done;
        l.total = total;
        l.unit = unit;
        l.detail = detail;
    }

    /// The stage of `key` ended: its bar or line goes.
    pub fn end(&self, key: &str) {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
        if let Some(b) = self
            .bars
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key)
        {
            b.finish_and_clear();
        }
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }

    /// The plain line of one drive's stage.
    pub fn plain_line(
        key: &str,
        done: u64,
        total: u64,
        unit: &str,
        detail: &str,
        elapsed: Duration,
    ) -> String {
        let pct = if total == 0 {
            100.0
        } else {
            done as f64 * 100.0 / total as f64
        };
        let amount = if unit == "B" {
            format!(
                "{} of {}",
                crate::units::decimal_bytes(done),
                crate::units::decimal_bytes(total)
            )
        } else {
            format!("{done} s of {total} s")
        };
        let eta = if done > 0 && done < total {
            let rate = done as f64 / elapsed.as_secs_f64().max(1e-3);
            format!(", ETA {}", fmt_eta(((total - done) as f64 / rate) as u64))
        } else {
            String::new()
        };
        let detail = if detail.is_empty() {
            String::new()
        } else {
            format!(", {detail}")
        };
        let line = format!("{key}: {amount} ({pct:.0}%){detail}{eta}");
        line.chars().filter(|c| !c.is_control()).collect()
    }

    fn plain_loop(&self) {
        use std::sync::atomic::Ordering;
        let mut next = Instant::now() + self.interval;
        while !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100).min(self.interval));
            if Instant::now() < next {
                continue;
            }
            next += self.interval;
            let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone();
            for (key, l) in lines {
                let elapsed = l.started.map_or(Duration::ZERO, |s| s.elapsed());
                eprintln!(
                    "{}",
                    Self::plain_line(&key, l.done, l.total, l.unit, &l.detail, elapsed)
                );
            }
        }
    }

    pub fn close(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for (_, b) in std::mem::take(&mut *self.bars.lock().unwrap_or_else(|e| e.into_inner())) {
            b.finish_and_clear();
        }
    }
}

/// The end of a run, impossible to miss on a console.
pub fn banner(verdict: Verdict, lines: &[String]) -> String {
    let word = match verdict {
        Verdict::Pass => [
            "#####     ###     #####    #####",
            "#    #   #   #   #        #     ",
            "#####   #######   ####     #### ",
            "#       #     #       #        #",
            "#       #     #  #####    ##### ",
        ],
        Verdict::Fail => [
            "######    ###    #####  #      ",
            "#        #   #     #    #      ",
            "####    #######    #    #      ",
            "#       #     #    #    #      ",
            "#       #     #  #####  ###### ",
        ],
        _ => [
            "#   #  #####  #####  #####      ",
            "##  #    #      #      #        ",
            "# # #    #      #      #        ",
            "#  ##    #      #      #        ",
            "#   #  #####    #    #####  (incomplete)",
        ],
    };
    let rule = "=".repeat(72);
    let mut s = format!("{rule}\n");
    for w in word {
        s += &format!("    {w}\n");
    }
    s += &format!("{rule}\n");
    for l in lines {
        s += &format!("  {l}\n");
    }
    s += &format!("{rule}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_have_no_control_characters() {
        let l = Console::plain_line(
            "act 10x /dev/sdb",
            12,
            30,
            "s",
            "reads 20000/s, 0.12% > 1 ms",
            Duration::from_secs(12),
        );
        assert_eq!(
            l,
            "act 10x /dev/sdb: 12 s of 30 s (40%), reads 20000/s, 0.12% > 1 ms, ETA 18s"
        );
        let l = Console::plain_line("x\u{1b}[2K", 1, 2, "B", "a\rb", Duration::from_secs(1));
        assert!(!l.chars().any(|c| c.is_control()), "{l:?}");
        assert!(banner(Verdict::Fail, &["x".into()]).contains("######"));
    }
}
