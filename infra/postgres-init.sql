-- Run once by the postgres image on an empty data volume (compose.yaml mounts it into
-- /docker-entrypoint-initdb.d). POSTGRES_DB=swarmrl is the gateway's database; the
-- researcher's studies get their own.
CREATE DATABASE swarmrl_research OWNER swarmrl;
