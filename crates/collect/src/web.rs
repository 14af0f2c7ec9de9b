//! The collector's pages: the fleet table (searchable by serial, model,
//! host or date) and one page per bundle. Server-rendered, no scripts, no
//! external assets.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use super::fleet::{self, Waivers};
use super::index::{CohortKey, Record, RowFilter};
use super::{SearchQuery, Shared};
use storcert_report::export::DriveRow;
use storcert_report::html::verdict;

/// HTML-escaped, with control and bidi characters shown escaped (a
/// machine's text cannot reorder or hide what a page says).
fn esc(s: &str) -> String {
    storcert_util::text::html_escape(s)
}

fn opt(s: &Option<String>) -> String {
    esc(s.as_deref().unwrap_or("–"))
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:4px 8px;\
text-align:left;vertical-align:top}th{background:#f4f4f4}.verdict{font-weight:bold;\
padding:1px 6px;border-radius:3px}.v-pass{background:#d7f5d7;color:#075e07}.v-fail{\
background:#fbd5d5;color:#8a0b0b}.v-waived{background:#fff0c2;color:#7a5600}\
.v-running{background:#dbe8fb;color:#0b3d8a}.v-stalled{background:#ffd9a8;color:#7a3a00}.v-incomplete,.v-untested{background:#eee;color:#555}\
code{font-size:12px}input{padding:4px;width:24em}";

fn page(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>\n",
        esc(title)
    ))
}

fn machine(r: &Record) -> String {
    let m = &r.summary.machine;
    let name = [m.vendor.as_deref(), m.product.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "{}<br><small>serial {} · host {}</small>",
        esc(if name.is_empty() { "–" } else { &name }),
        machine_link(&m.serial),
        opt(&m.hostname)
    )
}

pub async fn fleet_page(State(c): State<Shared>, Query(q): Query<SearchQuery>) -> Response {
    c.fresh().await;
    let q = q.q.trim().to_string();
    let list = match c.cfg.index.search(&q, 500) {
        Ok(l) => l,
        Err(e) => return super::internal(e).into_response(),
    };
    let total = c.cfg.index.count().unwrap_or(0);
    let mut rows = String::new();
    for r in &list {
        let drives: Vec<String> = r
            .summary
            .drives
            .iter()
            .map(|d| {
                format!(
                    "<span class=\"drive\">{} {} {} {}</span>",
                    esc(&d.device),
                    opt(&d.model),
                    serial_link(&d.serial, &d.wwn),
                    verdict(d.verdict)
                )
            })
            .collect();
        rows += &format!(
            "<tr data-sha=\"{sha}\"><td>{received}</td><td>{machine}</td><td>{drives}</td>\
             <td class=\"bundle-verdict\">{verdict}</td><td><a href=\"/bundles/{sha}\">{name}</a>\
             <br><a href=\"/download/{sha}.tar.zst\">download</a></td></tr>\n",
            sha = esc(&r.sha256),
            received = esc(&r.received_at),
            machine = machine(r),
            drives = drives.join("<br>"),
            verdict = verdict(r.summary.verdict),
            name = esc(&r.name),
        );
    }
    let body = format!(
        "{nav}<h1>storcert fleet</h1>\
         <form method=\"get\" action=\"/\"><input name=\"q\" value=\"{q}\" \
         placeholder=\"serial, model, WWN, host or date (2026-11)\"> <button>Search</button></form>\
         <p id=\"count\">{shown} of {total} bundle(s){filter}</p>\
         <table id=\"fleet\"><thead><tr><th>Received</th><th>Machine</th><th>Drives</th>\
         <th>Verdict</th><th>Bundle</th></tr></thead><tbody>\n{rows}</tbody></table>",
        nav = nav(),
        q = esc(&q),
        shown = list.len(),
        filter = if q.is_empty() {
            String::new()
        } else {
            format!(" matching “{}”", esc(&q))
        },
    );
    page("storcert fleet", &body).into_response()
}

