import Foundation
import ModgudService

/// The history page of an entity (issue 31): its events with their actors, `[erased]` where
/// the person's data was shredded, and whether the tamper-evident log's latest signed
/// checkpoint covers each event.
extension ConsoleController {
    func auditPage(realm: String, streams: [String], title: String, crumbs: [(String, String)]) async throws -> ConsolePage {
        try await auditPage(realm: realm, entries: try await admin.audit.history(realm: realm, streams: streams), title: title, crumbs: crumbs)
    }

    func auditPage(realm: String, entries: [AuditQueries.Entry], title: String, crumbs: [(String, String)]) async throws -> ConsolePage {
        let coverage = try await admin.audit.coverage(realm: realm)
        let operators = await operatorNames(Set(entries.compactMap(\.actor)))
        let rows = entries.reversed().map { entry -> [String: Any] in
            var detail = entry.detail
            if let client = entry.client { detail += (detail.isEmpty ? "" : " ") + "client=\(client)" }
            if let address = entry.clientIP { detail += (detail.isEmpty ? "" : " ") + "ip=\(address)" }
            if let agent = entry.userAgent { detail += (detail.isEmpty ? "" : " ") + "device=\(UserAgentLabel.short(agent))" }
            return [
                "time": ConsoleFormat.time(entry.recordedAt), "event": entry.event, "actor": entry.actor.map { operators[$0] ?? $0 } ?? "-",
                "actorID": entry.actor ?? "", "detail": detail,
                "checkpointed": coverage.map { entry.position <= $0.lastPosition } ?? false,
            ]
        }
        var values: [String: Any] = ["entries": rows]
        if let coverage { values["checkpoint"] = ["size": ConsoleFormat.count(Int(coverage.size)), "signedAt": ConsoleFormat.time(coverage.signedAt)] }
        return ConsolePage(template: "audit", title: title, values: values, section: "realms", crumbs: crumbs)
    }

    /// Operators' addresses for their actor ids (`operator:<realm>/<user id>`), so a history
    /// names the person (issue 43); an erased or unreadable operator keeps the id.
    private func operatorNames(_ actors: Set<String>) async -> [String: String] {
        var names: [String: String] = [:]
        for actor in actors where actor.hasPrefix("operator:") {
            let parts = actor.dropFirst("operator:".count).split(separator: "/", maxSplits: 1).map(String.init)
            guard parts.count == 2, let id = UUID(uuidString: parts[1]),
                let email = try? await admin.users.profile(realm: parts[0], userID: id).profile.email
            else { continue }
            names[actor] = "operator \(email)"
        }
        return names
    }
}
