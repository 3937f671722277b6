import EventStorePostgres
import Foundation
import Hummingbird
import ModgudService

/// Health, projections, mail and Shared Signals: the operations pages (issue 31).
extension ConsoleController {
    func registerOperations(on router: Router<ModgudRequestContext>) {
        router.get("console") { request, context in await page(request, context) { _ in try await health() } }
        router.get("console/projections") { request, context in
            await page(request, context) { _ in
                let rows = try await projectionRows()
                return ConsolePage(
                    template: "projections", title: "Projections", values: ["projections": rows, "rebuilding": rows.contains { $0["progress"] != nil }],
                    section: "projections")
            }
        }
        // The table alone, for the page's htmx poll while a rebuild runs here.
        router.get("console/projections/table") { request, context in
            await page(request, context) { _ in
                ConsolePage(template: "projections-table", title: "Projections", values: ["projections": try await projectionRows()])
            }
        }
        router.post("console/projections/:name/rebuild") { request, context in
            await action(request, context) { session, _ in
                let name = context.parameters.get("name") ?? ""
                guard let projection = ProjectionCatalog.named(name) else { throw ConsoleRefusal.notFound("projection") }
                let pool = admin.core.pool
                let logger = context.logger
                let actor = session.actor
                try await console.record("projection.rebuild", target: name, by: session, metadata: metadata(session, context))
                let started = rebuilds.start(name) { report in
                    logger.info("console rebuild started", metadata: ["projection": "\(name)", "operator": "\(actor)"])
                    _ = try await ProjectionRebuilder(pool: pool).rebuild(projection) { report($0.applied, $0.total) }
                }
                return ConsoleResponse.redirect("/console/projections" + (started ? "" : "?busy=1"))
            }
        }
        router.get("console/mail") { request, context in await page(request, context) { _ in try await mail() } }
        router.post("console/mail/retry") { request, context in
            await action(request, context) { session, _ in
                try await console.record("mail.retry-dead", target: "outbox", by: session, metadata: metadata(session, context))
                _ = try await mailOutbox().retryDead()
                return ConsoleResponse.redirect("/console/mail")
            }
        }
        router.get("console/signals") { request, context in
            await page(request, context) { _ in
                let streams = try await SignalOutbox(pool: admin.core.pool).streams().map { stream -> [String: Any] in
                    [
                        "realm": stream.realm, "clientID": stream.clientID, "streamID": stream.streamID, "method": stream.method, "status": stream.status,
                        "pending": ConsoleFormat.count(stream.pending), "dead": ConsoleFormat.count(stream.dead), "hasDead": stream.dead > 0,
                    ]
                }
                return ConsolePage(template: "signals", title: "Shared Signals", values: ["streams": streams], section: "signals")
            }
        }
        router.post("console/signals/:stream/retry") { request, context in
            await action(request, context) { session, _ in
                let stream = context.parameters.get("stream") ?? ""
                try await console.record("ssf.retry-dead", target: stream, by: session, metadata: metadata(session, context))
                _ = try await SignalOutbox(pool: admin.core.pool).retryDead(streamID: stream)
                return ConsoleResponse.redirect("/console/signals")
            }
        }
    }

    private func health() async throws -> ConsolePage {
        let report = await admin.core.readiness.check()
        let checks = report.checks.sorted { $0.key < $1.key }.map { ["name": $0.key, "result": $0.value, "ok": $0.value == "ok"] as [String: Any] }
        let counts = try await mailOutbox().counts()
        let streams = try await SignalOutbox(pool: admin.core.pool).streams()
        let stats: [[String: String]] = [
            ["label": "realms", "value": ConsoleFormat.count(try await admin.realms().count)],
            ["label": "mails waiting", "value": ConsoleFormat.count(counts.pending)],
            ["label": "dead letters", "value": ConsoleFormat.count(counts.dead)],
            ["label": "signal streams", "value": ConsoleFormat.count(streams.count)],
            ["label": "SETs waiting", "value": ConsoleFormat.count(streams.reduce(0) { $0 + $1.pending })],
        ]
        return ConsolePage(
            template: "health", title: "Health", values: ["ready": report.ready, "checks": checks, "stats": stats, "projections": try await projectionRows()],
            section: "health")
    }

    private func projectionRows() async throws -> [[String: Any]] {
        var rows: [[String: Any]] = []
        for projection in ProjectionCatalog.all {
            let status = try await ProjectionStatus.read(projection, pool: admin.core.pool)
            var row: [String: Any] = [
                "name": status.name, "mode": status.mode.rawValue,
                "checkpoint": status.mode == .inline ? "inline" : status.checkpoint?.description ?? "start",
                "applied": ConsoleFormat.count(status.applied), "lag": ConsoleFormat.count(status.lag), "failing": ConsoleFormat.count(status.failing),
                "isFailing": status.failing > 0, "parked": ConsoleFormat.count(status.parked),
            ]
            if let progress = rebuilds.progress(status.name) {
                if !progress.finished {
                    let label = progress.total > 0 ? "\(ConsoleFormat.count(progress.done)) of \(ConsoleFormat.count(progress.total))" : "starting"
                    row["progress"] = ["done": progress.done, "total": max(progress.total, 1), "label": label]
                } else if let failure = progress.failure {
                    row["failing"] = "rebuild failed: \(failure)"
                }
            }
            rows.append(row)
        }
        return rows
    }

    private func mail() async throws -> ConsolePage {
        let outbox = try mailOutbox()
        let counts = try await outbox.counts()
        let entries = try await outbox.entries(limit: 100).map { entry -> [String: Any] in
            [
                "created": ConsoleFormat.time(entry.createdAt), "realm": entry.realm, "status": entry.status, "isDead": entry.status == "dead",
                "attempts": entry.attempts, "lastError": entry.lastError ?? "",
            ]
        }
        return ConsolePage(
            template: "mail", title: "Mail",
            values: ["pending": ConsoleFormat.count(counts.pending), "dead": ConsoleFormat.count(counts.dead), "hasDead": counts.dead > 0, "entries": entries],
            section: "mail")
    }

    private func mailOutbox() throws -> MailOutbox {
        guard let secrets = admin.core.secrets else { throw ConsoleRefusal(status: .serviceUnavailable, message: "This server runs without MODGUD_MASTER_KEY.") }
        return MailOutbox(pool: admin.core.pool, secrets: secrets, vault: admin.core.vault)
    }
}
