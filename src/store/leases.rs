//! Scenario leases: the database-side lock that keeps a scenario from running twice at once, also across
//! several `degrade serve` instances sharing one database.
//!
//! A lease is a row with a holder and an expiry, taken and renewed by one upsert that only succeeds when the
//! row is free, expired or already ours. It works the same on SQLite and PostgreSQL (an advisory lock would be
//! PostgreSQL-only and tied to one pooled connection), and a crashed holder frees the scenario when its lease
//! runs out instead of blocking it until someone intervenes.

use chrono::{DateTime, Utc};

use super::retry::retry_busy;
use super::{Store, StoreError, on_pool, to_millis};

impl Store {
    /// Takes (or renews) the lease on `scenario` for `holder` until `until`; `false` when another holder's
    /// lease is still current at `now`.
    pub async fn acquire_lease(
        &self,
        scenario: &str,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let scenario_id = self.ensure_scenario(scenario, now).await?;
        let upsert = "insert into scenario_leases (scenario_id, holder, expires_at) values ($1, $2, $3) \
                      on conflict (scenario_id) do update set holder = excluded.holder, expires_at = excluded.expires_at \
                      where scenario_leases.holder = excluded.holder or scenario_leases.expires_at <= $4";
        let taken = retry_busy(|| async move {
            Ok(on_pool!(self, |pool| sqlx::query(upsert)
                .bind(scenario_id)
                .bind(holder)
                .bind(to_millis(until))
                .bind(to_millis(now))
                .execute(pool)
                .await?
                .rows_affected()))
        })
        .await?;
        Ok(taken == 1)
    }

    /// Gives the lease on `scenario` back, if `holder` still holds it.
    pub async fn release_lease(&self, scenario: &str, holder: &str) -> Result<(), StoreError> {
        let delete = "delete from scenario_leases where holder = $2 \
                      and scenario_id = (select id from scenarios where name = $1)";
        retry_busy(|| async move {
            on_pool!(self, |pool| sqlx::query(delete).bind(scenario).bind(holder).execute(pool).await?.rows_affected());
            Ok(())
        })
        .await
    }
}
