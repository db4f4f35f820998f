# Sourced by .ci/run (and usable by developers: `source ci/postgres.sh && cargo test`).
# Makes sure the local PostgreSQL server the tests use is running, and exports DEGRADE_TEST_POSTGRES_URL.
# Each test creates its own database on that server and drops it, so the server is never left dirty.

: "${DEGRADE_TEST_POSTGRES_URL:=postgres://postgres@127.0.0.1:5432/test}"
export DEGRADE_TEST_POSTGRES_URL

postgres_is_up() {
    pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null
}

if ! postgres_is_up; then
    if ! command -v pg_ctlcluster >/dev/null; then
        echo "ci/postgres.sh: installing PostgreSQL (pg_ctlcluster not found)"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    echo "ci/postgres.sh: starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
    for _ in $(seq 1 30); do
        postgres_is_up && break
        sleep 1
    done
    # `return` when sourced (so a developer's shell survives), `exit` when run.
    postgres_is_up || { echo "ci/postgres.sh: PostgreSQL did not come up on 127.0.0.1:5432" >&2; return 2 2>/dev/null || exit 2; }
fi
