import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// Realm administration for the CLI, the admin API and the console: realms, their settings
/// and their signing keys.
public struct RealmAdministration: Sendable {
    let realms: AggregateRegistry<Realm>
    let keys: SigningKeyRing
    let passkeys: PasskeyService
    /// Read by `RealmTables` and `ClientsTable`.
    let pool: PQPool
    let notifier: SettingsNotifier
    /// Seals an Apple provider's key (issue 48); nil without the master key.
    let sealer: KeySealer?
    let now: @Sendable () -> Date

    /// Creates a realm; with `signingAlgorithm`, its first signing key too (RS256 for a realm
    /// Auth0's SDKs verify: they read every JWKS key as RSA). Without the master key, asking
    /// for a key refuses before anything is written.
    public func create(
        _ id: String, settings: RealmSettings, signingAlgorithm: SigningKeyMaterial.Algorithm? = nil, metadata: EventMetadata
    ) async throws -> Realm.State {
        return try await ServiceRefusal.translating {
            if signingAlgorithm != nil, !keys.canRotate { throw SigningKeyRingError.noMasterKey }
            let actor = await realms.actor(for: StreamNames.realm(id))
            var state = try await Self.claimingHosts { try await actor.execute(.create(id: id, settings: settings), now: now(), metadata: metadata).state }
            if let signingAlgorithm {
                try await keys.rotate(realm: id, algorithm: signingAlgorithm, now: now(), metadata: metadata)
                state = try await actor.current().state
            }
            await notifier.changed(.realm(id))
            return state
        }
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
        return try await ServiceRefusal.translating {
            guard try await get(realm).exists else { throw DomainError.notFound("Realm.NotFound", "No such realm.") }
            return try await keys.rotate(realm: realm, algorithm: algorithm, now: now(), metadata: metadata)
        }
    }

    /// What a host serves in its app-association files.
    public func appAssociations(realm: RealmDirectory.Entry, host: String) async throws -> AppAssociations.HostApps {
        try await ServiceRefusal.translating {
            try await AppAssociations.apps(realm: realm, host: host, pool: pool)
        }
    }

    /// Retires a rotated-out signing key (`SigningKeyRing.retire`); false when it was retired already.
    public func retireSigningKey(realm: String, kid: String, force: Bool, metadata: EventMetadata) async throws -> Bool {
        try await ServiceRefusal.translating {
            try await keys.retire(realm: realm, kid: kid, force: force, now: now(), metadata: metadata)
        }
    }

    /// Changes a realm's settings; a `change` that throws writes nothing. Returns a warning when
    /// the primary domain changed: passkeys enrolled under the old one stop working through
    /// every client without an RP-ID of its own (docs/spec.md section 4).
    public func update(_ id: String, metadata: EventMetadata, change: (inout RealmSettings) throws -> Void) async throws
        -> (state: Realm.State, warning: String?)
    {
        return try await ServiceRefusal.translating {
            let actor = await realms.actor(for: StreamNames.realm(id))
            // The change applies to the latest settings: a concurrent change of another member (on
            // any instance) is kept, not written over with what this one read (issue 40).
            let (state, settings, before) = try await AdministrationRetry.readModifyWrite { () async throws -> (Realm.State, RealmSettings, String?) in
                let read = try await actor.current()
                guard var settings = read.state.settings else { throw DomainError.notFound("Realm.NotFound", "No realm \(id).") }
                let before = settings.primaryDomain
                try change(&settings)
                let state = try await Self.claimingHosts {
                    try await actor.execute(.changeSettings(settings), now: now(), metadata: metadata, onlyAtVersion: read.version).state
                }
                return (state, settings, before)
            }
            await notifier.changed(.realm(id))
            guard let before, before != settings.primaryDomain else { return (state, nil) }
            let enrolled = try await passkeys.count(realm: id, rpID: before)
            let affected = try await ClientsTable.clientsWithoutRPID(realm: id, pool: pool)
            let clients = affected.isEmpty ? "no client uses it" : "clients without an RP-ID of their own: " + affected.joined(separator: ", ")
            let warning =
                "The primary domain changed from \(before) to \(settings.primaryDomain ?? "(none)"): \(enrolled) passkey(s) enrolled under \(before) "
                + "will no longer sign in through the realm's default RP-ID (\(clients))."
            return (state, warning)
        }
    }

    /// Every realm: id, hosts, whether native grants are on.
    public func list() async throws -> [(id: String, hosts: [String], nativeGrants: Bool)] {
        try await ServiceRefusal.translating {
            try await RealmTables.list(pool: pool)
        }
    }

    public func get(_ id: String) async throws -> Realm.State {
        try await ServiceRefusal.translating {
            try await realms.actor(for: StreamNames.realm(id)).current().state
        }
    }
}
