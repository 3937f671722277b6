import Foundation
import Hummingbird
import ModgudService

/// A realm's recent sign-in failures (issue 43): the last hour, day or week, filterable by
/// client and kind, with a count per kind, for spotting an attack.
extension ConsoleController {
    static let failureWindows: [(value: String, label: String, seconds: TimeInterval)] = [
        ("hour", "last hour", 3_600), ("day", "last day", 86_400), ("week", "last week", 7 * 86_400),
    ]

    func registerFailures(on router: Router<ModgudRequestContext>) {
        router.get("console/realms/:realm/failures") { request, context in
            await page(request, context) { _ in
                let realm = context.parameters.get("realm") ?? ""
                guard try await admin.realms.get(realm).exists else { throw ConsoleRefusal.notFound("realm") }
                let query = request.uri.queryParameters
                let window = Self.failureWindows.first { $0.value == query.get("window") } ?? Self.failureWindows[0]
                let client = query.get("client").flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
                let kind = query.get("kind").flatMap(AuditQueries.FailureKind.init(rawValue:))
                // An address or the start of one ("203.0.113.", "2001:db8:"): the addresses are
                // sealed, so the filter runs on the opened ones of the window.
                let address = query.get("address").flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0.trimmingCharacters(in: .whitespaces) }
                let failures = try await admin.audit.signInFailures(
                    realm: realm, since: admin.now().addingTimeInterval(-window.seconds), client: client, kind: kind
                ).filter { failure in address.map { failure.address?.hasPrefix($0) == true } ?? true }
                var page = failuresPage(realm: realm, failures: failures, window: window.value, client: client, kind: kind)
                page.values["address"] = address ?? ""
                return page
            }
        }
    }

    private func failuresPage(realm: String, failures: [AuditQueries.SignInFailure], window: String, client: String?, kind: AuditQueries.FailureKind?)
        -> ConsolePage
    {
        let rows = failures.prefix(200).map { failure -> [String: Any] in
            [
                "time": ConsoleFormat.time(failure.recordedAt), "kind": failure.kind.label, "detail": failure.detail ?? "-", "client": failure.client ?? "-",
                "address": failure.address ?? "-", "device": UserAgentLabel.short(failure.userAgent), "userAgent": failure.userAgent ?? "",
            ]
        }
        let counts = AuditQueries.FailureKind.allCases.compactMap { each -> [String: Any]? in
            let count = failures.filter { $0.kind == each }.count
            return count == 0 ? nil : ["kind": each.label, "count": ConsoleFormat.count(count)]
        }
        let values: [String: Any] = [
            "realm": realm, "failures": rows, "counts": counts, "total": ConsoleFormat.count(failures.count), "client": client ?? "",
            "windows": Self.failureWindows.map { ["value": $0.value, "label": $0.label, "selected": $0.value == window] as [String: Any] },
            "kinds": AuditQueries.FailureKind.allCases.map { ["value": $0.rawValue, "label": $0.label, "selected": $0 == kind] as [String: Any] },
        ]
        return ConsolePage(
            template: "failures", title: "Sign-in failures in \(realm)", values: values, section: "realms",
            crumbs: [("Realms", "/console/realms"), (realm, "/console/realms/\(realm)")])
    }
}
