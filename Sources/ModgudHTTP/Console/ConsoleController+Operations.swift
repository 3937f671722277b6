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
                guard ProjectionCatalog.named(name) != nil else { throw ConsoleRefusal.notFound("projection") }
                try await console.record("projection.rebuild", target: name, by: session, metadata: metadata(session, context))
                context.logger.info("console rebuild asked", metadata: ["projection": "\(name)", "operator": "\(session.actor)"])
                let started = operations.startRebuild(name) ?? false
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
                let streams = try await operations.signals.streams().map { stream -> [String: Any] in
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
                _ = try await operations.signals.retryDead(streamID: stream)
                return ConsoleResponse.redirect("/console/signals")
            }
        }
    }

    private func health() async throws -> ConsolePage {
        let report = await operations.readiness()
        let checks = report.checks.sorted { $0.key < $1.key }.map { ["name": $0.key, "result": $0.value, "ok": $0.value == "ok"] as [String: Any] }
        let counts = try await mailOutbox().counts()
        let streams = try await operations.signals.streams()
        let stats: [[String: String]] = [
            ["label": "realms", "value": ConsoleFormat.count(try await admin.realms.list().count)],
            ["label": "mails waiting", "value": ConsoleFormat.count(counts.pending)],
            ["label": "dead letters", "value": ConsoleFormat.count(counts.dead)],
            ["label": "signal streams", "value": ConsoleFormat.count(streams.count)],
            ["label": "SETs waiting", "value": ConsoleFormat.count(streams.reduce(0) { $0 + $1.pending })],
        ]
        var values: [String: Any] = ["ready": report.ready, "checks": checks, "stats": stats, "projections": try await projectionRows()]
        if let cells = configuration.cells {
            values["hasCells"] = true
            values["cells"] = await cells().map { cell -> [String: Any] in
                [
                    "name": cell.name, "health": cell.health, "ok": cell.health == "primary", "held": cell.held.map { $0.joined(separator: ", ") } ?? "?",
                    "placed": cell.placed.joined(separator: ", "), "url": CellHealth.redacted(cell.databaseURL),
                ]
            }
        }
        return ConsolePage(template: "health", title: "Health", values: values, section: "health")
    }

    private func projectionRows() async throws -> [[String: Any]] {
        try await operations.projections().map { report in
            var row: [String: Any] = [
                "name": report.name, "mode": report.mode, "checkpoint": report.checkpoint, "applied": ConsoleFormat.count(report.applied),
                "lag": ConsoleFormat.count(report.lag), "failing": ConsoleFormat.count(report.failing), "isFailing": report.failing > 0,
                "parked": ConsoleFormat.count(report.parked),
            ]
            if let progress = report.rebuild {
                if !progress.finished {
                    let label = progress.total > 0 ? "\(ConsoleFormat.count(progress.done)) of \(ConsoleFormat.count(progress.total))" : "starting"
                    row["progress"] = ["done": progress.done, "total": max(progress.total, 1), "label": label]
                } else if let failure = progress.failure {
                    row["failing"] = "rebuild failed: \(failure)"
                }
            }
            return row
        }
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
        do {
            return try operations.mail()
        } catch {
            throw ConsoleRefusal(status: .serviceUnavailable, message: "This server runs without MODGUD_MASTER_KEY.")
        }
    }
}
