//! Scenario leases: the database-side lock that keeps a scenario from running twice at once, also across
//! several `degrade serve` instances sharing one database.
//!
//! A lease is a row with a holder, when it was taken and an expiry. It is taken by one upsert that only
//! succeeds when the row is free, expired or already ours; it is renewed by an update that only succeeds while
//! the row is still ours and current, so a renewal that lands after the release can never bring a released
//! lease back. It works the same on SQLite and PostgreSQL (an advisory lock would be PostgreSQL-only and tied
//! to one pooled connection), and a crashed holder frees the scenario when its lease runs out instead of
//! blocking it until someone intervenes.

use chrono::{DateTime, Utc};

use super::retry::retry_busy;
use super::{Store, StoreError, from_millis, on_pool, to_millis};
use crate::outside_text::storable;

/// Who holds a scenario's lease, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The holder's name: host, process id and a random part.
    pub holder: String,
    /// When it was taken, when recorded.
    pub taken_at: Option<DateTime<Utc>>,
    /// When it runs out unless renewed.
    pub expires_at: DateTime<Utc>,
}

impl Store {
    /// Takes the lease on `scenario` for `holder` until `until`; `false` when another holder's lease is still
    /// current at `now`.
    pub async fn acquire_lease(
        &self,
        scenario: &str,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let scenario_id = self.ensure_scenario(scenario, now).await?;
        let upsert = "insert into scenario_leases (scenario_id, holder, expires_at, taken_at) values ($1, $2, $3, $4) \
                      on conflict (scenario_id) do update set holder = excluded.holder, \
                      expires_at = excluded.expires_at, taken_at = excluded.taken_at \
                      where scenario_leases.holder = excluded.holder or scenario_leases.expires_at <= $4";
        let taken = retry_busy(|| async move {
            Ok(on_pool!(self, |pool| sqlx::query(upsert)
                .bind(scenario_id)
                .bind(storable(holder))
                .bind(to_millis(until))
                .bind(to_millis(now))
                .execute(pool)
                .await?
                .rows_affected()))
        })
        .await?;
        Ok(taken == 1)
    }

    /// Extends `holder`'s lease on `scenario` to `until`; `false` when it no longer holds a current one (it was
    /// released, expired or taken over). Never creates a lease.
    pub async fn renew_lease(
        &self,
        scenario: &str,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let update = "update scenario_leases set expires_at = $3 where holder = $2 and expires_at > $4 \
                      and scenario_id = (select id from scenarios where name = $1)";
        let renewed = retry_busy(|| async move {
            Ok(on_pool!(self, |pool| sqlx::query(update)
                .bind(scenario)
                .bind(storable(holder))
                .bind(to_millis(until))
                .bind(to_millis(now))
                .execute(pool)
                .await?
                .rows_affected()))
        })
        .await?;
        Ok(renewed == 1)
    }

    /// The lease on `scenario`, current or not, if there is a row.
    pub async fn lease(&self, scenario: &str) -> Result<Option<Lease>, StoreError> {
        let query = "select holder, taken_at, expires_at from scenario_leases \
                     where scenario_id = (select id from scenarios where name = $1)";
        let row: Option<(String, Option<i64>, i64)> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(scenario).fetch_optional(pool).await?);
        Ok(row.map(|(holder, taken_at, expires_at)| Lease {
            holder,
            taken_at: taken_at.map(from_millis),
            expires_at: from_millis(expires_at),
        }))
    }

    /// Gives the lease on `scenario` back, if `holder` still holds it.
    pub async fn release_lease(&self, scenario: &str, holder: &str) -> Result<(), StoreError> {
        let delete = "delete from scenario_leases where holder = $2 \
                      and scenario_id = (select id from scenarios where name = $1)";
        retry_busy(|| async move {
            on_pool!(self, |pool| sqlx::query(delete)
                .bind(scenario)
                .bind(storable(holder))
                .execute(pool)
                .await?
                .rows_affected());
            Ok(())
        })
        .await
    }
}
