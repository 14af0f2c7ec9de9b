//! The collector's pages: the fleet table (searchable by serial, model,
//! host or date) and one page per bundle. Server-rendered, no scripts, no
//! external assets.

use crate::results::Verdict;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use super::index::Record;
use super::{SearchQuery, Shared};

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn opt(s: &Option<String>) -> String {
    esc(s.as_deref().unwrap_or("–"))
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:4px 8px;\
text-align:left;vertical-align:top}th{background:#f4f4f4}.verdict{font-weight:bold;\
padding:1px 6px;border-radius:3px}.v-pass{background:#d7f5d7;color:#075e07}.v-fail{\
background:#fbd5d5;color:#8a0b0b}.v-incomplete,.v-untested{background:#eee;color:#555}\
code{font-size:12px}input{padding:4px;width:24em}";

fn page(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>\n",
        esc(title)
    ))
}

fn verdict(v: Verdict) -> String {
    let v = v.as_str();
    format!(
        "<span class=\"verdict v-{0}\">{1}</span>",
        esc(v),
        esc(&v.to_uppercase())
    )
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
        opt(&m.serial),
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
                    "<span class=\"drive\">{} {} <code>{}</code> {}</span>",
                    esc(&d.device),
                    opt(&d.model),
                    opt(&d.serial),
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
        "<h1>storcert fleet</h1>\
         <form method=\"get\" action=\"/\"><input name=\"q\" value=\"{q}\" \
         placeholder=\"serial, model, WWN, host or date (2026-11)\"> <button>Search</button></form>\
         <p id=\"count\">{shown} of {total} bundle(s){filter}</p>\
         <table id=\"fleet\"><thead><tr><th>Received</th><th>Machine</th><th>Drives</th>\
         <th>Verdict</th><th>Bundle</th></tr></thead><tbody>\n{rows}</tbody></table>",
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
        Ok(None) => {
            return (
                StatusCode::NOT_FOUND,
                page("not found", "<h1>No such bundle</h1>"),
            )
                .into_response()
        }
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
            verdict(Verdict::of(t.pass)),
            esc(&t.detail)
        );
    }
    let body = format!(
        "<p><a href=\"/\">← fleet</a></p><h1>{name} {verdict}</h1>\
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
