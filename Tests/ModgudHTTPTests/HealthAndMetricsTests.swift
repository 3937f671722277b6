import EventStorePostgres
import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 10: `/health/ready` for load balancers and `/metrics` for Prometheus.
final class HealthAndMetricsTests: XCTestCase {
    static let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    func testReadinessNamesEachCheckAndTurnsUnavailableWhileDraining() async throws {
        let database = try await TestDatabase.create(maxConnections: 4)
        let core = try ModgudCore(pool: database.pool, masterKey: nil)
        try await buildApplication(core: core).test(.router) { client in
            let ready = try await client.execute(uri: "/health/ready", method: .get)
            XCTAssertEqual(ready.status, .ok)
            let body = try JSONSerialization.jsonObject(with: Data(buffer: ready.body)) as! [String: Any]
            XCTAssertEqual(body["status"] as? String, "ready")
            XCTAssertEqual(
                body["checks"] as? [String: String], ["draining": "ok", "database": "ok", "migrations": "ok", "projections": "ok"])
            core.readiness.beginDrain()
            let draining = try await client.execute(uri: "/health/ready", method: .get)
            XCTAssertEqual(draining.status, .serviceUnavailable)
            XCTAssertTrue(String(buffer: draining.body).contains("draining"))
            let live = try await client.execute(uri: "/health/live", method: .get)
            XCTAssertEqual(live.status, .ok, "live stays 200: the process is healthy, only leaving")
        }
        await database.drop()
    }

    func testAPendingMigrationOrAStalledProjectionMakesTheInstanceUnready() async throws {
        let database = try await TestDatabase.create(maxConnections: 4)
        let probe = ReadinessProbe(pool: database.pool, stallAfter: .seconds(60), cacheFor: .zero)
        let healthy = await probe.check()
        XCTAssertTrue(healthy.ready, "\(healthy)")

        try await database.pool.query("DELETE FROM schema_migrations WHERE name = '0006_stream_age.sql'")
        let pending = await probe.check()
        XCTAssertFalse(pending.ready)
        XCTAssertEqual(pending.checks["migrations"], "pending: 0006_stream_age.sql")
        try await database.pool.query("INSERT INTO schema_migrations (name, checksum) VALUES ('0006_stream_age.sql', 'x')")

        // An event recorded two minutes ago that no daemon has applied: the asynchronous projections are stalled.
        let core = try ModgudCore(pool: database.pool, masterKey: nil)
        _ = try await core.administration.realms.create(
            "dev", settings: RealmSettings(hosts: ["localhost"], displayName: "Dev"), metadata: .init())
        let fresh = await probe.check()
        XCTAssertTrue(fresh.ready, "a new event is lag, not a stall: \(fresh)")
        try await database.pool.query("UPDATE events SET recorded_at = now() - interval '2 minutes'")
        let stalled = await probe.check()
        XCTAssertFalse(stalled.ready)
        XCTAssertEqual(stalled.checks["projections"], "stalled: log_statistics, user_sign_ins")
        try await ProjectionDaemon(pool: database.pool, projections: ProjectionCatalog.asynchronous).catchUp()
        let caughtUp = await probe.check()
        XCTAssertTrue(caughtUp.ready, "\(caughtUp)")
        await database.drop()
    }

    func testAScrapeShowsRequestsGrantsRejectionsAndTheBackgroundGauges() async throws {
        let registry = MetricsExposition.registry  // bootstrapped before the store makes its timer
        let database = try await TestDatabase.create(maxConnections: 8)
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 4, count: 32))
        let admin = core.administration
        _ = try await admin.realms.create(
            "dev",
            settings: RealmSettings(
                hosts: ["localhost"], displayName: "Dev", rateLimitOverrides: ["token.ip": .init(limit: 3, windowSeconds: 3600, burst: 3)]),
            metadata: .init())
        try await core.keys.rotate(realm: "dev", now: Date(), metadata: .init())
        let (_, secret) = try await admin.clients.create(
            realm: "dev", id: "svc", settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: ["api"]),
            metadata: .init())
        try await MetricsSampler(pool: database.pool, outbox: nil).sample()
        try await buildApplication(core: core, configuration: HTTPConfiguration(metrics: registry)).test(.router) { client in
            let grant = "grant_type=client_credentials&client_id=svc&client_secret=\(secret!)&scope=api"
            let ok = try await client.execute(uri: "/connect/token", method: .post, headers: Self.form, body: ByteBuffer(string: grant))
            XCTAssertEqual(ok.status, .ok)
            _ = try await client.execute(
                uri: "/connect/token", method: .post, headers: Self.form, body: ByteBuffer(string: "grant_type=password&client_id=svc"))
            _ = try await client.execute(uri: "/connect/token", method: .post, headers: Self.form, body: ByteBuffer(string: grant))
            let limited = try await client.execute(uri: "/connect/token", method: .post, headers: Self.form, body: ByteBuffer(string: grant))
            XCTAssertEqual(limited.status, .tooManyRequests)

            let scrape = try await client.execute(uri: "/metrics", method: .get)
            XCTAssertEqual(scrape.status, .ok)
            XCTAssertEqual(scrape.headers[.contentType], "text/plain; version=0.0.4; charset=utf-8")
            let text = String(buffer: scrape.body)
            for expected in [
                #"modgud_http_requests_total{method="POST",route="/connect/token",status="200"}"#,
                #"modgud_http_requests_total{method="POST",route="/connect/token",status="429"}"#,
                #"modgud_http_request_duration_seconds_bucket{method="POST",route="/connect/token",status="429",le="#,
                #"modgud_grants_total{grant_type="client_credentials",outcome="success"}"#,
                #"modgud_grants_total{grant_type="other",outcome="unsupported_grant_type"}"#,
                #"modgud_grants_total{grant_type="client_credentials",outcome="rate_limited"}"#,
                #"modgud_rate_limit_rejections_total{policy="token.ip"}"#,
                "modgud_event_append_seconds_bucket",
                #"modgud_projection_lag_events{projection="log_statistics"}"#,
                #"modgud_projection_parked_events{projection="log_statistics"}"#,
                #"modgud_db_pool_connections{state="open"}"#,
                #"modgud_db_pool_connections{state="in_use"}"#,
            ] {
                XCTAssertTrue(text.contains(expected), "missing \(expected)")
            }
            XCTAssertFalse(text.contains(secret!), "no secret in metrics")
        }
        await database.drop()
    }
}