pub async fn bundle_page(State(c): State<Shared>, Path(sha): Path<String>) -> Response {
    c.fresh().await;
    let r = match c.cfg.index.get(&sha) {
        Ok(Some(r)) => r,
        Ok(None) => return not_found("No such bundle"),
        Err(e) => return super::internal(e).into_response(),
    };
    let s = &r.summary;
    let mut drives = String::new();
    for d in &s.drives {
        drives +=
            &format!(
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&d.device),
            opt(&d.model),
            opt(&d.serial),
            opt(&d.wwn),
            opt(&d.firmware),
            verdict(d.verdict),
            d.act_load_passed.map(|l| format!("{l}x")).unwrap_or_else(|| "–".into()),
            esc(&d.reasons.join("; ")),
        );
    }
    let mut tests = String::new();
    for t in &s.tests {
        tests += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.name),
            verdict(t.verdict),
            esc(&t.detail)
        );
    }
    let body = format!(
        "{nav}<h1>{name} {verdict}</h1>\
         <p>{machine}</p><p>received {received}, signed {signed} by key <code>{key}</code><br>\
         sha256 <code>{sha}</code> · {size} bytes · \
         <a id=\"report\" href=\"/bundles/{sha}/report\">report</a> · \
         <a href=\"/download/{sha}.tar.zst\">bundle</a> · \
         <a href=\"/download/{sha}.tar.zst.minisig\">minisig</a> · \
         <a href=\"/download/{sha}.tar.zst.intoto.json\">in-toto</a></p>\
         <h2>Drives</h2><table id=\"drives\"><thead><tr><th>Device</th><th>Model</th><th>Serial</th>\
         <th>WWN</th><th>Firmware</th><th>Verdict</th><th>ACT passed</th><th>Why</th></tr></thead>\
         <tbody>{drives}</tbody></table><h2>Tests</h2><table id=\"tests\"><thead><tr><th>Test</th>\
         <th>Result</th><th>Detail</th></tr></thead><tbody>{tests}</tbody></table>",
        nav = nav(),
        name = esc(&r.name),
        verdict = verdict(s.verdict),
        machine = machine(&r),
        received = esc(&r.received_at),
        signed = esc(&r.signed_at),
        key = esc(&r.key_id),
        sha = esc(&r.sha256),
        size = r.size,
    );
    page(&r.name, &body).into_response()
}

/// A path segment or query value, percent-encoded: a serial or a model
/// is anyone's text.
pub fn url_part(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The most rows a history or cohort page reads.
const PAGE_ROWS: u64 = 5000;

fn nav() -> String {
    let exports: Vec<String> = storcert_report::export::FORMATS
        .iter()
        .map(|f| format!("<a href=\"/api/export.{}\">{}</a>", f.name, f.title))
        .collect();
    format!(
        "<p class=\"nav\"><a href=\"/\">fleet</a> · <a href=\"/board\">live board</a> · cohorts by \
         <a href=\"/cohorts?by=model\">model</a>, <a href=\"/cohorts?by=firmware\">firmware</a>, \
         <a href=\"/cohorts?by=controller\">controller</a>, <a href=\"/cohorts?by=tag\">tag</a> · \
         export {}</p>",
        exports.join(", ")
    )
}

/// A number with at most `digits` decimals, "–" for none.
fn fig(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "–".into(),
    }
}

/// The verdict of a row, and the waiver that covers it.
fn row_verdict(c: &super::Collector, r: &DriveRow, today: &str) -> String {
    match c.cfg.waivers.covering(r, today) {
        Some(w) => format!(
            "{} <span class=\"verdict v-waived\">WAIVED</span><br><small>{}</small>",
            verdict(r.verdict),
            esc(&Waivers::describe(w))
        ),
        None => verdict(r.verdict),
    }
}

