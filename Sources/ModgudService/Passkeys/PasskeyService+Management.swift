import Crypto
import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ
import WebAuthn

/// A user's passkeys: list, get, rename, delete (docs/spec.md section 4).
extension PasskeyService {

    /// GET /connect/passkey: the user's live passkeys, oldest first.
    /// - Parameter withCredentials: add each credential's facts (`Summary.credential`), read
    ///   from each passkey's history: only My Account shows them.
    public func list(realm: String, userID: UUID, withCredentials: Bool = false) async throws -> [Summary] {
        var summaries: [Summary] = []
        for row in try await passkeyTable.list(realm: realm, userID: userID) {
            if let summary = try await summary(row, realm: realm, withCredential: withCredentials) { summaries.append(summary) }
        }
        return summaries
    }

    /// GET /connect/passkey/{id}: one of the user's passkeys (nil for another user's: the
    /// caller answers 404, no cross-user existence oracle).
    public func get(realm: String, userID: UUID, passkeyID: UUID, withCredential: Bool = false) async throws -> Summary? {
        guard let row = try await passkeyTable.get(realm: realm, userID: userID, passkeyID: passkeyID) else { return nil }
        return try await summary(row, realm: realm, withCredential: withCredential)
    }

    /// PATCH /connect/passkey/{id}: renames one of the user's passkeys; nil when the user has
    /// no such passkey. - Throws: `ServiceRefusal` (invalid) `Passkey.InvalidName`.
    public func rename(
        realm: String, userID: UUID, passkeyID: UUID, to name: String, by actor: String, metadata: EventMetadata, withCredential: Bool = false
    ) async throws -> Summary? {
        let passkey = await passkeyActors.actor(for: StreamNames.passkey(realm: realm, passkeyID: passkeyID))
        let state = try await passkey.current().state
        guard state.isActive, state.enrolled?.userID == userID else { return nil }
        // The domain checks the plaintext and records it sealed; the current name is opened
        // here (the same name again writes nothing).
        let current = try await openName(state.displayName)
        let sealed = try await sealName(Passkey.validName(name) ?? name, userID: userID, realm: realm)
        do {
            _ = try await passkey.execute(.rename(name, sealed: sealed, current: current, by: actor), now: now(), metadata: metadata)
        } catch let refused as DomainError where refused.code == "Passkey.InvalidName" {
            throw ServiceRefusal.invalid(refused.code, refused.message)
        } catch is DomainError {
            return nil  // deleted meanwhile
        }
        return try await get(realm: realm, userID: userID, passkeyID: passkeyID, withCredential: withCredential)
    }

    /// The row, and with `withCredential` its credential's facts, which the passkey's own
    /// history holds (the read model keeps what lists and lookups need; the public key and
    /// flags are read per passkey, and only when asked).
    func summary(_ row: PasskeysTable.Row, realm: String, withCredential: Bool) async throws -> Summary? {
        let name = try await openName(PersonalText(stored: row.storedName)) ?? "[erased]"
        var credential: Summary.Credential?
        if withCredential {
            let state = try await passkeyActors.actor(for: StreamNames.passkey(realm: realm, passkeyID: row.passkeyID)).current().state
            guard state.isActive, let enrolled = state.enrolled else { return nil }  // deleted since the row was read
            credential = Summary.Credential(enrolled, backedUp: state.backedUp)
        }
        return Summary(
            id: row.passkeyID, displayName: name, rpID: row.rpID, createdAt: row.createdAt, lastUsedAt: row.lastUsedAt,
            provider: PasskeyProviders.provider(aaguid: row.aaguid), credential: credential)
    }

    /// A passkey's name sealed under its owner's data key (issue 22: users type names into it).
    func sealName(_ name: String, userID: UUID, realm: String) async throws -> PersonalText {
        guard let vault else { throw MasterKeyMissing() }
        return .sealed(try await vault.seal(name, subject: PersonalDataVault.userSubject(userID), realm: realm))
    }

    /// A stored name opened (legacy plaintext as it is); nil when the owner was erased.
    func openName(_ name: PersonalText?) async throws -> String? {
        guard case .sealed = name else { return name.map(\.stored) }
        guard let vault else { throw MasterKeyMissing() }
        return try await vault.open(name)
    }

    /// DELETE /connect/passkey/{id}: false when there is no such passkey *of this user*
    /// (the caller answers 404 either way: no cross-user existence oracle).
    public func delete(realm: String, userID: UUID?, passkeyID: UUID, by actor: String, metadata: EventMetadata) async throws -> Bool {
        let passkey = await passkeyActors.actor(for: StreamNames.passkey(realm: realm, passkeyID: passkeyID))
        let state = try await passkey.current().state
        guard state.isActive, let enrolled = state.enrolled, userID == nil || enrolled.userID == userID else { return false }
        do {
            _ = try await passkey.execute(.delete(by: actor), now: now(), metadata: metadata)
        } catch is DomainError {
            return false  // deleted meanwhile
        }
        return true
    }

    /// How many live passkeys are enrolled under `rpID` for a client change warning.
    public func count(realm: String, rpID: String) async throws -> Int {
        try await passkeyTable.count(realm: realm, rpID: rpID)
    }
}
