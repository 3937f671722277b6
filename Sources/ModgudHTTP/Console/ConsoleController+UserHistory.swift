import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// A user's history in the console (issue 43): filtered by kind and date, 100 events a page,
/// newest first, paged by keyset (the position of the oldest event shown).
extension ConsoleController {
    /// The filter's kinds and the event types each shows.
    static let historyKinds: [(value: String, label: String, types: [String])] = [
        ("failures", "sign-in failures and ended sessions", AuditQueries.failureEventTypes),
        ("sign-in", "codes, links and sign-ins", [
            "challenge.issued", "challenge.attempt_failed", "challenge.burned", "challenge.consumed", "token_family.started", "passkey.used",
        ]),
        ("sessions", "sessions", ["token_family.started", "token_family.refreshed", "token_family.revoked", "token_family.refresh_refused"]),
        ("account", "account changes", [
            "user.registered", "user.profile_changed", "user.email_confirmed", "user.totp_enabled", "user.totp_enrollment_started",
            "user.totp_step_accepted", "user.totp_disabled", "user.security_stamp_rotated", "user.disabled", "user.enabled", "user.deleted",
            "user.erased", "user.roles_changed", "user.recovery_codes_generated", "user.recovery_code_used", "user.recovery_codes_revoked",
            "user.identity_linked", "user.identity_unlinked", "operator.action_recorded",
        ]),
        ("passkeys", "passkeys", [
            "passkey.enrolled", "passkey.used", "passkey.renamed", "passkey.deleted", "passkey.clone_suspected", "passkey.assertion_failed",
        ]),
    ]

    static let historyPageSize = 100

    func userHistoryPage(_ request: Request, realm: String, id: UUID) async throws -> ConsolePage {
        let query = request.uri.queryParameters
        let kind = Self.historyKinds.first { $0.value == query.get("kind") }
        let since = query.get("since").flatMap(Self.day)
        let before = query.get("before").flatMap { Int64($0) }
        let window = AuditQueries.Window(types: kind?.types, since: since, before: before, limit: Self.historyPageSize)
        let entries = try await admin.audit.userHistory(realm: realm, userID: id, window: window)
        let user = id.uuidString.lowercased()
        var page = try await auditPage(
            realm: realm, entries: entries, title: "History of a user",
            crumbs: userCrumbs(realm) + [(user, "/console/realms/\(realm)/users/\(user)")])
        page.values["filter"] = [
            "action": "/console/realms/\(realm)/users/\(user)/audit", "since": query.get("since") ?? "",
            "kinds": Self.historyKinds.map { ["value": $0.value, "label": $0.label, "selected": $0.value == kind?.value] as [String: Any] },
        ]
        if entries.count == Self.historyPageSize, let oldest = entries.first?.position {
            var next = ["before=\(oldest)"]
            if let kind { next.append("kind=\(kind.value)") }
            if let day = query.get("since"), since != nil { next.append("since=\(day)") }
            page.values["older"] = "/console/realms/\(realm)/users/\(user)/audit?" + next.joined(separator: "&")
        }
        return page
    }

    /// `yyyy-mm-dd` as the start of that UTC day.
    static func day(_ text: String) -> Date? {
        let parts = text.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3, text.count == 10 else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2]))
    }
}
