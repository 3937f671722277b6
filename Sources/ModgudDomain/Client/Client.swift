import Foundation

/// An OAuth client of a realm.
public enum Client: Aggregate {
    public static let streamType = "client"

    public struct State: Sendable, Equatable {
        public var id: String?
        public var settings: ClientSettings?
        public var secretHash: String?
        public var enabled = true
        /// Deleted clients stay deleted: the id is retired, so old tokens can never revive.
        public var deleted = false
        /// Play Integrity keys by Android package (issue 47).
        public var playIntegrity: [String: PlayIntegrityKeys] = [:]

        public var exists: Bool { id != nil && !deleted }
    }

    public enum Command: Sendable {
        /// `secretHash` is required for confidential clients and refused for public ones.
        case register(id: String, settings: ClientSettings, secretHash: String?)
        case update(ClientSettings)
        case disable
        case enable
        case rotateSecret(secretHash: String)
        case delete
        /// The package must be one of the client's Android apps.
        case setPlayIntegrityKeys(packageName: String, keys: PlayIntegrityKeys)
        case removePlayIntegrityKeys(packageName: String)
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [ClientEvent] {
        switch command {
        case .register(let id, let settings, let secretHash):
            guard !state.exists else { throw DomainError.conflict("Client.AlreadyExists", "Client \(id) already exists.") }
            guard !state.deleted else { throw DomainError("Client.Deleted", "Client id \(id) belonged to a deleted client; choose another.") }
            guard (1...128).contains(id.count), id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
                throw DomainError("Client.InvalidID", "A client id is 1 to 128 letters, digits, '-', '_' or '.'.")
            }
            try settings.validate()
            try checkSecret(type: settings.type, secretHash: secretHash)
            return [.registered(ClientRegistered(clientID: id, settings: settings, secretHash: secretHash))]
        case .update(let settings):
            guard let current = state.settings, state.exists else { throw DomainError.notFound("Client.NotFound", "No such client.") }
            try settings.validate()
            guard settings.type == current.type else {
                throw DomainError("Client.TypeChange", "A client's type cannot change; register a new client.")
            }
            guard settings != current else { return [] }
            return [.updated(ClientUpdated(settings: settings, previousRPID: current.rpID))]
        case .disable:
            guard state.exists else { throw DomainError.notFound("Client.NotFound", "No such client.") }
            return state.enabled ? [.disabled(ClientDisabled())] : []
        case .enable:
            guard state.exists else { throw DomainError.notFound("Client.NotFound", "No such client.") }
            return state.enabled ? [] : [.enabled(ClientEnabled())]
        case .delete:
            guard state.exists else { throw DomainError.notFound("Client.NotFound", "No such client.") }
            return [.deleted(ClientDeleted())]
        case .rotateSecret(let secretHash):
            guard let settings = state.settings, state.exists else { throw DomainError.notFound("Client.NotFound", "No such client.") }
            try checkSecret(type: settings.type, secretHash: secretHash)
            return [.secretRotated(ClientSecretRotated(secretHash: secretHash))]
        case .setPlayIntegrityKeys(let packageName, let keys):
            guard let settings = state.settings, state.exists else { throw DomainError.notFound("Client.NotFound", "No such client.") }
            guard settings.androidApps.contains(where: { $0.packageName == packageName }) else {
                throw DomainError("Client.UnknownAndroidPackage", "\(packageName) is not one of the client's Android apps; add it first.")
            }
            guard state.playIntegrity[packageName] != keys else { return [] }
            return [.playIntegrityKeysSet(ClientPlayIntegrityKeysSet(packageName: packageName, keys: keys))]
        case .removePlayIntegrityKeys(let packageName):
            guard state.exists else { throw DomainError.notFound("Client.NotFound", "No such client.") }
            guard state.playIntegrity[packageName] != nil else { return [] }
            return [.playIntegrityKeysRemoved(ClientPlayIntegrityKeysRemoved(packageName: packageName))]
        }
    }

    private static func checkSecret(type: ClientType, secretHash: String?) throws(DomainError) {
        switch (type, secretHash) {
        case (.confidential, nil): throw DomainError("Client.SecretRequired", "A confidential client needs a secret.")
        case (.public, .some): throw DomainError("Client.PublicSecret", "A public client has no secret.")
        default: return
        }
    }

    public static func evolve(_ state: State, _ event: ClientEvent) -> State {
        var next = state
        switch event {
        case .registered(let registered):
            next.id = registered.clientID
            next.settings = registered.settings
            next.secretHash = registered.secretHash
        case .updated(let updated): next.settings = updated.settings
        case .disabled: next.enabled = false
        case .enabled: next.enabled = true
        case .secretRotated(let rotated): next.secretHash = rotated.secretHash
        case .deleted: next.deleted = true
        case .playIntegrityKeysSet(let set): next.playIntegrity[set.packageName] = set.keys
        case .playIntegrityKeysRemoved(let removed): next.playIntegrity[removed.packageName] = nil
        }
        return next
    }
}
