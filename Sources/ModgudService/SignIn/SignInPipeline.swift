import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain

/// The one step after a proof of identity (issue 68). Every factor (`SignInFactor`) proves who
/// the person is; this type does the rest, once, for all of them:
///
/// 1. `checkRequest`: the request's scopes and audiences are the client's, before any proof is
///    read (a bad request spends no attempt);
/// 2. `gate`: the account's status and the second factor the factor asks (RFC 6238 TOTP);
/// 3. `prepare`: the scopes and audiences granted (`ScopePolicy`, the guides' policy) and the
///    minted tokens, with the factor's methods (RFC 8176) and acr checked (RFC 9470 section 4);
/// 4. `writes`: what commits with the consumed proof, in its one append: the spent TOTP step
///    and the token family. The factor appends them with its own command, so the store decides
///    single use of the proof and of the step together.
///
/// docs/architecture.md, "One sign-in pipeline", traces it for each factor.
struct SignInPipeline: Sendable {
    let tokens: TokenService
    /// The TOTP check; nil in a service whose factors ask none (passkeys, devices).
    let secondFactor: SecondFactor?

    /// A disabled, deleted or erased account.
    static let accountCannotSignIn = OAuthError.invalidGrant("The account cannot sign in.")

    /// Step 1: scope and audience problems are the client's, whatever the proof: checked first,
    /// so a bad request does not spend an attempt (RFC 6749 section 5.2 `invalid_scope`, RFC
    /// 8707 section 2 `invalid_target`).
    static func checkRequest(_ grant: UserGrantRequest) throws {
        _ = try ScopePolicy.grantedScopes(requested: grant.scope, client: grant.client.settings)
        _ = try ScopePolicy.audiences(resources: grant.resources, client: grant.client.settings, clientID: grant.client.id)
    }

    /// Step 2: the gate of a known user as loaded (state and stream version). Only a complete
    /// sign-in opens it; a missing or wrong second factor closes it, so the proof is not spent
    /// (issue 40).
    func gate(_ factor: SignInFactor, user: User.State, version: Int64, grant: UserGrantRequest) throws -> AccountGate {
        var account = AccountGate(user: user, userVersion: version)
        guard user.id != nil, user.canSignIn else {
            account.gate = .accountCannotSignIn
            return account
        }
        guard factor.asksSecondFactor else { return account }
        guard let secondFactor else { throw MasterKeyMissing() }
        switch try secondFactor.check(grant.totpCode, user: user, realm: grant.client.realm) {
        case .notRequired: break
        case .missing: account.gate = .secondFactorMissing
        case .wrong: account.gate = .secondFactorWrong
        case .valid(let step): account.totpStep = step
        }
        return account
    }

    /// Step 3: the tokens, minted before the proof is consumed; their family commits with it
    /// (`writes`), and a refused proof discards them unsent. nil when the gate is shut.
    func prepare(_ factor: SignInFactor, _ account: AccountGate, _ grant: UserGrantRequest) async throws -> PreparedSignIn? {
        guard account.gate == .open, let user = account.user else { return nil }
        if factor.kind == .recoveryCode {
            return try await tokens.prepareRecoverySession(client: grant.client, user: user, issuer: grant.issuer, dpopKey: grant.dpopKey)
        }
        var signIn = try await tokens.prepareSignIn(
            client: grant.client, user: user, grantType: factor.kind.grantType, scope: grant.scope, resources: grant.resources,
            amr: factor.methods(secondFactor: account.totpStep != nil), issuer: grant.issuer, nonce: grant.nonce, dpopKey: grant.dpopKey,
            acrValues: grant.acrValues, joining: factor.joining, authTime: factor.authTime)
        signIn.started.federation = factor.federation
        return signIn
    }

    /// Steps 2 and 3 for a proof whose command does not weigh the gate: a shut gate refuses.
    func prepareOpen(_ factor: SignInFactor, _ account: AccountGate, _ grant: UserGrantRequest) async throws -> PreparedSignIn {
        try account.requireOpen()
        guard let signIn = try await prepare(factor, account, grant) else { throw Self.accountCannotSignIn }
        return signIn
    }

    /// Step 4: what commits with the consumed proof: the spent TOTP step (at the version the
    /// gate was found at), then the token family (new). Nothing for a shut gate.
    static func writes(_ signIn: PreparedSignIn?, _ account: AccountGate, realm: String) throws -> [StreamWrite] {
        guard let signIn else { return [] }
        return [try account.spentStep(realm: realm), try signIn.write()].compactMap { $0 }
    }
}
