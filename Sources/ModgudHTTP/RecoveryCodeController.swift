import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// A person's recovery codes (issue 46; docs/api.md, "Recovery codes"), with their own
/// access token (Bearer or DPoP, for the app or My Account):
/// - `POST /connect/recovery-codes`: a new set of ten, shown once in the answer; any earlier
///   set stops working. Needs a fresh sign-in, as enrolling a passkey does (RFC 9470's 401
///   `insufficient_user_authentication`, `max_age`).
/// - `GET /connect/recovery-codes`: how many are left (never a code).
/// - `DELETE /connect/recovery-codes`: the set stops working.
///
/// A recovery session's token is refused here (it can only enroll a passkey and manage sessions).
struct RecoveryCodeController: Sendable {
    let recoveryCodes: @Sendable () throws -> RecoveryCodeService
    let passkeys: PasskeyService
    let rateLimiter: RateLimiter
    let parsing: RequestParsing
    let resource: ProtectedResource

    /// The answer of a generation: the codes, once.
    struct GeneratedBody: Encodable {
        var codes: [String]
        var remaining: Int
        var setId: String
    }

    /// What is left of the current set.
    struct StatusBody: Encodable {
        var remaining: Int
        var setId: String?
    }

    static let path = "/connect/recovery-codes"

    func register(on router: Router<ModgudRequestContext>) {
        router.post(RouterPath(Self.path), use: generate)
        router.get(RouterPath(Self.path), use: status)
        router.delete(RouterPath(Self.path), use: revoke)
    }

    func generate(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            let (realm, caller) = try await authorized(request)
            // Ten slow hashes: limited per source with the redemptions (`recovery-code.ip`).
            try await rateLimiter.check(.recoveryPerIP, key: parsing.source(request, context: context), realm: realm.realmID, settings: realm.settings)
            try await passkeys.requireFreshSignIn(realm: realm, familyID: caller.familyID, scopes: caller.scopes)
            let codes = try await recoveryCodes().generate(
                realm: realm.realmID, userID: caller.userID, metadata: context.eventMetadata(actor: caller.userID))
            let status = try await recoveryCodes().status(realm: realm.realmID, userID: caller.userID)
            return OAuthResponses.json(
                GeneratedBody(codes: codes, remaining: codes.count, setId: status.setID?.uuidString.lowercased() ?? ""), status: .created)
        }
    }

    func status(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            let (realm, caller) = try await authorized(request)
            let status = try await recoveryCodes().status(realm: realm.realmID, userID: caller.userID)
            return OAuthResponses.json(StatusBody(remaining: status.remaining, setId: status.setID?.uuidString.lowercased()))
        }
    }

    func revoke(_ request: Request, context: ModgudRequestContext) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            let (realm, caller) = try await authorized(request)
            _ = try await recoveryCodes().revoke(realm: realm.realmID, userID: caller.userID, metadata: context.eventMetadata(actor: caller.userID))
            return Response(status: .noContent)
        }
    }

    /// The realm (native grants on) and the caller, as the passkey endpoints take them.
    private func authorized(_ request: Request) async throws -> (RealmDirectory.Entry, Caller) {
        let (realm, issuer) = try await parsing.realm(request)
        guard realm.settings.nativeGrants.enabled else { throw RequestParsing.Failure.response(ProblemEdge.nativeGrantsDisabled()) }
        return (realm, try await resource.accountCaller(request, realm: realm, issuer: issuer))
    }
}