/// The ACT cell of a row: the worst hour's % > 1 ms per load.
fn act_cell(r: &DriveRow) -> String {
    if r.act.is_empty() {
        return "–".into();
    }
    r.act
        .iter()
        .map(|a| {
            format!(
                "{}: {}%{}",
                esc(&a.key()[4..]),
                fig(a.pct_over_1ms, 2),
                if a.pass { "" } else { " ✗" }
            )
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

fn stream_cell(r: &DriveRow) -> String {
    format!(
        "{} / {}",
        fig(r.stream_write_bytes_per_s.map(|b| b / 1e6), 0),
        fig(r.stream_read_bytes_per_s.map(|b| b / 1e6), 0)
    )
}

fn smart_cell(r: &DriveRow) -> String {
    let pair = |f: fn(&storcert_report::export::Smart) -> Option<u64>| {
        let b = r.smart_before.as_ref().and_then(f);
        let a = r.smart_after.as_ref().and_then(f);
        match (b, a) {
            (None, None) => None,
            (b, a) => Some(format!(
                "{}→{}",
                b.map_or("–".into(), |x| x.to_string()),
                a.map_or("–".into(), |x| x.to_string())
            )),
        }
    };
    let parts: Vec<String> = [
        ("media errors", pair(|s| s.media_errors)),
        ("reallocated", pair(|s| s.reallocated_sectors)),
        ("pending", pair(|s| s.pending_sectors)),
    ]
    .into_iter()
    .filter_map(|(n, v)| v.map(|v| format!("{n} {v}")))
    .collect();
    if parts.is_empty() {
        "–".into()
    } else {
        parts.join("<br>")
    }
}

fn place_cell(r: &DriveRow) -> String {
    format!(
        "{}<br><small>{}{}</small>",
        opt(&r.slot),
        opt(&r.controller),
        r.controller_firmware
            .as_ref()
            .map(|f| format!(" fw {}", esc(f)))
            .unwrap_or_default()
    )
}

fn drive_link(r: &DriveRow) -> String {
    serial_link(&r.serial, &r.wwn)
}

/// A drive's serial (else WWN), linked to its history.
fn serial_link(serial: &Option<String>, wwn: &Option<String>) -> String {
    match serial
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .or(wwn.as_deref())
    {
        Some(id) if linkable(id) => format!(
            "<a href=\"/drives/{}\"><code>{}</code></a>",
            url_part(id),
            esc(id)
        ),
        _ => "–".into(),
    }
}

/// A path segment a browser would take for a dot segment ("." or "..",
/// even percent-encoded) cannot be linked.
fn linkable(s: &str) -> bool {
    !s.trim().is_empty() && s != "." && s != ".."
}

fn machine_link(serial: &Option<String>) -> String {
    match serial.as_deref() {
        Some(s) if linkable(s) => format!(
            "<a href=\"/machines/{}\"><code>{}</code></a>",
            url_part(s),
            esc(s)
        ),
        _ => "–".into(),
    }
}

fn rows_of(c: &super::Collector, f: &RowFilter) -> anyhow::Result<Vec<DriveRow>> {
    let mut rows = Vec::new();
    c.cfg.index.rows(f, PAGE_ROWS, |r| {
        rows.push(r);
        true
    })?;
    Ok(rows)
}

fn not_found(what: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        page("not found", &format!("{}<h1>{}</h1>", nav(), esc(what))),
    )
        .into_response()
}

/// `/machines/SERIAL`: every run of the machine, newest first, each with
/// its drives where they sat (a run that tested no drive too).
pub async fn machine_page(State(c): State<Shared>, Path(serial): Path<String>) -> Response {
    c.fresh().await;
    let s2 = serial.clone();
    let got = c
        .heavy(move |c| {
            let runs = c.cfg.index.runs_of_machine(&s2, PAGE_ROWS as u32)?;
            let rows = rows_of(
                c,
                &RowFilter {
                    machine: Some(s2),
                    ..RowFilter::default()
                },
            )?;
            Ok((runs, rows))
        })
        .await;
    let (runs, rows) = match got {
        Ok(x) => x,
        Err(r) => return r,
    };
    if runs.is_empty() {
        return not_found(&format!("No run of machine {serial}"));
    }
    let today = fleet::today();
    let first = rows.first();
    let mut body = format!(
        "{}<h1>Machine <code>{}</code></h1><p>{} {} · host {} · {} run(s)</p>",
        nav(),
        esc(&serial),
        opt(&first.and_then(|r| r.machine_vendor.clone())),
        opt(&first.and_then(|r| r.machine_product.clone())),
        opt(&first.and_then(|r| r.hostname.clone())),
        runs.len(),
    );
    for (sha, name, received, run_verdict) in &runs {
        let mine: Vec<&DriveRow> = rows.iter().filter(|r| &r.bundle_sha256 == sha).collect();
        let tag = mine.first().and_then(|r| r.tag.clone());
        let profile = mine.first().and_then(|r| r.profile.clone());
        body += &format!(
            "<h2 class=\"run\">{received} <span class=\"verdict v-{v}\">{vu}</span></h2>\
             <p><a href=\"/bundles/{sha}\">{name}</a> · tag {tag} · profile {profile}</p>",
            received = esc(received),
            v = esc(run_verdict),
            vu = esc(&run_verdict.to_uppercase()),
            sha = esc(sha),
            name = esc(name),
            tag = opt(&tag),
            profile = opt(&profile),
        );
        if mine.is_empty() {
            body += "<p>No drive was tested in this run (its bundle says why).</p>";
            continue;
        }
        body += "<table class=\"drives\"><thead><tr><th>Slot / controller</th><th>Device</th>\
                 <th>Model</th><th>Serial</th><th>Firmware</th><th>Verdict</th>\
                 <th>ACT %&gt;1ms</th><th>Stream W/R MB/s</th><th>Health</th></tr></thead><tbody>";
        for r in mine {
            body += &format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td></tr>",
                place_cell(r),
                esc(&r.device),
                opt(&r.model),
                drive_link(r),
                opt(&r.firmware),
                row_verdict(&c, r, &today),
                act_cell(r),
                stream_cell(r),
                smart_cell(r),
            );
        }
        body += "</tbody></table>";
    }
    page(&format!("machine {serial}"), &body).into_response()
}

/// `/drives/SERIAL-OR-WWN`: every run the drive was in, newest first,
/// with the machine and slot it was in (a drive moved between machines is
/// followed, and the move is marked). Runs where it reported only its
/// serial or only its WWN are found by the other.
pub async fn drive_page(State(c): State<Shared>, Path(id): Path<String>) -> Response {
    c.fresh().await;
    let id2 = id.clone();
    let got = c
        .heavy(move |c| {
            let mut ids = vec![id2];
            let mut rows = rows_of(
                c,
                &RowFilter {
                    drive: ids.clone(),
                    ..RowFilter::default()
                },
            )?;
            for r in &rows {
                for x in [&r.serial, &r.wwn].into_iter().flatten() {
                    if !x.trim().is_empty() && !ids.contains(x) && ids.len() < 8 {
                        ids.push(x.clone());
                    }
                }
            }
            if ids.len() > 1 {
                rows = rows_of(
                    c,
                    &RowFilter {
                        drive: ids,
                        ..RowFilter::default()
                    },
                )?;
            }
            Ok(rows)
        })
        .await;
    let rows = match got {
        Ok(r) => r,
        Err(r) => return r,
    };
    if rows.is_empty() {
        return not_found(&format!("No run of drive {id}"));
    }
    let today = fleet::today();
    let mut table = String::new();
    for (k, r) in rows.iter().enumerate() {
        // Newest first: the older row below says where it came from.
        let moved = rows
            .get(k + 1)
            .filter(|older| older.machine_serial != r.machine_serial)
            .map(|older| {
                format!(
                    "<br><small class=\"moved\">moved here from {}</small>",
                    machine_link(&older.machine_serial)
                )
            })
            .unwrap_or_default();
        table += &format!(
            "<tr><td>{received}</td><td>{machine}<br><small>host {host}</small>{moved}</td>\
             <td>{place}</td><td>{device}</td><td>{firmware}</td><td>{verdict}</td><td>{act}</td>\
             <td>{stream}</td><td>{smart}</td><td><a href=\"/bundles/{sha}\">bundle</a></td></tr>",
            received = esc(&r.received_at),
            machine = machine_link(&r.machine_serial),
            host = opt(&r.hostname),
            place = place_cell(r),
            device = esc(&r.device),
            firmware = opt(&r.firmware),
            verdict = row_verdict(&c, r, &today),
            act = act_cell(r),
            stream = stream_cell(r),
            smart = smart_cell(r),
            sha = esc(&r.bundle_sha256),
        );
    }
    let body = format!(
        "{nav}<h1>Drive <code>{id}</code></h1><p>{model} · serial {serial} · WWN {wwn} · \
         {runs} run(s)</p><table id=\"history\"><thead><tr><th>Received</th><th>Machine</th>\
         <th>Slot / controller</th><th>Device</th><th>Firmware</th><th>Verdict</th>\
         <th>ACT %&gt;1ms</th><th>Stream W/R MB/s</th><th>Health</th><th></th></tr></thead>\
         <tbody>{table}</tbody></table>",
        nav = nav(),
        id = esc(&id),
        model = opt(&rows[0].model),
        serial = opt(&rows[0].serial),
        wwn = opt(&rows[0].wwn),
        runs = rows.len(),
    );
    page(&format!("drive {id}"), &body).into_response()
}

#[derive(serde::Deserialize)]
pub struct CohortQuery {
    #[serde(default)]
    pub by: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
}

/// The most groups a cohort overview shows.
const MAX_GROUPS: u32 = 200;

/// The most rows one cohort's statistics read (the newest).
const COHORT_ROWS: u64 = 200_000;

/// The cohorts of `by` (all of them, or the one `group`), each from its
/// rows, newest first; with `keep_rows`, the newest `PAGE_ROWS` rows of
/// each too (for a group's page).
pub fn cohorts(
    c: &super::Collector,
    by: CohortKey,
    group: Option<&str>,
    keep_rows: bool,
) -> anyhow::Result<Vec<(fleet::Cohort, Vec<DriveRow>)>> {
    let groups: Vec<String> = match group {
        Some(g) => vec![g.to_string()],
        None => c
            .cfg
            .index
            .cohorts(by, MAX_GROUPS)?
            .into_iter()
            .map(|g| g.0)
            .collect(),
    };
    let today = fleet::today();
    let mut out = Vec::new();
    for g in groups {
        let mut b = fleet::CohortBuilder::new(g.clone());
        let mut kept = Vec::new();
        let f = RowFilter {
            cohort: Some((by, g)),
            ..RowFilter::default()
        };
        c.cfg.index.rows(&f, COHORT_ROWS + 1, |r| {
            if b.rows() as u64 == COHORT_ROWS {
                b.truncated = true;
                return false;
            }
            b.add(&r, c.cfg.waivers.covering(&r, &today).is_some());
            if keep_rows && (kept.len() as u64) < PAGE_ROWS {
                kept.push(r);
            }
            true
        })?;
        out.push((b.finish(), kept));
    }
    Ok(out)
}

/// "p50 0.52 · p90 0.80 · max 4.20".
fn spread(d: &fleet::Distribution) -> String {
    let digits = if d.max.abs() >= 100.0 { 0 } else { 2 };
    format!(
        "p50 {} · p90 {} · max {}",
        fig(Some(d.p50), digits),
        fig(Some(d.p90), digits),
        fig(Some(d.max), digits)
    )
}

/// `/cohorts?by=model|firmware|controller|tag[&group=G]`.
pub async fn cohorts_page(State(c): State<Shared>, Query(q): Query<CohortQuery>) -> Response {
    c.fresh().await;
    let by_name = q.by.as_deref().unwrap_or("model");
    let Some(by) = CohortKey::parse(by_name) else {
        return (
            StatusCode::BAD_REQUEST,
            page(
                "bad request",
                &format!(
                    "{}<h1>No cohort key {}</h1><p>by= model, firmware, controller or tag</p>",
                    nav(),
                    esc(by_name)
                ),
            ),
        )
            .into_response();
    };
    let group = q.group.clone();
    let keep = group.is_some();
    let found = match c
        .heavy(move |c| cohorts(c, by, group.as_deref(), keep))
        .await
    {
        Ok(f) => f,
        Err(r) => return r,
    };
    let body = match q.group.as_deref() {
        None => cohorts_table(by, &found),
        Some(group) => {
            let Some((co, rows)) = found.first().filter(|(co, _)| co.drives > 0) else {
                return not_found(&format!("No drives in {} {group}", by.name()));
            };
            cohort_page(&c, by, group, co, rows)
        }
    };
    page("storcert cohorts", &body).into_response()
}

/// A cohort's group as shown: the empty group is "(none)".
fn shown(g: &str) -> String {
    if g.is_empty() {
        "(none)".to_string()
    } else {
        g.to_string()
    }
}

/// Every cohort of `by`, one row each.
fn cohorts_table(by: CohortKey, found: &[(fleet::Cohort, Vec<DriveRow>)]) -> String {
    let mut rows = String::new();
    for (co, _) in found {
        let figures: Vec<String> = co
            .figures
            .iter()
            .map(|(name, d)| format!("{}: {}", esc(&fleet::figure_label(name)), spread(d)))
            .collect();
        rows += &format!(
            "<tr><td><a href=\"/cohorts?by={by}&amp;group={gq}\">{g}</a></td><td>{drives}{cut}</td>\
             <td>{runs}</td><td>{rate}</td><td>{failed}{waived}</td><td><small>{figures}</small></td>\
             <td class=\"outliers\">{outliers}</td></tr>",
            cut = if co.truncated {
                format!(" <small>(newest {COHORT_ROWS} rows)</small>")
            } else {
                String::new()
            },
            by = by.name(),
            gq = url_part(&co.group),
            g = esc(&shown(&co.group)),
            drives = co.drives,
            runs = co.runs,
            rate = co
                .pass_rate()
                .map_or("–".into(), |r| format!("{r:.1}%")),
            failed = co.failed,
            waived = if co.waived > 0 {
                format!(" ({} waived)", co.waived)
            } else {
                String::new()
            },
            figures = figures.join("<br>"),
            outliers = co.outliers.len(),
        );
    }
    format!(
        "{}<h1>Cohorts by {}</h1><table id=\"cohorts\"><thead><tr><th>{}</th><th>Drives</th>\
         <th>Runs</th><th>Pass rate</th><th>Failed</th><th>Key figures</th><th>Outliers</th>\
         </tr></thead><tbody>{rows}</tbody></table>",
        nav(),
        by.name(),
        by.name()
    )
}

/// One cohort: its key figures, its outliers and its drives.
fn cohort_page(
    c: &super::Collector,
    by: CohortKey,
    group: &str,
    co: &fleet::Cohort,
    rows: &[DriveRow],
) -> String {
    let today = fleet::today();
    let mut figures = String::new();
    for (name, d) in &co.figures {
        figures += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&fleet::figure_label(name)),
            d.n,
            fig(Some(d.min), 2),
            fig(Some(d.p50), 2),
            fig(Some(d.p90), 2),
            fig(Some(d.max), 2)
        );
    }
    let mut outliers = String::new();
    for o in &co.outliers {
        outliers += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td>\
             <td>{}</td></tr>",
            match serial_link(&o.serial, &o.wwn).as_str() {
                "–" => esc(&o.device),
                link => link.to_string(),
            },
            machine_link(&o.machine_serial),
            esc(&fleet::figure_label(&o.figure)),
            fig(Some(o.value), 2),
            fig(Some(o.cohort_median), 2),
            o.score,
            verdict(o.verdict),
        );
    }
    let mut drives = String::new();
    for r in rows {
        drives += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td></tr>",
            esc(&r.received_at),
            drive_link(r),
            machine_link(&r.machine_serial),
            opt(&r.firmware),
            row_verdict(c, r, &today),
            act_cell(r),
            stream_cell(r),
            smart_cell(r),
        );
    }
    format!(
        "{nav}<h1>{by} {g}</h1><p>{drives_n} drive(s) in {runs} run(s) · pass rate {rate} · \
         {failed} failed{waived}</p><p><small>Each drive counts once, by its newest run; \
         outliers are judged among drives of the same model.</small></p><h2>Key figures</h2><table id=\"figures\"><thead><tr>\
         <th>Figure</th><th>n</th><th>min</th><th>p50</th><th>p90</th><th>max</th></tr>\
         </thead><tbody>{figures}</tbody></table><h2>Outliers</h2><p><small>A drive more \
         than {score} robust deviations worse than the cohort's median (at least \
         {min} drives), whatever its verdict.</small></p><table id=\"outliers\"><thead><tr>\
         <th>Drive</th><th>Machine</th><th>Figure</th><th>Value</th><th>Cohort median</th>\
         <th>Score</th><th>Verdict</th></tr></thead><tbody>{outliers}</tbody></table>\
         <h2>Drives</h2><table id=\"drives\"><thead><tr><th>Received</th><th>Drive</th>\
         <th>Machine</th><th>Firmware</th><th>Verdict</th><th>ACT %&gt;1ms</th>\
         <th>Stream W/R MB/s</th><th>Health</th></tr></thead><tbody>{drives}</tbody></table>",
        nav = nav(),
        by = by.name(),
        g = esc(&shown(group)),
        drives_n = co.drives,
        runs = co.runs,
        rate = co.pass_rate().map_or("–".into(), |r| format!("{r:.1}%")),
        failed = co.failed,
        waived = if co.waived > 0 {
            format!(" ({} waived)", co.waived)
        } else {
            String::new()
        },
        score = fleet::OUTLIER_SCORE,
        min = fleet::MIN_COHORT,
    )
}

