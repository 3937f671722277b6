import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// Administration shared by the CLI and the admin API: realms, clients, users, audit.
public struct AdminService: Sendable {
    public let core: ModgudCore

    public init(core: ModgudCore) {
        self.core = core
    }

    // MARK: Realms

    /// Creates a realm; with `signingAlgorithm`, its first signing key too (RS256 for a realm
    /// Auth0's SDKs verify: they read every JWKS key as RSA). Without the master key, asking
    /// for a key refuses before anything is written.
    public func createRealm(
        _ id: String, settings: RealmSettings, signingAlgorithm: SigningKeyMaterial.Algorithm? = nil, metadata: EventMetadata
    ) async throws -> Realm.State {
        if signingAlgorithm != nil, !core.keys.canRotate { throw SigningKeyRingError.noMasterKey }
        let actor = await core.realmActors.actor(for: StreamNames.realm(id))
        var state = try await Self.claimingHosts { try await actor.execute(.create(id: id, settings: settings), now: core.now(), metadata: metadata).state }
        if let signingAlgorithm {
            try await core.keys.rotate(realm: id, algorithm: signingAlgorithm, now: core.now(), metadata: metadata)
            state = try await actor.current().state
        }
        await core.settingsChanged(.realm(id))
        return state
    }

    /// Runs a realm command whose hosts another realm may hold: the lost race is the
    /// conflict `Realm.HostTaken` (the hosts' primary key decided it; nothing was written).
    static func claimingHosts<T>(_ command: () async throws -> T) async throws -> T {
        do {
            return try await command()
        } catch let taken where RealmTables.isHostTaken(taken) {
            throw DomainError.conflict("Realm.HostTaken", "A host of this realm belongs to another realm.")
        }
    }

    /// A new active signing key for the realm; earlier keys stay published until retired.
    /// - Returns: its key id.
    public func rotateSigningKey(realm: String, algorithm: SigningKeyMaterial.Algorithm, metadata: EventMetadata) async throws -> String {
        guard try await self.realm(realm).exists else { throw DomainError.notFound("Realm.NotFound", "No such realm.") }
        return try await core.keys.rotate(realm: realm, algorithm: algorithm, now: core.now(), metadata: metadata)
    }

    /// The time of this instance's clock (tests inject one).
    public func now() -> Date {
        core.now()
    }

    /// What a host serves in its app-association files.
    public func appAssociations(realm: RealmDirectory.Entry, host: String) async throws -> AppAssociations.HostApps {
        try await core.appAssociations(realm: realm, host: host)
    }

    /// Retires a rotated-out signing key (`SigningKeyRing.retire`); false when it was retired already.
    public func retireSigningKey(realm: String, kid: String, force: Bool, metadata: EventMetadata) async throws -> Bool {
        try await core.keys.retire(realm: realm, kid: kid, force: force, now: core.now(), metadata: metadata)
    }

    /// Changes a realm's settings; a `change` that throws writes nothing. Returns a warning when
    /// the primary domain changed: passkeys enrolled under the old one stop working through
    /// every client without an RP-ID of its own (docs/spec.md section 4).
    public func updateRealm(_ id: String, metadata: EventMetadata, change: (inout RealmSettings) throws -> Void) async throws
        -> (state: Realm.State, warning: String?)
    {
        let actor = await core.realmActors.actor(for: StreamNames.realm(id))
        // The change applies to the latest settings: a concurrent change of another member (on
        // any instance) is kept, not written over with what this one read (issue 40).
        let (state, settings, before) = try await Self.readModifyWrite { () async throws -> (Realm.State, RealmSettings, String?) in
            let read = try await actor.current()
            guard var settings = read.state.settings else { throw DomainError.notFound("Realm.NotFound", "No realm \(id).") }
            let before = settings.primaryDomain
            try change(&settings)
            let state = try await Self.claimingHosts {
                try await actor.execute(.changeSettings(settings), now: core.now(), metadata: metadata, onlyAtVersion: read.version).state
            }
            return (state, settings, before)
        }
        await core.settingsChanged(.realm(id))
        guard let before, before != settings.primaryDomain else { return (state, nil) }
        let enrolled = try await core.passkeys.count(realm: id, rpID: before)
        let affected = try await ClientsTable.clientsWithoutRPID(realm: id, pool: core.pool)
        let clients = affected.isEmpty ? "no client uses it" : "clients without an RP-ID of their own: " + affected.joined(separator: ", ")
        let warning =
            "The primary domain changed from \(before) to \(settings.primaryDomain ?? "(none)"): \(enrolled) passkey(s) enrolled under \(before) "
            + "will no longer sign in through the realm's default RP-ID (\(clients))."
        return (state, warning)
    }

