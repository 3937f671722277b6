import EventSourcing
import Foundation
import ModgudDomain

/// Operators' passkeys (issue 31): enrolled from the console by a signed-in operator, then a
/// usernameless sign-in as the console client, through the same passkey service an app uses.
/// The RP-ID is the console client's (`modgud console add-operator --rp-id`, the console's host).
extension OperatorConsole {
    /// Options for `navigator.credentials.get()` (a usernameless ceremony of the console client).
    public func beginPasskeySignIn(metadata: EventMetadata) async throws -> PasskeyService.Begun {
        return try await ServiceRefusal.translating {
            guard let realm = try await operatorRealm() else { throw PasskeyService.unconfigured }
            return try await passkeys.beginLogin(realm: realm, binding: FlowBinding(clientID: Self.clientID), metadata: metadata)
        }
    }

    /// Verifies the assertion (`PublicKeyCredential.toJSON()`); on success the new session's
    /// token. Throws `OAuthError` for a failed assertion and `NotAnOperator` without the role.
    public func passkeySignIn(ceremonyID: String, assertion: String, metadata: EventMetadata) async throws -> (token: String, session: Operator) {
        return try await ServiceRefusal.translating {
            guard let realm = try await operatorRealm() else { throw PasskeyService.unconfigured }
            let client = try await clients.authenticate(realm: realm.realmID, clientID: Self.clientID, secret: nil)
            let response = try await passkeys.redeem(
                client: client, ceremonyID: ceremonyID, assertion: assertion, Self.grant(client: client, realm: realm, metadata: metadata))
            return try await establish(response, realm: realm.realmID, metadata: metadata)
        }
    }

    /// Options for `navigator.credentials.create()` for the signed-in operator.
    public func beginPasskeyEnrollment(_ session: Operator, metadata: EventMetadata) async throws -> PasskeyService.Begun {
        return try await ServiceRefusal.translating {
            guard let realm = try await operatorRealm() else { throw PasskeyService.unconfigured }
            return try await passkeys.beginEnrollment(realm: realm, userID: session.userID, clientID: Self.clientID, metadata: metadata)
        }
    }

    /// Records the operator's new passkey from the attestation (`PublicKeyCredential.toJSON()`).
    public func completePasskeyEnrollment(_ session: Operator, ceremonyID: String, attestation: [UInt8], name: String?, metadata: EventMetadata)
        async throws -> PasskeyService.Summary
    {
        return try await ServiceRefusal.translating {
            guard let realm = try await operatorRealm() else { throw PasskeyService.unconfigured }
            return try await passkeys.completeEnrollment(
                realm: realm, userID: session.userID, clientID: Self.clientID, ceremonyID: ceremonyID, attestation: attestation, displayName: name,
                metadata: metadata)
        }
    }
}
