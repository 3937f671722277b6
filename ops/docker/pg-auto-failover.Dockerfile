# PostgreSQL 15 with pg_auto_failover, for docker-compose.yml's `ha` profile (issue 26): the
# same engine and packages ops/ha runs on loopback. The official image already carries the
# PostgreSQL apt repository, which ships both packages.
FROM postgres:15-bookworm
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15-auto-failover pg-auto-failover-cli \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres /var/lib/postgresql/pgaf
# Everything pg_autoctl keeps (data, its configuration and state files) lives in the volume,
# so `pg_autoctl create … --run` finds its node again after the container is recreated.
ENV PGDATA=/var/lib/postgresql/pgaf/data \
    XDG_CONFIG_HOME=/var/lib/postgresql/pgaf/config \
    XDG_DATA_HOME=/var/lib/postgresql/pgaf/share \
    PATH=/usr/lib/postgresql/15/bin:$PATH
USER postgres
WORKDIR /var/lib/postgresql
