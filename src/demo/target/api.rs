//! The demo API's JSON routes: boards, their cards and a search, read from and written to its SQLite
//! database; a failed query answers 500 with the database's error.

use std::sync::PoisonError;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{BOARDS, Demo};

#[derive(Deserialize)]
pub(super) struct Page {
    page: Option<i64>,
    per_page: Option<i64>,
}

impl Page {
    fn limit_offset(&self) -> (i64, i64) {
        let per_page = self.per_page.unwrap_or(20).clamp(1, 100);
        (per_page, (self.page.unwrap_or(1).max(1) - 1) * per_page)
    }
}

type Answer = Result<Response, (StatusCode, Json<Value>)>;

fn failed(e: &sqlx::Error) -> (StatusCode, Json<Value>) {
    (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": e.to_string()})))
}

fn not_found(what: &str) -> Response {
    (StatusCode::NOT_FOUND, Json(json!({"error": format!("no such {what}")}))).into_response()
}

pub(super) async fn list_boards(State(demo): State<Demo>, Query(page): Query<Page>) -> Answer {
    let (limit, offset) = page.limit_offset();
    let rows: Vec<(i64, String)> = sqlx::query_as("select id, title from boards order by id limit $1 offset $2")
        .bind(limit)
        .bind(offset)
        .fetch_all(&demo.db)
        .await
        .map_err(|e| failed(&e))?;
    let items: Vec<Value> = rows.into_iter().map(|(id, title)| json!({"id": id, "title": title})).collect();
    Ok(Json(json!({"items": items, "page": page.page.unwrap_or(1), "total": BOARDS})).into_response())
}

pub(super) async fn get_board(State(demo): State<Demo>, Path(id): Path<i64>) -> Answer {
    let row: Option<(i64, String, i64)> = sqlx::query_as(
        "select b.id, b.title, (select count(*) from cards c where c.board_id = b.id) from boards b where b.id = $1",
    )
    .bind(id)
    .fetch_optional(&demo.db)
    .await
    .map_err(|e| failed(&e))?;
    let Some((id, title, cards)) = row else { return Ok(not_found("board")) };
    Ok(Json(json!({"id": id, "title": title, "cards": cards})).into_response())
}

pub(super) async fn list_cards(State(demo): State<Demo>, Path(board): Path<i64>, Query(page): Query<Page>) -> Answer {
    let (limit, offset) = page.limit_offset();
    let rows: Vec<(i64, String, bool)> =
        sqlx::query_as("select id, title, done from cards where board_id = $1 order by id limit $2 offset $3")
            .bind(board)
            .bind(limit)
            .bind(offset)
            .fetch_all(&demo.db)
            .await
            .map_err(|e| failed(&e))?;
    let items: Vec<Value> =
        rows.into_iter().map(|(id, title, done)| json!({"id": id, "title": title, "done": done})).collect();
    Ok(Json(json!({"board_id": board, "items": items})).into_response())
}

/// The board's export: its card count read, then rendered by the pool (waiting for a renderer past its size).
pub(super) async fn export_board(State(demo): State<Demo>, Path(board): Path<i64>) -> Answer {
    let cards: Option<i64> = sqlx::query_scalar(
        "select (select count(*) from cards c where c.board_id = b.id) from boards b where b.id = $1",
    )
    .bind(board)
    .fetch_optional(&demo.db)
    .await
    .map_err(|e| failed(&e))?;
    let Some(cards) = cards else { return Ok(not_found("board")) };
    Ok(Json(demo.exports.render(board, cards).await).into_response())
}

#[derive(Deserialize)]
pub(super) struct NewCard {
    title: String,
    body: Option<String>,
}

pub(super) async fn create_card(State(demo): State<Demo>, Path(board): Path<i64>, Json(card): Json<NewCard>) -> Answer {
    if card.title.trim().is_empty() {
        return Ok((StatusCode::UNPROCESSABLE_ENTITY, Json(json!({"error": "title is empty"}))).into_response());
    }
    let id: Option<i64> = sqlx::query_scalar(
        "insert into cards (board_id, title, body) select id, $2, $3 from boards where id = $1 returning id",
    )
    .bind(board)
    .bind(&card.title)
    .bind(card.body.unwrap_or_default())
    .fetch_optional(&demo.db)
    .await
    .map_err(|e| failed(&e))?;
    let Some(id) = id else { return Ok(not_found("board")) };
    let location = format!("/cards/{id}");
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(json!({"id": id, "board_id": board})))
        .into_response())
}

pub(super) async fn get_card(State(demo): State<Demo>, Path(id): Path<i64>) -> Answer {
    let row: Option<(i64, i64, String, String, bool)> =
        sqlx::query_as("select id, board_id, title, body, done from cards where id = $1")
            .bind(id)
            .fetch_optional(&demo.db)
            .await
            .map_err(|e| failed(&e))?;
    let Some((id, board, title, body, done)) = row else { return Ok(not_found("card")) };
    Ok(Json(json!({"id": id, "board_id": board, "title": title, "body": body, "done": done})).into_response())
}

#[derive(Deserialize)]
pub(super) struct CardChange {
    title: Option<String>,
    done: Option<bool>,
}

pub(super) async fn update_card(
    State(demo): State<Demo>,
    Path(id): Path<i64>,
    Json(change): Json<CardChange>,
) -> Answer {
    let updated = sqlx::query("update cards set title = coalesce($2, title), done = coalesce($3, done) where id = $1")
        .bind(id)
        .bind(change.title)
        .bind(change.done.map(i64::from))
        .execute(&demo.db)
        .await
        .map_err(|e| failed(&e))?;
    if updated.rows_affected() == 0 {
        return Ok(not_found("card"));
    }
    get_card(State(demo), Path(id)).await
}

pub(super) async fn delete_card(State(demo): State<Demo>, Path(id): Path<i64>) -> Answer {
    let deleted =
        sqlx::query("delete from cards where id = $1").bind(id).execute(&demo.db).await.map_err(|e| failed(&e))?;
    if deleted.rows_affected() == 0 {
        return Ok(not_found("card"));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
pub(super) struct Search {
    q: Option<String>,
}

pub(super) async fn search(State(demo): State<Demo>, Query(search): Query<Search>) -> Answer {
    let q = search.q.unwrap_or_default();
    let rows: Vec<(i64, i64, String)> =
        sqlx::query_as("select id, board_id, title from cards where title like $1 order by id desc limit 20")
            .bind(format!("%{}%", q.replace(['%', '_'], "")))
            .fetch_all(&demo.db)
            .await
            .map_err(|e| failed(&e))?;
    let items: Vec<Value> =
        rows.into_iter().map(|(id, board, title)| json!({"id": id, "board_id": board, "title": title})).collect();
    Ok(Json(json!({"q": q, "items": items})).into_response())
}

pub(super) async fn version(State(demo): State<Demo>) -> Json<Value> {
    let build = demo.knobs.build.lock().unwrap_or_else(PoisonError::into_inner).clone();
    Json(json!({"build": build}))
}
