import Foundation
import JWTKit
import ModgudDomain

/// Signs the SETs of the outbox at delivery time (issue 30): the subject in the stream's
/// format, read now, so that a user erased while a SET waited is named by `iss_sub` only, and
/// profile claims only for receivers allowed the `profile` scope.
struct SignalSETIssuer: Sendable {
    let keys: SigningKeyRing
    let users: AggregateRegistry<User>
    let vault: PersonalDataVault?
    let clients: ClientAuthenticator

    /// The signed SET, or nil when it is not for this receiver (it is then dropped): a
    /// receiver client that is disabled or deleted gets nothing.
    func token(for row: SignalOutboxRow, stream: SignalStreamRow) async throws -> String? {
        guard let settings = try await clients.enabledClient(realm: stream.realm, clientID: stream.clientID) else { return nil }
        var user: JWTHeaderField?
        var profileClaims: [String: JWTHeaderField]?
        if let userID = row.userID {
            let issSub: JWTHeaderField = .object([
                "format": .string("iss_sub"), "iss": .string(stream.issuer), "sub": .string(userID.uuidString.lowercased()),
            ])
            user = issSub
            let wantsEmail = stream.format == SignalSubjectFormat.email.rawValue && settings.allowedScopes.contains("email")
            let wantsProfile = row.event == SignalEvent.tokenClaimsChange.rawValue && settings.allowedScopes.contains("profile")
            if wantsEmail || wantsProfile {
                let state = try await users.actor(for: StreamNames.user(realm: stream.realm, userID: userID)).current().state
                let profile = state.status == .erased ? nil : try await vault.profile(of: state)
                if wantsEmail, let email = profile?.email { user = .object(["format": .string("email"), "email": .string(email)]) }
                if wantsProfile, let profile {
                    profileClaims = [
                        "preferred_username": profile.username.map { .string($0) } ?? .null,
                        "given_name": profile.firstName.map { .string($0) } ?? .null,
                        "family_name": profile.lastName.map { .string($0) } ?? .null,
                    ]
                }
            }
        }
        guard let claims = SecurityEventToken.claims(row, stream: stream, user: user, profileClaims: profileClaims) else { return nil }
        return try await keys.signSecurityEvent(claims, realm: stream.realm)
    }
}
