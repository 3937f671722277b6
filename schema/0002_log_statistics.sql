-- 0002: log statistics, an asynchronous read model (events per realm and type).
-- Written by the projection daemon; `modgud projections rebuild log_statistics` rebuilds it.
CREATE TABLE log_statistics (
    realm   text   NOT NULL,
    type    text   NOT NULL,
    events  bigint NOT NULL,
    PRIMARY KEY (realm, type)
);
