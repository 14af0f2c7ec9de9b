//! The JSON API's answers: bundles, machines, drives, cohorts, the board.

use super::*;

#[derive(serde::Deserialize)]
pub struct SearchQuery {
    #[serde(default)]
    pub(super) q: String,
}

pub(super) async fn api_list(State(c): State<Shared>, Query(q): Query<SearchQuery>) -> Response {
    c.fresh().await;
    match c.cfg.index.search(q.q.trim(), 1000) {
        Ok(list) => json_answer(&list),
        Err(e) => internal(e).into_response(),
    }
}

pub(super) async fn api_one(State(c): State<Shared>, Path(sha): Path<String>) -> Response {
    c.fresh().await;
    match c.cfg.index.get(&sha) {
        Ok(Some(r)) => json_answer(&r),
        Ok(None) => Refusal(StatusCode::NOT_FOUND, "no such bundle".into()).into_response(),
        Err(e) => internal(e).into_response(),
    }
}

/// Heavy reads (cohorts, histories, the board) at once.
pub(super) const MAX_HEAVY_READS: usize = 4;
/// Exports streamed at once, and from one address.
pub(super) const MAX_EXPORTS: usize = 4;
pub(super) const MAX_EXPORTS_PER_CLIENT: usize = 2;
/// Board pages made at once.
pub(super) const MAX_BOARDS: usize = 2;

/// /metrics fleets read at once; another scrape waits for it and takes
/// what it read (`Collector::scrape_fleet`).
pub(super) const MAX_METRICS: usize = 1;

/// A JSON answer of what machines and bundles said: the same JSON, with
/// every C1, bidi and invisible character inside it escaped (serde
/// escapes only C0), so a reader's terminal shows text, never a control.
pub(super) fn json_answer<T: serde::Serialize>(value: &T) -> Response {
    match serde_json::to_string(value) {
        Ok(text) => (
            [(header::CONTENT_TYPE, "application/json")],
            storcert_util::text::json_printable(&text),
        )
            .into_response(),
        Err(e) => internal(e.into()).into_response(),
    }
}

/// The most bytes `/api/board` answers: the running and stalled runs
/// come first; how many did not fit is said in `x-storcert-left-out`.
pub(super) const API_BOARD_BYTES: usize = 16 << 20;

/// The fleet in Prometheus' text format (`metrics`).
pub(super) async fn api_metrics(State(c): State<Shared>) -> Response {
    c.fresh().await;
    let fleet = match c.scrape_fleet().await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let page = super::metrics::render(&fleet, &c.traffic, c.started);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        page,
    )
        .into_response()
}

pub(super) async fn api_board(State(c): State<Shared>) -> Response {
    c.fresh().await;
    let rows = match c.board().await {
        Ok(rows) => rows,
        Err(r) => return r,
    };
    let mut out = b"[".to_vec();
    let mut left_out = 0usize;
    for r in &rows {
        let Ok(j) = serde_json::to_string(r) else {
            continue;
        };
        let j = storcert_util::text::json_printable(&j).into_bytes();
        if out.len() + j.len() + 2 > API_BOARD_BYTES {
            left_out += 1;
            continue;
        }
        if out.len() > 1 {
            out.push(b',');
        }
        out.extend_from_slice(&j);
    }
    out.push(b']');
    let mut r = ([(header::CONTENT_TYPE, "application/json")], out).into_response();
    r.headers_mut()
        .insert("x-storcert-left-out", HeaderValue::from(left_out));
    r
}

/// The most rows an API answer or an export holds.
pub(super) const MAX_EXPORT_ROWS: u64 = 1_000_000;
/// The most rows a JSON history answer holds.
pub(super) const MAX_API_ROWS: u64 = 5000;

/// A row with the waiver that covers it, as the API gives it.
#[derive(serde::Serialize)]
pub(super) struct ApiRow {
    #[serde(flatten)]
    row: DriveRow,
    #[serde(skip_serializing_if = "Option::is_none")]
    waived: Option<String>,
}

pub(super) async fn api_rows(c: Shared, f: index::RowFilter) -> Response {
    c.fresh().await;
    let today = fleet::today();
    let got = c
        .heavy(move |c| {
            let mut out = Vec::new();
            c.cfg.index.rows(&f, MAX_API_ROWS, |row| {
                let waived = c
                    .cfg
                    .waivers
                    .covering(&row, &today)
                    .map(fleet::Waivers::describe);
                out.push(ApiRow { row, waived });
                true
            })?;
            Ok(out)
        })
        .await;
    match got {
        Ok(rows) => json_answer(&rows),
        Err(r) => r,
    }
}

pub(super) async fn api_machine(State(c): State<Shared>, Path(serial): Path<String>) -> Response {
    api_rows(
        c,
        index::RowFilter {
            machine: Some(serial),
            ..Default::default()
        },
    )
    .await
}

pub(super) async fn api_drive(State(c): State<Shared>, Path(id): Path<String>) -> Response {
    api_rows(
        c,
        index::RowFilter {
            drive: vec![id],
            ..Default::default()
        },
    )
    .await
}

pub(super) async fn api_cohorts(
    State(c): State<Shared>,
    Query(q): Query<web::CohortQuery>,
) -> Response {
    c.fresh().await;
    let by_name = q.by.clone().unwrap_or_else(|| "model".into());
    let Some(by) = index::CohortKey::parse(&by_name) else {
        return Refusal(
            StatusCode::BAD_REQUEST,
            format!(
                "by={}: model, firmware, controller or tag",
                storcert_util::text::printable(&by_name, 60)
            ),
        )
        .into_response();
    };
    let group = q.group.clone();
    match c
        .heavy(move |c| web::cohorts(c, by, group.as_deref(), false))
        .await
    {
        Ok(cohorts) => json_answer(&cohorts.into_iter().map(|(co, _)| co).collect::<Vec<_>>()),
        Err(r) => r,
    }
}
