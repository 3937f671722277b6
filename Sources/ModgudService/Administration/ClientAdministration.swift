import EventSourcing
import Foundation
import ModgudDomain
import PQ
import WebAuthn

/// Client administration for the CLI, the admin API and the console: registration, settings,
/// secrets, enabling and deletion.
public struct ClientAdministration: Sendable {
    let clients: AggregateRegistry<Client>
    let realms: AggregateRegistry<Realm>
    let passkeys: PasskeyService
    /// Read by `ClientsTable`.
    let pool: PQPool
    let notifier: SettingsNotifier
    /// Seals Play Integrity decryption keys; nil in a tool started without the master key.
    let sealer: KeySealer?
    let now: @Sendable () -> Date

    /// Registers a client; a confidential one gets a secret, returned once and stored hashed.
    /// A native grant while the realm's native grants are off is refused (`NativeGrantGate`).
    public func create(realm: String, id: String, settings: ClientSettings, metadata: EventMetadata) async throws -> (Client.State, secret: String?)
    {
        try await create(realm: realm, id: id, settings: settings, metadata: metadata, checkingNativeGrants: true)
    }

    /// `create`; without `checkingNativeGrants` only for the operator realm's console client
    /// (`OperatorConsole.addOperator`), whose email-code and passkey grants sign operators in to
    /// the console's own pages while that realm's native grants stay off at the token endpoint.
    func create(realm: String, id: String, settings: ClientSettings, metadata: EventMetadata, checkingNativeGrants: Bool) async throws
        -> (Client.State, secret: String?)
    {
        return try await ServiceRefusal.translating {
            let realmState = try await realms.actor(for: StreamNames.realm(realm)).current().state
            guard realmState.exists, let realmSettings = realmState.settings else { throw DomainError.notFound("Realm.NotFound", "No realm \(realm).") }
            if checkingNativeGrants { try NativeGrantGate.check(before: [], after: settings.grants, realm: realmSettings) }
            let secret = settings.type == .confidential ? ClientAuthenticator.generateSecret() : nil
            let state = try await clients.actor(for: StreamNames.client(realm: realm, clientID: id))
                .execute(.register(id: id, settings: settings, secretHash: secret?.hash), now: now(), metadata: metadata).state
            await notifier.changed(.client(realm: realm, id: id))
            return (state, secret?.secret)
        }
    }

    /// Updates a client. Returns a warning when the RP-ID changed: passkeys enrolled under the
    /// old RP-ID stop working. Gaining a native grant while the realm's native grants are off is
    /// refused; native grants already held stay, inert (`NativeGrantGate`).
    public func update(realm: String, id: String, metadata: EventMetadata, change: (inout ClientSettings) throws -> Void) async throws
        -> (Client.State, warning: String?)
    {
        return try await ServiceRefusal.translating {
            let actor = await clients.actor(for: StreamNames.client(realm: realm, clientID: id))
            let realmSettings = try await realms.actor(for: StreamNames.realm(realm)).current().state.settings ?? RealmSettings(hosts: [], displayName: realm)
            let (state, settings, before) = try await AdministrationRetry.readModifyWrite { () async throws -> (Client.State, ClientSettings, String?) in
                let read = try await actor.current()
                guard var settings = read.state.settings else { throw DomainError.notFound("Client.NotFound", "No client \(id).") }
                let before = PasskeyService.rpID(client: settings, realm: realmSettings)
                let heldGrants = settings.grants
                try change(&settings)
                // Issue 65, item 7: no new native grant while the realm's flag is off.
                try NativeGrantGate.check(before: heldGrants, after: settings.grants, realm: realmSettings)
                let state = try await actor.execute(.update(settings), now: now(), metadata: metadata, onlyAtVersion: read.version).state
                return (state, settings, before)
            }
            await notifier.changed(.client(realm: realm, id: id))
            let after = PasskeyService.rpID(client: settings, realm: realmSettings)
            guard before != after else { return (state, nil) }
            var enrolled = 0
            if let before { enrolled = try await passkeys.count(realm: realm, rpID: before) }
            let warning =
                "The passkey RP-ID changed from \(before ?? "(none)") to \(after ?? "(none)"): \(enrolled) passkey(s) enrolled under "
                + "\(before ?? "the old RP-ID") will no longer sign in with this client."
            return (state, warning)
        }
    }

    /// Gives a confidential client a new secret (returned once); the old one stops working at once.
    public func rotateSecret(realm: String, id: String, metadata: EventMetadata) async throws -> String {
        return try await ServiceRefusal.translating {
            let (secret, hash) = ClientAuthenticator.generateSecret()
            _ = try await clients.actor(for: StreamNames.client(realm: realm, clientID: id))
                .execute(.rotateSecret(secretHash: hash), now: now(), metadata: metadata)
            await notifier.changed(.client(realm: realm, id: id))
            return secret
        }
    }