/// The board's script (static/board.js), served from here: the page's
/// policy allows scripts from this origin only.
pub async fn board_script() -> Response {
    (
        [
            (
                axum::http::header::CONTENT_TYPE,
                "text/javascript; charset=utf-8",
            ),
            (axum::http::header::CACHE_CONTROL, "no-cache"),
        ],
        include_str!("static/board.js"),
    )
        .into_response()
}

#[derive(serde::Deserialize)]
pub struct BoardQuery {
    #[serde(default)]
    part: Option<String>,
}

/// "1 h 5 min", "40 s".
fn span(secs: u64) -> String {
    match secs {
        s if s >= 3600 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// The most progress entries a board row shows (a run may send 64).
const BOARD_PROGRESS: usize = 8;

fn progress_cell(hb: &storcert_results::heartbeat::Heartbeat) -> String {
    let mut lines: Vec<String> = hb
        .progress
        .iter()
        .take(BOARD_PROGRESS)
        .map(|p| {
            let pct = if p.total > 0 {
                format!("{:.0}%", 100.0 * p.done as f64 / p.total as f64)
            } else {
                "–".into()
            };
            format!(
                "{} {}{}",
                esc(&storcert_util::text::printable(&p.key, 80)),
                pct,
                p.pct_over_1ms
                    .map(|o| format!(" · {o:.2}% &gt;1ms"))
                    .unwrap_or_default()
            )
        })
        .collect();
    if hb.progress.len() > BOARD_PROGRESS {
        lines.push(format!(
            "<small>and {} more</small>",
            hb.progress.len() - BOARD_PROGRESS
        ));
    }
    if lines.is_empty() {
        lines.push("–".into());
    }
    lines.join("<br>")
}

/// A row's last words: a stored bundle's reasons, else the heartbeat's
/// last errors (three, each cut), and heartbeats of other keys refused.
fn notes_cell(r: &super::board::BoardRow) -> String {
    let said = if r.reasons.is_empty() {
        &r.heartbeat.errors
    } else {
        &r.reasons
    };
    let mut lines: Vec<String> = said
        .iter()
        .rev()
        .take(3)
        .map(|e| esc(&storcert_util::text::printable(e, 200)))
        .collect();
    if let Some(f) = &r.foreign {
        lines.push(format!(
            "<b>{} heartbeat(s) from another key refused</b> (last: {})",
            f.refused,
            esc(&storcert_util::text::printable(&f.last_key, 16))
        ));
    }
    lines.join("<br>")
}

/// The most bytes of rows the board's table holds: the running and
/// stalled machines come first, and what does not fit is counted.
const BOARD_HTML: usize = 4 << 20;

/// One run's row of the board's table.
fn board_row(r: &super::board::BoardRow) -> String {
    let hb = &r.heartbeat;
    let state = r.shown.as_str();
    let bundle = match (&r.bundle_sha256, &hb.bundle) {
        (Some(sha), _) => format!("<a href=\"/bundles/{0}\">bundle</a>", esc(sha)),
        (None, Some(name)) => format!(
            "<small>{} (not here yet)</small>",
            esc(&storcert_util::text::printable(name, 200))
        ),
        (None, None) => "–".into(),
    };
    let cut =
        |s: &Option<String>, n: usize| s.as_ref().map(|s| storcert_util::text::printable(s, n));
    format!(
        "<tr data-run=\"{run}\" data-state=\"{state}\"><td>{machine}<br><small>host {host} · \
         {run}</small></td><td>{tag}</td><td><span class=\"verdict v-{state}\">{state_uc}</span>\
         </td><td>{stage}<br><small>{done} stage(s) done</small></td><td>{progress}</td>\
         <td>{eta}</td><td>{verdict}{live}</td><td><small>{notes}</small></td>\
         <td>{silent} ago</td><td>{bundle}</td></tr>\n",
        run = esc(&hb.run_id),
        machine = machine_link(&hb.machine.serial),
        host = opt(&cut(&hb.machine.hostname, 64)),
        tag = opt(&hb.tag),
        state_uc = state.to_uppercase(),
        stage = opt(&cut(&hb.stage, 120)),
        done = hb.stages_done,
        progress = progress_cell(hb),
        eta = hb.eta_s.map_or("–".into(), span),
        verdict = verdict(hb.verdict),
        live = hb
            .live_pct_over_1ms
            .map(|o| format!("<br><small>live {o:.2}% &gt;1ms</small>"))
            .unwrap_or_default(),
        notes = notes_cell(r),
        silent = span(r.silent_s),
    )
}

/// The board's inner HTML: counts and the table (what the script swaps).
fn board_inner(rows: &[super::board::BoardRow]) -> String {
    use super::board::Shown;
    let count = |s: Shown| rows.iter().filter(|r| r.shown == s).count();
    let mut table = String::new();
    let mut left_out = 0;
    for r in rows {
        let row = board_row(r);
        if table.len() + row.len() > BOARD_HTML {
            left_out += 1;
            continue;
        }
        table += &row;
    }
    let more = if left_out > 0 {
        format!("<p><b>{left_out} more run(s) not shown here</b>: see /api/board.</p>")
    } else {
        String::new()
    };
    format!(
        "<p id=\"counts\">{running} running · {stalled} stalled · {finished} finished · \
         {stopped} stopped</p><table id=\"runs\"><thead><tr><th>Machine</th><th>Tag</th>\
         <th>State</th><th>Stage</th><th>Progress</th><th>ETA</th><th>Verdict so far</th>\
         <th>Errors / reasons</th><th>Last heard</th><th>Bundle</th></tr></thead><tbody>\n{table}\
         </tbody></table>{more}",
        running = count(Shown::Running),
        stalled = count(Shown::Stalled),
        finished = count(Shown::Finished),
        stopped = count(Shown::Stopped),
    )
}

/// `/board`: the machines running now, stalled, and finished in the last
/// day. It refreshes itself (`/board?part=rows`) every 5 s.
pub async fn board_page(State(c): State<Shared>, Query(q): Query<BoardQuery>) -> Response {
    c.fresh().await;
    let rows = match c.board().await {
        Ok(r) => r,
        Err(r) => return r,
    };
    let inner = board_inner(&rows);
    if q.part.as_deref() == Some("rows") {
        return Html(inner).into_response();
    }
    let body = format!(
        "{nav}<h1>Live board</h1><p><small>Machines that stop sending heartbeats for {stall} \
         show as stalled. <span id=\"updated\"></span></small></p><div id=\"board\">{inner}</div>\
         <script src=\"/static/board.js\"></script>",
        nav = nav(),
        stall = span(c.cfg.stall_after.as_secs()),
    );
    let mut r = page("storcert live board", &body).into_response();
    // This page alone runs a script: its own, from this origin.
    r.headers_mut().insert(
        axum::http::header::CONTENT_SECURITY_POLICY,
        axum::http::HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; connect-src 'self'; \
             style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; \
             base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    r
}