    /// Every realm: id, hosts, whether native grants are on.
    public func realms() async throws -> [(id: String, hosts: [String], nativeGrants: Bool)] {
        try await RealmTables.list(pool: core.pool)
    }

    public func realm(_ id: String) async throws -> Realm.State {
        try await core.realmActors.actor(for: StreamNames.realm(id)).current().state
    }

    // MARK: Clients

    /// Registers a client; a confidential one gets a secret, returned once and stored hashed.
    public func createClient(realm: String, id: String, settings: ClientSettings, metadata: EventMetadata) async throws -> (Client.State, secret: String?)
    {
        guard try await self.realm(realm).exists else { throw DomainError.notFound("Realm.NotFound", "No realm \(realm).") }
        let secret = settings.type == .confidential ? ClientAuthenticator.generateSecret() : nil
        let state = try await core.clientActors.actor(for: StreamNames.client(realm: realm, clientID: id))
            .execute(.register(id: id, settings: settings, secretHash: secret?.hash), now: core.now(), metadata: metadata).state
        await core.settingsChanged(.client(realm: realm, id: id))
        return (state, secret?.secret)
    }

    /// Updates a client. Returns a warning when the RP-ID changed: passkeys enrolled under the
    /// old RP-ID stop working.
    public func updateClient(realm: String, id: String, metadata: EventMetadata, change: (inout ClientSettings) throws -> Void) async throws
        -> (Client.State, warning: String?)
    {
        let actor = await core.clientActors.actor(for: StreamNames.client(realm: realm, clientID: id))
        let realmSettings = try await self.realm(realm).settings ?? RealmSettings(hosts: [], displayName: realm)
        let (state, settings, before) = try await Self.readModifyWrite { () async throws -> (Client.State, ClientSettings, String?) in
            let read = try await actor.current()
            guard var settings = read.state.settings else { throw DomainError.notFound("Client.NotFound", "No client \(id).") }
            let before = PasskeyService.rpID(client: settings, realm: realmSettings)
            try change(&settings)
            let state = try await actor.execute(.update(settings), now: core.now(), metadata: metadata, onlyAtVersion: read.version).state
            return (state, settings, before)
        }
        await core.settingsChanged(.client(realm: realm, id: id))
        let after = PasskeyService.rpID(client: settings, realm: realmSettings)
        guard before != after else { return (state, nil) }
        var enrolled = 0
        if let before { enrolled = try await core.passkeys.count(realm: realm, rpID: before) }
        let warning =
            "The passkey RP-ID changed from \(before ?? "(none)") to \(after ?? "(none)"): \(enrolled) passkey(s) enrolled under "
            + "\(before ?? "the old RP-ID") will no longer sign in with this client."
        return (state, warning)
    }

    /// Runs a read-modify-write until it applies to the state it read (a few tries: each loss
    /// means another writer committed in between).
    private static func readModifyWrite<T>(_ attempt: () async throws -> T) async throws -> T {
        for _ in 0..<7 {
            do { return try await attempt() } catch is AggregateChangedMeanwhile { continue }
        }
        return try await attempt()
    }

    /// Gives a confidential client a new secret (returned once); the old one stops working at once.
    public func rotateClientSecret(realm: String, id: String, metadata: EventMetadata) async throws -> String {
        let (secret, hash) = ClientAuthenticator.generateSecret()
        _ = try await core.clientActors.actor(for: StreamNames.client(realm: realm, clientID: id))
            .execute(.rotateSecret(secretHash: hash), now: core.now(), metadata: metadata)
        await core.settingsChanged(.client(realm: realm, id: id))
        return secret
    }

    public func setClientEnabled(realm: String, id: String, enabled: Bool, metadata: EventMetadata) async throws -> Client.State {
        let state = try await core.clientActors.actor(for: StreamNames.client(realm: realm, clientID: id))
            .execute(enabled ? .enable : .disable, now: core.now(), metadata: metadata).state
        await core.settingsChanged(.client(realm: realm, id: id))
        return state
    }

    /// Deletes a client: it can no longer authenticate, its access tokens stop being live at
    /// once (introspection, userinfo), its refresh tokens are refused, and its id is retired.
    public func deleteClient(realm: String, id: String, metadata: EventMetadata) async throws {
        _ = try await core.clientActors.actor(for: StreamNames.client(realm: realm, clientID: id)).execute(.delete, now: core.now(), metadata: metadata)
        await core.settingsChanged(.client(realm: realm, id: id))
    }

    public func client(realm: String, id: String) async throws -> Client.State {
        try await core.clientActors.actor(for: StreamNames.client(realm: realm, clientID: id)).current().state
    }

    public func clients(realm: String) async throws -> [(id: String, type: String, enabled: Bool)] {
        try await ClientsTable.list(realm: realm, pool: core.pool)
    }

}