    /// Sets the Play Console's keys for one of the client's Android apps (issue 47): both are
    /// checked by building the verifier that will use them, and the decryption key is sealed
    /// with the master key before it is written.
    public func setPlayIntegrityKeys(
        realm: String, id: String, packageName: String, decryptionKey: String, verificationKey: String, metadata: EventMetadata
    ) async throws -> Client.State {
        try await ServiceRefusal.translating {
            do {
                _ = try PlayIntegrityVerifier(decryptionKey: decryptionKey, verificationKey: verificationKey)
            } catch { throw DomainError("Client.InvalidPlayIntegrityKeys", "\(error)") }
            guard let sealer else { throw DomainError("Client.NoMasterKey", "Sealing a Play Integrity key needs the master key.") }
            let sealed = try sealer.seal(
                Array(Data(base64Encoded: decryptionKey) ?? Data()), realm: realm, kid: Self.playIntegrityKID(clientID: id, packageName: packageName))
            let keys = PlayIntegrityKeys(sealedDecryptionKey: Data(sealed).base64EncodedString(), verificationKey: verificationKey)
            let state = try await clients.actor(for: StreamNames.client(realm: realm, clientID: id))
                .execute(.setPlayIntegrityKeys(packageName: packageName, keys: keys), now: now(), metadata: metadata).state
            await notifier.changed(.client(realm: realm, id: id))
            return state
        }
    }

    /// Removes an app's Play Integrity keys: its verdicts are refused from then on.
    public func removePlayIntegrityKeys(realm: String, id: String, packageName: String, metadata: EventMetadata) async throws -> Client.State {
        try await ServiceRefusal.translating {
            let state = try await clients.actor(for: StreamNames.client(realm: realm, clientID: id))
                .execute(.removePlayIntegrityKeys(packageName: packageName), now: now(), metadata: metadata).state
            await notifier.changed(.client(realm: realm, id: id))
            return state
        }
    }

    /// The additional data a sealed Play Integrity decryption key is bound to.
    static func playIntegrityKID(clientID: String, packageName: String) -> String {
        "play-integrity/\(clientID)/\(packageName)"
    }

    public func setEnabled(realm: String, id: String, enabled: Bool, metadata: EventMetadata) async throws -> Client.State {
        return try await ServiceRefusal.translating {
            let state = try await clients.actor(for: StreamNames.client(realm: realm, clientID: id))
                .execute(enabled ? .enable : .disable, now: now(), metadata: metadata).state
            await notifier.changed(.client(realm: realm, id: id))
            return state
        }
    }

    /// Deletes a client: it can no longer authenticate, its access tokens stop being live at
    /// once (introspection, userinfo), its refresh tokens are refused, and its id is retired.
    public func delete(realm: String, id: String, metadata: EventMetadata) async throws {
        try await ServiceRefusal.translating {
            _ = try await clients.actor(for: StreamNames.client(realm: realm, clientID: id)).execute(.delete, now: now(), metadata: metadata)
            await notifier.changed(.client(realm: realm, id: id))
        }
    }

    public func get(realm: String, id: String) async throws -> Client.State {
        try await ServiceRefusal.translating {
            try await clients.actor(for: StreamNames.client(realm: realm, clientID: id)).current().state
        }
    }

    /// How many App Attest keys each client's app instances attested (issue 47).
    public func attestedKeys(realm: String) async throws -> [String: Int] {
        try await AppAttestKeysTable.counts(realm: realm, pool: pool)
    }

    /// Each client's attested, unattested and refused requests (issue 47), as every instance
    /// last flushed them (`ClientAttestationTally`).
    public func attestationCounts(realm: String) async throws -> [String: ClientAttestationTally.Counts] {
        try await ClientAttestationTally.counts(realm: realm, pool: pool)
    }

    /// The realm's clients whose native grants do nothing because the realm's native grants are
    /// off (issue 65, item 7), with those grants; empty while the flag is on.
    public func inertNativeGrants(realm: String) async throws -> [(id: String, grants: [GrantType])] {
        try await ServiceRefusal.translating {
            guard let settings = try await realms.actor(for: StreamNames.realm(realm)).current().state.settings, !settings.nativeGrants.enabled else {
                return []
            }
            return try await ClientsTable.nativeGrantHolders(realm: realm, pool: pool)
        }
    }

    public func list(realm: String) async throws -> [(id: String, type: String, enabled: Bool)] {
        try await ServiceRefusal.translating {
            try await ClientsTable.list(realm: realm, pool: pool)
        }
    }
}
